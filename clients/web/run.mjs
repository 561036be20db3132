// The web SDK drop-in test (docs/web-sdk.md): the official @powersync/web
// 2.4.0 in headless Chromium runs the drop-in scenario (../scenario) against
// the loopback service, with the SDK's own database and with oplite's
// (@oplite/powersync-web), on OPFS and on IndexedDB; each oplite run must
// agree with the SDK's own run on the same storage. Also: the adapter's
// contract beside the SDK's own database (page.mjs adapterChecks); a reload
// right after a sync, and a page closed mid-apply (browser.mjs lifecycle);
// an encryptionKey beside the SDK's own encrypted database
// (encryption-page.mjs);
// and tabs sharing one database, both databases (tabs-checks.mjs).
// --only tabs runs the tab checks alone, --only adoption the moves between
// the SDK's own storage and oplite's (adoption-page.mjs), --only scenario
// the drop-in scenario; --key K encrypts both databases in the scenario.
//
//   OPLITE_TEST_SERVER=target/release/oplite-test-server node run.mjs \
//     [--rows N] [--vfs opfs,idb] [--modes legacy,requests] [--cores bundled,oplite] [--scenario off] [--only tabs|adoption|scenario] [--key K]
//
// Needs wasm/pkg-powersync-web (scripts/build-wasm-package.sh) and Chromium
// (OPLITE_CHROMIUM, default /usr/bin/chromium). Ends with `N passed, M failed`.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { checklist } from '../scenario/checks.mjs';
import { agreementSummary, compareRuns, sameValue } from '../scenario/compare.mjs';
import { ADAPTER_PACKAGE, buildPage, launchBrowser, runInBrowser } from './browser.mjs';
import { sdkControlCalls } from './sdk-sql.mjs';
import { tabChecks } from './tabs-checks.mjs';

const { CONTROL_CALL } = await import(path.join(ADAPTER_PACKAGE, 'sql-shapes.js'));

const { values: opts } = parseArgs({
  options: {
    rows: { type: 'string', default: process.env.OPLITE_WEB_ROWS ?? '100000' },
    vfs: { type: 'string', default: 'opfs,idb' },
    modes: { type: 'string', default: 'legacy,requests' },
    cores: { type: 'string', default: 'bundled,oplite' },
    // off: all but the drop-in scenario.
    scenario: { type: 'string', default: 'on' },
    only: { type: 'string', default: 'all' },
    // The drop-in scenario with both databases encrypted with this key.
    key: { type: 'string' },
    'encrypted-rows': { type: 'string', default: '20000' },
  },
});
const rows = Number(opts.rows);
const server = process.env.OPLITE_TEST_SERVER;
if (!server) {
  console.error('set OPLITE_TEST_SERVER (the oplite-test-server binary)');
  process.exit(2);
}
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'oplite-web-'));
const checks = checklist();
const check = checks.check;

// The adapter steps a checkpoint's apply at the SDK's powersync_control
// call, which it recognises by CONTROL_CALL: every SQL statement of the
// installed SDK that calls powersync_control must match it, or the apply
// would silently stop being stepped after an SDK update.
check('every powersync_control call in the installed @powersync packages is one the adapter recognises', sdkControlCalls().filter((sql) => !CONTROL_CALL.test(sql)));

// The SDK's own database writes and queues uploads; oplite adopts the file
// (a wrong key first refused, changing nothing), writes, and hands it back;
// the SDK's own reads everything back (adoption-page.mjs).
async function adoptionCheck(browser, vfs, key) {
  const got = await browser.adoptionChecks({ vfs, key });
  console.log(`  adoption (${vfs}${key ? ', encrypted' : ''}): ${JSON.stringify(got)}`);
  const clientId = got.sdkWrote?.clientId;
  const holds = (notes, oplite) => ({ notes: [...notes].sort(), queued: notes, clientId, oplite });
  const expected = {
    sdkWrote: holds(['one', 'two'], false),
    storedAfterSdk: ['sdk'],
    ...(vfs === 'opfs' ? { refusedWhileSdkOpen: true, sdkStillReads: ['one', 'two'], storedAfterRefusal: ['sdk'] } : {}),
    ...(key ? { wrongKeyRefused: true, storedAfterWrongKey: ['sdk'] } : {}),
    opliteRead: holds(['one', 'two', 'three'], true),
    storedAfterAdoption: ['oplite'],
    opliteReopened: holds(['one', 'two', 'three'], true),
    returned: { changed: true, coreVersion: 14 },
    storedAfterReturn: ['sdk'],
    sdkReadBack: holds(['one', 'two', 'three', 'four'], false),
  };
  const failures = [];
  if (typeof clientId !== 'string') failures.push('the SDK\'s own database gave no client id');
  for (const [step, want] of Object.entries(expected)) {
    if (!sameValue(got[step], want)) failures.push(`${step}: ${JSON.stringify(got[step])}, expected ${JSON.stringify(want)}`);
  }
  check(`${vfs}${key ? ', encrypted' : ''}: oplite adopts the database the SDK's own ${vfs === 'opfs' ? 'OPFSCoopSyncVFS' : 'IDBBatchAtomicVFS'} stored ` +
    `(rows, queued uploads, client id${key ? '; a wrong key refused first, changing nothing' : ''}${vfs === 'opfs' ? '; refused while the SDK\'s own has it open' : ''}) and removes that copy; ` +
    'returnToSdkDatabase hands it back and the SDK\'s own reads it all', failures);
}

