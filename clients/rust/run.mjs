// The Rust SDK drop-in test (docs/rust-sdk.md): the scenario of src/ (the
// official powersync 0.2.0 crate) built twice, on the reference core 0.5.4
// from crates.io and on oplite through the [patch] crate, run against a
// fresh loopback service each (two-tables with sync streams), in each
// checkpoint mode and schema; any difference an app or the service could
// see fails, and the reference run must show every step.
//
//   OPLITE_TEST_SERVER=target/release/oplite-test-server \
//   node clients/rust/run.mjs --reference BIN --oplite BIN [--rows N] [--runs legacy:direct,requests:raw,...]
//
// scripts/test-rust-sdk.sh builds the two programs and runs this.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startService } from '../node/service.mjs';
import { firstDifference, sameValue } from '../scenario/compare.mjs';

const { values: opts } = parseArgs({
  options: {
    reference: { type: 'string' },
    oplite: { type: 'string' },
    rows: { type: 'string', default: '20000' },
    runs: { type: 'string', default: 'legacy:direct,requests:raw,requests:direct,legacy:raw' },
  },
});
const server = process.env.OPLITE_TEST_SERVER;
if (!opts.reference || !opts.oplite || !server) {
  console.error('usage: OPLITE_TEST_SERVER=... node run.mjs --reference BIN --oplite BIN [--rows N] [--runs mode:schema,...]');
  process.exit(2);
}
const rows = Number(opts.rows);
const work = mkdtempSync(join(tmpdir(), 'oplite-rust-sdk-'));

/**
 * One run of `bin` against a fresh service of `serviceRows` rows started
 * with `serviceArgs`, the program given `extra`; its result, or
 * { failed, step }.
 */
async function runOnce(bin, name, mode, schema, { serviceRows = rows, serviceArgs = ['--streams'], extra = [] } = {}) {
  const { child, url } = await startService(server, serviceRows, serviceArgs);
  try {
    const out = join(work, `${name}-${mode}-${schema}.json`);
    const args = ['--endpoint', url, '--db', join(work, `${name}-${mode}-${schema}.db`), '--out', out, '--mode', mode, '--schema', schema, ...extra];
    const code = await new Promise((resolve) => {
      const run = spawn(bin, args, { stdio: ['ignore', 'inherit', 'inherit'] });
      const timer = setTimeout(() => run.kill('SIGKILL'), 300_000);
      run.on('exit', (c, signal) => { clearTimeout(timer); resolve(c ?? signal); });
    });
    let result = null;
    try { result = JSON.parse(readFileSync(out, 'utf8')); } catch {}
    if (code !== 0 || !result || result.failed) return { failed: `${result?.failed ?? 'no result written'} (exit ${code})`, step: result?.step ?? 'unknown' };
    return result;
  } finally {
    child.kill();
  }
}

// What both runs must agree on: everything but the timings and the core's
// name, and the service counters that depend on how its stream thread
// batches changes into checkpoints (lines, bytes) or on the SDK's
// checkpoint-request retries (a timer of the SDK), not on the core.
const pick = (r) => {
  const { core, coreIsOplite, timings, serviceStats, ...rest } = r;
  const { lines_sent, bytes_sent, checkpoint_requests, ...stats } = serviceStats;
  return { ...rest, serviceStats: { ...stats, checkpoint_requests: r.mode === 'requests' ? 'at least one, checked per run' : checkpoint_requests } };
};