// A crash image of the SDK's own OPFS file, with its hot journal: oplite
// adopts it rolled back (adoption-page.mjs).
async function hotJournalCheck(browser, key) {
  const got = await browser.hotJournalCheck({ key });
  console.log(`  hot journal${key ? ', encrypted' : ''}: ${JSON.stringify(got)}`);
  const failures = [];
  if (!sameValue(got.written?.notes, ['one', 'two'])) failures.push(`the SDK's own database wrote ${JSON.stringify(got.written)}`);
  const want = { ...got.written, oplite: true, integrity: 'ok' };
  if (!sameValue(got.adopted, want)) failures.push(`adopted: ${JSON.stringify(got.adopted)}, expected ${JSON.stringify(want)}`);
  if (!sameValue(got.storedAfter, ['oplite'])) failures.push(`stored after: ${JSON.stringify(got.storedAfter)}`);
  check(`opfs${key ? ', encrypted' : ''}: the SDK's own file left by a crash mid-transaction, with its hot journal, is adopted as it was before that transaction`, failures);
}

// A way back cut short while writing the SDK's copy: oplite keeps its own
// (adoption-page.mjs).
async function interruptedReturnCheck(browser) {
  const got = await browser.interruptedReturnCheck();
  console.log(`  interrupted return: ${JSON.stringify(got)}`);
  const failures = [];
  if (!sameValue(got.adopted?.notes, ['one', 'two']) || got.adopted?.oplite !== true) failures.push(`adopted: ${JSON.stringify(got.adopted)}`);
  if (!sameValue(got.storedBefore, ['sdk', 'oplite'])) failures.push(`before the open: ${JSON.stringify(got.storedBefore)}`);
  if (!sameValue(got.reopened, got.adopted)) failures.push(`reopened: ${JSON.stringify(got.reopened)}, expected ${JSON.stringify(got.adopted)}`);
  if (!sameValue(got.storedAfter, ['oplite']) || got.mark !== null) failures.push(`after the open: stored ${JSON.stringify(got.storedAfter)}, mark ${JSON.stringify(got.mark)}`);
  check("idb: a way back cut short while writing the SDK's copy: oplite's next open keeps its own copy whole and removes the torn one", failures);
}

// The drop-in scenario in `mode` on `vfs` with each database (encrypted
// with `encryptionKey` if given), compared with the SDK's own.
async function scenario(browser, { mode, vfs, rows, encryptionKey }) {
  const results = {};
  // On IndexedDB oplite also runs in the page, without a Worker (legacy mode).
  const runs = opts.cores.split(',').map((core) => ({ core, key: core }));
  if (vfs === 'idb' && mode === 'legacy' && opts.cores.includes('oplite')) runs.push({ core: 'oplite', key: 'inThread', inThread: true });
  for (const { core, key, inThread } of runs) {
    // Queries counting the synced rows run every 10 ms during the
    // initial sync: each must see all of its checkpoint or none.
    results[key] = await runInBrowser(browser, server, { core, vfs, inThread, mode, rows, raw: false, triggers: true, probeMs: 10, probeSql: 'count', encryptionKey });
    const r = results[key];
    r.key = key;
    if (r.failed) console.error(`the ${key} run on ${vfs} failed while ${r.step}: ${r.failed}`);
    else {
      const p = r.afterFirstSync;
      console.log(`${key} on ${vfs} (${mode}): initial sync ${r.timings.initialSyncMs} ms, whole run ${r.timings.totalMs} ms; ` +
        `${p.queries} queries during it, the longest waited ${p.longestWaitMs} ms` + (p.applySteps != null ? `; ${p.applySteps} apply steps, the longest ${p.longestStepMs} ms (${JSON.stringify(p.longestStep)})` : '') +
        (p.slowSteps?.length ? `; steps over 60 ms: ${JSON.stringify(p.slowSteps)}` : ''));
    }
  }
  const label = `${mode} mode, ${vfs}${encryptionKey ? ', both databases encrypted' : ''}`;
  if (Object.values(results).some((r) => r.failed)) {
    check(`${label}: every run completed`, Object.values(results).filter((r) => r.failed).map((r) => `${r.key}: ${r.failed} (while ${r.step})`));
    return;
  }
  const { bundled } = results;
  for (const key of ['oplite', 'inThread'].filter((k) => results[k]).concat(results.oplite || results.inThread ? [] : [null])) {
    const oplite = key && results[key];
    const { failures, reference } = compareRuns({ bundled, oplite, rows, mode, raw: false, browserTiming: true });
    if (oplite && !oplite.coreIsOplite) failures.push('the oplite run did not use oplite');
    for (const r of [bundled, oplite].filter(Boolean)) {
      const p = r.afterFirstSync;
      if (p.partialCounts.length > 0) failures.push(`${r.key}: queries during the initial sync saw part of its checkpoint: ${p.partialCounts.slice(0, 5).join(', ')} of ${p.rows} rows`);
      if (p.queries < 2) failures.push(`${r.key}: only ${p.queries} queries ran during the initial sync`);
    }
    if (oplite && rows >= 10000 && !(oplite.afterFirstSync.applySteps > 1)) failures.push(`${key} applied the initial sync in ${oplite.afterFirstSync.applySteps} steps`);
    if (oplite && oplite.afterFirstSync.unsteppedControlCalls !== 0) failures.push(`${key}: ${oplite.afterFirstSync.unsteppedControlCalls} powersync_control calls the adapter did not recognise`);
    const which = key === 'inThread' ? 'oplite in the page (no Worker)' : 'oplite';
    check(oplite ? agreementSummary(`${label}, SDK database against ${which}`, reference, false) : `${label}: the SDK's own database alone`, failures);
  }
}