/** What the scenario must have shown on a run (both are checked). */
function expectations(r, mode, schema) {
  const lists = Math.max(1, Math.floor(rows / 100));
  const f = r.firstSync.afterFirstSync;
  const sub = r.firstSync.afterSubscribingLists.streams.find((s) => s.name === 'lists');
  const clear = r.clear;
  const checks = [
    [`the first sync: ${lists} lists and ${rows - lists} todos (${f.lists}, ${f.todos})`, f.lists === lists && f.todos === rows - lists],
    [`lists complete when priority 1 was reported synced (${r.status.listsWhenPriority1Synced})`, r.status.listsWhenPriority1Synced === lists],
    ['the streams: lists by default, todos subscribed, both synced', sameValue(f.streams.map((s) => [s.name, s.isDefault, s.explicit, s.hasSynced]), [['lists', true, false, true], ['todos', false, true, true]])],
    ['lists subscribed explicitly at priority 0, active and synced', sub?.explicit && sub.active && sub.hasSynced],
    ['one dropped stream, resumed with positions above 0', r.serviceStats.dropped_streams === 1 && r.serviceStreams[1]?.buckets?.length > 0 && r.serviceStreams[1].buckets.every((b) => Number(b.after) > 0)],
    [`ps_crud counted inside the transaction: 5, then 6 (${r.localWrites.pendingInTransaction})`, sameValue(r.localWrites.pendingInTransaction, [5, 6])],
    [`the uploaded rows are the service's versions and the deleted ones gone (${JSON.stringify(r.localWrites.serverVersions)})`, sameValue(r.localWrites.serverVersions, { todos: 7, lists: 2, deletedLeft: 0 })],
    [`the write checkpoints asked as the mode says (${r.serviceStats.write_checkpoints} write-checkpoint2.json, ${r.serviceStats.checkpoint_requests} checkpoint requests)`,
      mode === 'legacy' ? r.serviceStats.write_checkpoints >= 1 && r.serviceStats.checkpoint_requests === 0 : r.serviceStats.checkpoint_requests >= 1 && r.serviceStats.write_checkpoints === 0],
    ['request_checkpoint() applied', mode === 'legacy' || r.localWrites.requestCheckpoint?.hasSynced === true],
    [`the token refreshed and the write after it uploaded (${JSON.stringify(r.tokenRefresh)})`, sameValue(r.tokenRefresh.todo7, [[0]])],
    [`the malformed line shown as a download error, one new stream after it (${JSON.stringify(r.badLine)})`, r.badLine.error != null && r.badLine.newStreams === 1],
    [`download-only with a local write: the checkpoint held back, the SDK says why (${JSON.stringify(r.downloadOnly)})`,
      r.downloadOnly.pending === 1 && sameValue(r.downloadOnly.list1, [['List 1']]) && /no uploader/.test(r.downloadOnly.error ?? '')],
    [`upload-only: the write uploaded, no stream (${JSON.stringify(r.uploadOnly.uploadOnly)})`, r.uploadOnly.uploadOnly.newStreams === 0 && r.clientBatches.length === 5],
    ['a full connection again: both writes synced', sameValue(r.uploadOnly.full, [['list1', 'from another client'], ['list3', 'offline edit']])],
    [`disconnect_and_clear keeping local data: the drafts kept, no synced data (${JSON.stringify(clear.keepingLocal)})`, clear.keepingLocal.drafts === 3 && clear.keepingLocal.todos === 0 && clear.keepingLocal.ps_oplog === 0],
    [`disconnect_and_clear: nothing left but what the app's raw tables keep (${JSON.stringify(clear.all)})`, clear.all.drafts === 0 && clear.all.todos === 0 && clear.all.ps_oplog === 0 && clear.all.ps_crud === 0],
    ['no request refused by the service', r.serviceStats.invalid_requests === 0],
    [`the schema's tables (${JSON.stringify(r.tables)})`, schema === 'direct'
      ? sameValue(r.tables, [['drafts', 'view'], ['lists', 'view'], ['ps_data__lists', 'table'], ['todos', 'table']])
      : sameValue(r.tables, [['drafts', 'view'], ['lists', 'table'], ['todos', 'table']])],
  ];
  return checks.filter(([, ok]) => !ok).map(([what]) => `expected ${what}`);
}

let failed = 0;
const summary = [];
try {
  for (const spec of opts.runs.split(',')) {
    const [mode, schema] = spec.split(':');
    const reference = await runOnce(opts.reference, 'reference', mode, schema);
    const oplite = await runOnce(opts.oplite, 'oplite', mode, schema);
    const failures = [];
    for (const [name, r] of [['reference', reference], ['oplite', oplite]]) {
      if (r.failed) failures.push(`the ${name} run failed while ${r.step}: ${r.failed}`);
    }
    if (!failures.length) {
      if (!reference.core.startsWith('0.5.4/') || reference.coreIsOplite) failures.push(`the reference run ran ${reference.core}${reference.coreIsOplite ? ' (oplite)' : ''}`);
      if (!oplite.coreIsOplite) failures.push(`the oplite run ran ${oplite.core}, not oplite`);
      for (const [name, r] of [['reference', reference], ['oplite', oplite]]) {
        for (const miss of expectations(r, mode, schema)) failures.push(`${name}: ${miss}`);
      }
      const a = pick(reference);
      const b = pick(oplite);
      for (const key of Object.keys(a)) {
        if (!sameValue(a[key], b[key])) failures.push(`${key} differs (first at ${firstDifference(a[key], b[key])})`);
      }
      const t = (r) => r.timings;
      summary.push(`| ${mode} | ${schema} | ${t(reference).firstSyncMs} / ${t(oplite).firstSyncMs} | ${t(reference).uploadRoundTripMs} / ${t(oplite).uploadRoundTripMs} | ${t(reference).totalMs} / ${t(oplite).totalMs} |`);
    }
    const label = `Rust SDK drop-in, ${mode} checkpoint mode, ${schema} schema, ${rows} rows`;
    if (failures.length) {
      failed++;
      console.log(`FAILED: ${label}:\n  ${failures.join('\n  ')}`);
    } else {
      console.log(`ok: ${label}: identical on the reference 0.5.4 and on oplite (first sync through a dropped stream, sync streams ` +
        `with priorities, uploads and write checkpoints, token refresh, a malformed line, download-only and upload-only, disconnect_and_clear)`);
    }
  }
  // Refused input (src/bad_input.rs), against a service of 2000 rows with
  // sync rules: the same errors through the SDK, nothing lost.
  const bad = {};
  for (const [name, bin] of [['reference', opts.reference], ['oplite', opts.oplite]]) bad[name] = await runOnce(bin, `${name}-bad`, 'legacy', 'views', { serviceRows: 2000, serviceArgs: [], extra: ['--bad-input'] });
  const badFailures = Object.entries(bad).filter(([, r]) => r.failed).map(([name, r]) => `the ${name} run failed while ${r.step}: ${r.failed}`);
  if (!badFailures.length) {
    if (!sameValue(bad.reference, bad.oplite)) badFailures.push(`the runs differ (first at ${firstDifference(bad.reference, bad.oplite)})`);
    for (const [name, r] of Object.entries(bad)) {
      const v = r.viewCollision;
      const checks = [
        [`the file that is not a database refused, its bytes untouched (${JSON.stringify(r.notADatabase)})`, r.notADatabase.bytesUntouched && Object.keys(r.notADatabase.error)[0] !== 'opened'],
        [`the colliding schema refused, the app's table and row kept, no ps_ table left (${JSON.stringify(v)})`,
          Object.keys(v.error)[0] !== 'opened' && sameValue(v.appTablesBefore, v.appTablesAfter) && v.rowKept === 'kept' && v.psTablesLeft === 0],
        [`the invalid line a download error, then every row, integrity ok (${JSON.stringify(r.invalidLine)})`,
          r.invalidLine.error != null && r.invalidLine.rows === 2000 && sameValue(r.invalidLine.integrity, [['ok']]) && r.invalidLine.streams === 2],
      ];
      for (const [what, ok] of checks) if (!ok) badFailures.push(`${name}: expected ${what}`);
    }
  }
  if (badFailures.length) {
    failed++;
    console.log(`FAILED: Rust SDK, refused input:\n  ${badFailures.join('\n  ')}`);
  } else {
    console.log('ok: Rust SDK, refused input: a file that is not a database (its bytes untouched), a schema whose view collides with the app\'s table ' +
      `(the table and its row kept, no ps_ table left), an invalid line in the stream (a download error, then all 2000 rows): the same errors on both cores (${JSON.stringify([bad.reference.notADatabase.error, bad.reference.viewCollision.error, bad.reference.invalidLine.error])})`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
if (summary.length) {
  console.log('\n| mode | schema | first sync ms (0.5.4 / oplite) | upload round trip ms | whole run ms |\n|---|---|---:|---:|---:|');
  console.log(summary.join('\n'));
}
console.log(`rust-sdk: ${opts.runs.split(',').length + 1 - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