const page = await buildPage(work);
const browser = await launchBrowser(page);
try {
  const onlyTabs = opts.only === 'tabs';
  const onlyAdoption = opts.only === 'adoption';
  const onlyScenario = opts.only === 'scenario';
  const scenarioRuns = opts.scenario !== 'off' && (opts.only === 'all' || opts.only === 'scenario');
  if (scenarioRuns) {
    for (const mode of opts.modes.split(',')) {
      for (const vfs of opts.vfs.split(',')) await scenario(browser, { mode, vfs, rows, encryptionKey: opts.key });
    }
    // Both databases encrypted, in a smaller run (--encrypted-rows 0: none).
    const encryptedRows = Math.min(rows, Number(opts['encrypted-rows']));
    if (opts.key == null && encryptedRows > 0) {
      for (const vfs of opts.vfs.split(',')) await scenario(browser, { mode: 'legacy', vfs, rows: encryptedRows, encryptionKey: 'correct horse' });
    }
  }
  if (opts.cores.includes('oplite') && !onlyTabs && !onlyAdoption && !onlyScenario) {
    const checks = opts.vfs.split(',').map((vfs) => ({ vfs })).concat(opts.vfs.includes('idb') ? [{ vfs: 'idb', inThread: true }] : []);
    for (const { vfs, inThread } of checks) {
      const bundled = await browser.adapterChecks({ core: 'bundled', vfs });
      const oplite = await browser.adapterChecks({ core: 'oplite', vfs, inThread });
      const failures = [];
      if (bundled.failed || oplite.failed) failures.push(`failed: SDK's own ${bundled.failed ?? 'no'}; oplite ${oplite.failed ?? 'no'}`);
      for (const key of new Set([...Object.keys(bundled), ...Object.keys(oplite)].filter((k) => k !== 'notCompared'))) {
        if (!sameValue(bundled[key], oplite[key])) failures.push(`${key}: SDK's own ${JSON.stringify(bundled[key])}, oplite ${JSON.stringify(oplite[key])}`);
      }
      const sdkTests = bundled.schemaChange?.afterAlter.read.includes('b') && bundled.explain?.withIndex && !bundled.explain.afterDrop &&
        sameValue(bundled.parameters?.fewer, { value: { a: 1, b: null } }) && sameValue(bundled.temp?.table, { value: [{ x: 7 }] }) &&
        bundled.readAfterWrite === 1 && bundled.watchOverflow?.atMostFour && bundled.configuration?.present &&
        sameValue(bundled.twoInOnePage, { seenByFirst: ['from the second'], watchOnSecond: 'seen', inTransaction: 6, firstAfter: ['one', 'three', 'two'] });
      if (!sdkTests || !bundled.syntaxError || !bundled.constraintError || bundled.rollback?.rows?.length !== 1 || bundled.batch !== 4 || bundled.watch?.first !== 4 || bundled.watch?.last !== 3) {
        failures.push(`the SDK's own database did not show what the checks expect: ${JSON.stringify(bundled)}`);
      }
      console.log(`  not compared (${vfs}): SDK's own ${JSON.stringify(bundled.notCompared)}, oplite ${JSON.stringify(oplite.notCompared)}`);
      check(`${vfs}${inThread ? ' in the page (no Worker)' : ''}: the adapter contract through PowerSyncDatabase (errors, rollback, executeBatch, executeRaw, values, watch, ps_crud; ` +
        'statements after a schema change, missing parameters, TEMP objects, getConfiguration, reads after writes, a throttled watch, two databases on one file in one page) as with the SDK\'s own database', failures);
    }
    for (const { vfs, inThread } of checks) {
      const bundled = await browser.encryptionChecks({ core: 'bundled', vfs });
      const oplite = await browser.encryptionChecks({ core: 'oplite', vfs, inThread });
      console.log(`  encryption (${vfs}${inThread ? ', in the page' : ''}): SDK's own ${JSON.stringify(bundled)}, oplite ${JSON.stringify(oplite)}`);
      const expected = { written: 1, wrongKey: 'refused', noKey: 'refused', rightKey: 'local-marker-5d1c9e0b', plaintext: [], filesRead: true };
      const failures = [];
      for (const [who, got] of [["the SDK's own", bundled], ['oplite', oplite]]) {
        if (!sameValue(got, expected)) failures.push(`${who}: ${JSON.stringify(got)}, expected ${JSON.stringify(expected)}`);
      }
      check(`${vfs}${inThread ? ' in the page (no Worker)' : ''}: an encryptionKey encrypts the database as with the SDK's own encrypted database ` +
        '(a wrong key and no key refused, the right one reads it back, no plaintext in the stored bytes)', failures);
    }
    for (const vfs of opts.vfs.split(',')) {
      const life = await browser.lifecycle(server, { vfs, rows });
      console.log(`  lifecycle (${vfs}): ${JSON.stringify(life)}`);
      const failures = [];
      const all = rows;
      const whole = (c) => c.integrity === 'ok' && c.buckets > 0;
      if (!(life.synced.rows === all + 1 && sameValue(life.synced.queued, ['kept']))) failures.push(`after the sync and a local write: ${JSON.stringify(life.synced)}`);
      if (!sameValue(life.afterReload, life.synced)) failures.push(`after the reload the database holds ${JSON.stringify(life.afterReload)}, not what the page left`);
      if (!life.afterClose || life.afterClose.integrity !== 'ok' || ![0, all].includes(life.afterClose.rows) || life.afterClose.queued.length !== 0) {
        failures.push(`after the page was closed mid-apply: ${JSON.stringify(life.afterClose)} (the checkpoint must be there whole or not at all)`);
      }
      if (!(whole(life.resynced) && life.resynced.rows === all && life.resynced.hasSynced)) failures.push(`synced again after the close: ${JSON.stringify(life.resynced)}`);
      if (!sameValue(life.sdkSynced, { ...life.synced, hasSynced: true })) failures.push(`the SDK's own database synced ${JSON.stringify(life.sdkSynced)}`);
      if (!sameValue(life.switched, { ...life.synced, hasSynced: true })) failures.push(`after switching to oplite: ${JSON.stringify(life.switched)}, expected what the SDK's own held`);
      const when = life.afterClose?.rows === 0 ? 'before its COMMIT (nothing applied)' : 'after its COMMIT';
      check(`${vfs}: a reload right after a sync keeps every row and the queued upload; a page closed while its first checkpoint was applied (closed ${when}) leaves a sound database that syncs on; ` +
        'a database the SDK\'s own synced, with a queued upload, is adopted by oplite, which syncs on', failures);
    }
  }
  if (opts.cores.includes('oplite') && !onlyTabs && !onlyScenario) {
    for (const vfs of opts.vfs.split(',')) {
      for (const key of [undefined, 'correct horse']) await adoptionCheck(browser, vfs, key);
    }
    // Unencrypted only: SQLite3MultipleCiphers encrypts a journal's pages
    // in its VFS and checksums them in the clear, so a test cannot forge
    // an encrypted hot journal without the plaintext pages.
    if (opts.vfs.includes('opfs')) await hotJournalCheck(browser);
    if (opts.vfs.includes('idb')) await interruptedReturnCheck(browser);
  }
  if (!onlyAdoption && !onlyScenario) await tabChecks(browser, server, { vfsList: opts.vfs.split(','), cores: opts.cores.split(','), rows, check });
} finally {
  await browser.close();
  fs.rmSync(work, { recursive: true, force: true });
}
console.log(checks.summary());
process.exit(checks.failed === 0 ? 0 : 1);
