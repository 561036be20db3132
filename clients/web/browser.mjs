// What the web SDK test (run.mjs) and its benchmark (bench.mjs) share: the
// page bundle, headless Chromium with a fresh profile per run (so OPFS and
// IndexedDB start empty), and one run of the scenario against a fresh
// loopback service.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { chromium } from 'playwright-core';
import { startService } from '../node/service.mjs';
import { mainThread, rendererPeakRss } from './measure.mjs';
import { startServer } from './serve.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');
export const ADAPTER_PACKAGE = path.join(repo, 'wasm/pkg-powersync-web');
export const CHROMIUM = process.env.OPLITE_CHROMIUM || '/usr/bin/chromium';
const FLAGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  // More, space-separated, for diagnosis: e.g. OPLITE_CHROMIUM_EXTRA=--js-flags=--trace-gc
  // with DEBUG=pw:browser prints V8's collections.
  ...(process.env.OPLITE_CHROMIUM_EXTRA ? process.env.OPLITE_CHROMIUM_EXTRA.split(' ') : []),
];

/**
 * Bundles page.mjs with the SDK and the adapter into work/dist, next to
 * the SDK's prebuilt database worker (which the SDK finds relative to the
 * bundle: new URL('./worker.js', import.meta.url)).
 */
export async function buildPage(work) {
  if (!fs.existsSync(path.join(ADAPTER_PACKAGE, 'index.js'))) {
    throw new Error(`${ADAPTER_PACKAGE} is missing: run scripts/build-wasm-package.sh`);
  }
  const dist = path.join(work, 'dist');
  fs.mkdirSync(dist, { recursive: true });
  await esbuild.build({
    entryPoints: [path.join(here, 'page.mjs')],
    bundle: true,
    format: 'esm',
    target: 'chrome120',
    outfile: path.join(dist, 'page.js'),
    alias: { '@oplite/powersync-web': path.join(ADAPTER_PACKAGE, 'index.js') },
    // The adapter lives outside this directory: its @powersync/common is
    // this directory's, the one the SDK uses.
    nodePaths: [path.join(here, 'node_modules')],
    logLevel: 'warning',
  });
  fs.cpSync(path.join(here, 'node_modules/@powersync/web/dist/worker'), dist, { recursive: true });
  fs.copyFileSync(path.join(here, 'index.html'), path.join(dist, 'index.html'));
  fs.copyFileSync(path.join(here, 'swallow-worker.js'), path.join(dist, 'swallow-worker.js'));
  return { dist };
}

// A page call that has not answered within `ms` resolves to this; the
// multi-tab checks run the SDK's own database too, which may hang where
// oplite must not.
const timedOut = (ms) => ({ timedOut: `${ms / 1000} s` });
function bounded(promise, ms) {
  let timer;
  const late = new Promise((resolve) => { timer = setTimeout(() => resolve(timedOut(ms)), ms); });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * `at(page, fn, ...args)` calling window[global][fn] in the page, each call
 * bounded by `ms`; after one call timed out, the later ones are not run
 * and resolve to what the first got.
 */
function pageCalls(global, ms) {
  let stuck = null;
  return async (page, fn, ...args) => {
    if (stuck) return stuck;
    const result = await bounded(page.evaluate(([g, f, a]) => window[g][f](...a), [global, fn, args]), ms);
    if (result?.timedOut) stuck = { ...result, in: fn };
    return result;
  };
}

// sharedTabs' results in the order it fills them.
const SHARED_STEPS = ['opened', 'written', 'watched', 'transaction', 'afterOwnerClosed', 'integrity', 'joined', 'joinedCount', 'joinedWrite',
  'seenByOwner', 'hung', 'afterClientClosed', 'finalIntegrity', 'reloadsBesideOwner', 'reloadsAlone', 'countAfterReloads'];

/** Starts the page server and returns the browser side of the tests. */
export async function launchBrowser({ dist }) {
  const server = await startServer({ '/dist/': dist, '/oplite/': ADAPTER_PACKAGE });
  const open = async () => {
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'oplite-chromium-'));
    const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS, timeout: 60_000 });
    const newPage = async (label) => {
      const page = await context.newPage();
      page.on('console', (m) => { if (process.env.OPLITE_WEB_DEBUG || m.type() === 'error' || m.text().startsWith('[')) console.error(`  [${label}] ${m.text()}`); });
      page.on('pageerror', (e) => console.error(`  [${label} pageerror] ${e.message}`));
      page.on('crash', () => console.error(`  [${label}] the page crashed`));
      await page.goto(`${server.url}/dist/index.html`);
      await page.waitForFunction(() => window.pageReady === true);
      return page;
    };
    const close = async () => {
      await context.close().catch(() => {});
      fs.rmSync(profile, { recursive: true, force: true });
    };
    return { newPage, close, context, profile };
  };
  // fn(page) on a page of a new profile, closed after.
  const inFreshProfile = async (label, fn) => {
    const session = await open();
    try {
      return await fn(await session.newPage(label));
    } finally {
      await session.close();
    }
  };
  // window[name](config) of the test page, in a fresh profile.
  const inFreshPage = (label, name, config) => inFreshProfile(label, (page) => page.evaluate(([f, c]) => window[f](c), [name, config]));
  return {
    server,
    open,
    /** Two tabs of one profile opening the same oplite database. */
    async twoTabs({ vfs }) {
      const session = await open();
      try {
        const [a, b] = [await session.newPage(`tab 1 ${vfs}`), await session.newPage(`tab 2 ${vfs}`)];
        const first = await a.evaluate((v) => window.tabTest.open(v), vfs);
        const second = await b.evaluate((v) => window.tabTest.open(v), vfs);
        await a.evaluate(() => window.tabTest.close());
        const afterClose = await b.evaluate((v) => window.tabTest.open(v), vfs);
        await b.evaluate(() => window.tabTest.close());
        return { first, second, afterClose };
      } finally {
        await session.close();
      }
    },
    /**
     * Pages of one profile sharing one database, `core` oplite's or the
     * SDK's own (shared-tab.mjs): each sees the others' writes, in its watched
     * queries too; the first page, which holds the database, closes and
     * the second carries on; a third joins the second, and is closed in
     * the middle of a write transaction; a fourth is reloaded 20 times
     * beside the second, then 20 times alone.
     */
    async sharedTabs({ vfs, core = 'oplite' }) {
      const session = await open();
      const at = pageCalls('sharedTab', 60_000);
      const openIn = (page) => at(page, 'open', vfs, 'shared.db', core);
      const out = {};
      // The key being filled when a call threw, named in `failed`.
      const step = () => SHARED_STEPS.find((k) => !(k in out)) ?? 'the end';
      try {
        const [a, b] = [await session.newPage(`shared 1 ${core} ${vfs}`), await session.newPage(`shared 2 ${core} ${vfs}`)];
        out.opened = [await openIn(a), await openIn(b)];
        out.written = [await at(a, 'write', 'a1'), await at(b, 'write', 'b1')];
        out.watched = [await at(b, 'waitSeen', 2, 30_000), await at(a, 'waitSeen', 2, 30_000)];
        out.transaction = await at(b, 'transaction', 'b2');
        await a.close();
        const started = Date.now();
        out.afterOwnerClosed = await at(b, 'write', 'b3');
        out.takeoverMs = Date.now() - started;
        out.integrity = await at(b, 'integrity');
        const c = await session.newPage(`shared 3 ${core} ${vfs}`);
        out.joined = await openIn(c);
        out.joinedCount = await at(c, 'count');
        out.joinedWrite = await at(c, 'write', 'c1');
        out.seenByOwner = await at(b, 'waitSeen', 5, 30_000);
        // A client tab closed inside its write transaction: rolled back,
        // and the lock it held goes to the next.
        out.hung = await at(c, 'hangInTransaction', 'c2');
        await c.close();
        const closed = Date.now();
        out.afterClientClosed = await at(b, 'write', 'b4');
        out.afterClientClosedMs = Date.now() - closed;
        out.finalIntegrity = await at(b, 'integrity');
        // Fast reloads: a tab reloaded 20 times, each open timed; first
        // beside the holding tab, then alone (it holds the database itself).
        const reloads = async (page) => {
          const opens = [];
          for (let i = 0; i < 20; i++) {
            await page.reload();
            await page.waitForFunction(() => window.pageReady === true);
            const started = Date.now();
            const opened = await openIn(page);
            opens.push(opened === 'opened' ? Date.now() - started : opened);
          }
          return opens;
        };
        const d = await session.newPage(`shared 4 ${core} ${vfs}`);
        out.reloadsBesideOwner = await reloads(d);
        await b.close();
        out.reloadsAlone = await reloads(d);
        out.countAfterReloads = await at(d, 'count');
      } catch (e) {
        out.failed = `${step()}: ${e?.message ?? e}`;
      } finally {
        await session.close();
      }
      return out;
    },
    /**
     * Commits whose answer the owner never sent (shared-tab.mjs swallow):
     * tab 3 writes through tab 1, which commits the write, keeps the
     * answer and is closed; tab 2 takes over and tab 3 must learn whether
     * its write is in the file. Then tab 3's transaction through tab 2,
     * which keeps the answer to its COMMIT and is closed (tab 3 takes over
     * itself); then tab 4's transaction, whose owner (tab 3) closes after
     * its BEGIN. Each outcome: what the tab was told, and the row count.
     */
    async sharedCommits({ vfs }) {
      const session = await open();
      const at = pageCalls('sharedTab', 60_000);
      const name = 'commits.db';
      // Starts `kind` in `writer`, closes `owner` once it kept an answer.
      const ownerClosesAfter = async (owner, keep, writer, kind, id) => {
        await at(owner, 'swallow', keep);
        await at(writer, 'start', kind, id);
        for (let i = 0; i < 1500 && (await at(owner, 'dropped')) === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
        const kept = await at(owner, 'dropped');
        await owner.close();
        return { kept, ...(await at(writer, 'settled')), rows: await at(writer, 'count', id) };
      };
      try {
        const pages = [];
        for (let i = 1; i <= 3; i++) {
          pages.push(await session.newPage(`commits ${i} ${vfs}`));
          await at(pages.at(-1), 'open', vfs, name, 'oplite', true);
        }
        const [a, b, c] = pages;
        const out = {};
        out.execute = await ownerClosesAfter(a, 'commits', c, 'execute', 'c1');
        out.commit = await ownerClosesAfter(b, 'commits', c, 'transaction', 'c2');
        const d = await session.newPage(`commits 4 ${vfs}`);
        out.joined = await at(d, 'open', vfs, name, 'oplite', true);
        out.beforeCommit = await ownerClosesAfter(c, 'all', d, 'transaction', 'd1');
        out.rows = await at(d, 'count');
        out.integrity = await at(d, 'integrity');
        return out;
      } finally {
        await session.close();
      }
    },
    /**
     * lifecycle.mjs against a fresh service of `rows` rows, on one oplite
     * database per step, in one profile: a sync then a local write, the
     * page reloaded at once and the database looked at; and a first sync
     * whose page (and so its Worker) is closed while the checkpoint is
     * applied, the database looked at from a new page, then synced there.
     */
    async lifecycle(serverBinary, { vfs, rows }) {
      const { child, url } = await startService(serverBinary, rows);
      this.server.setService(url);
      const session = await open();
      const call = (page, fn, name, core = 'oplite') => page.evaluate(([f, c]) => window.lifecycle[f](c), [fn, { vfs, name, core }]);
      try {
        const out = {};
        const first = await session.newPage(`lifecycle ${vfs}`);
        out.synced = await call(first, 'sync', 'reload.db');
        await first.reload();
        await first.waitForFunction(() => window.pageReady === true);
        out.afterReload = await call(first, 'look', 'reload.db');
        await first.close();
        const doomed = await session.newPage(`lifecycle ${vfs}, closed mid-apply`);
        out.downloaded = await call(doomed, 'downloaded', 'killed.db');
        await doomed.close();
        const next = await session.newPage(`lifecycle ${vfs}, after the close`);
        out.afterClose = await call(next, 'look', 'killed.db');
        out.resynced = await call(next, 'resync', 'killed.db');
        // The SDK's own database syncs and queues a write, and its tab
        // closes; oplite then adopts the file and syncs on (connect()
        // called at once, before the database is open).
        const sdkTab = await session.newPage(`lifecycle ${vfs}, the SDK's own`);
        out.sdkSynced = await call(sdkTab, 'sync', 'switch.db', 'bundled');
        await sdkTab.close();
        const switched = await session.newPage(`lifecycle ${vfs}, switched to oplite`);
        out.switched = await call(switched, 'connectAtOnce', 'switch.db');
        return out;
      } finally {
        await session.close();
        child.kill();
      }
    },
    /**
     * Tabs sharing a database (`core` oplite's with multiTab, or the SDK's
     * own with enableMultiTabs) and the SDK's sync: tab 1 syncs a fresh service's `rows`
     * rows, tab 2 connects too (the SDK's sync lock keeps it waiting),
     * tab 1 ends; tab 2 takes over the database and the sync and must end
     * with every row. end 'close': tab 1 is closed mid-download;
     * 'closeApply': closed while the checkpoint is applied; 'crash': its
     * renderer, and so the Worker holding the database, is crashed
     * (DevTools' Page.crash) while the checkpoint is applied.
     */
    async sharedSync(serverBinary, { vfs, rows, end = 'close', core = 'oplite' }) {
      const { child, url } = await startService(serverBinary, rows);
      this.server.setService(url);
      const session = await open();
      const call = pageCalls('lifecycle', 45_000);
      const config = { vfs, name: 'shared-sync.db', multiTab: true, core };
      const out = {};
      try {
        const [a, b] = [await session.newPage(`sync 1 ${core} ${vfs}`), await session.newPage(`sync 2 ${core} ${vfs}`)];
        if (end !== 'close') {
          // Both tabs open first (tab 1 holds the database), so that tab 2
          // connects at once and tab 1 ends while its apply runs.
          await call(a, 'openOnly', config);
          await call(b, 'openOnly', config);
        }
        out.closedAt = await call(a, end === 'close' ? 'midDownload' : 'downloaded', config);
        out.secondConnected = await call(b, 'connectAndWait', config);
        if (end !== 'crash') {
          await a.close();
        } else {
          const crashed = new Promise((resolve) => a.once('crash', resolve));
          const cdp = await a.context().newCDPSession(a);
          cdp.send('Page.crash').catch(() => {});
          await crashed;
        }
        const closed = Date.now();
        out.finished = await call(b, 'finish', config);
        out.finishedMs = Date.now() - closed;
      } catch (e) {
        out.failed = String(e?.message ?? e);
      } finally {
        await session.close();
        child.kill();
      }
      return out;
    },
    /** page.mjs's adapterChecks(config) in a fresh profile. */
    adapterChecks(config) {
      return inFreshPage(`checks ${config.core} ${config.vfs}`, 'adapterChecks', config);
    },
    /** encryption-page.mjs's encryptionChecks(config) in a fresh profile. */
    encryptionChecks(config) {
      return inFreshPage(`encryption ${config.core} ${config.vfs}`, 'encryptionChecks', config);
    },
    /** adoption-page.mjs's adoptionChecks(config) in a fresh profile. */
    adoptionChecks(config) {
      return inFreshPage(`adoption ${config.vfs}`, 'adoptionChecks', config);
    },
    /** adoption-page.mjs's hotJournalCheck(config) in a fresh profile. */
    hotJournalCheck(config) {
      return inFreshPage('hot journal', 'hotJournalCheck', config);
    },
    /** adoption-page.mjs's interruptedReturnCheck() in a fresh profile. */
    interruptedReturnCheck() {
      return inFreshPage('interrupted return', 'interruptedReturnCheck');
    },
    /** floor-page.mjs's storageFloor(config) in a fresh profile. */
    storageFloor(config) {
      return inFreshPage(`floor ${config.vfs}`, 'storageFloor', config);
    },
    async close() {
      await server.close();
    },
  };
}

/**
 * One scenario run (page.mjs's config) against a fresh service; resolves to
 * its result. With `measure`, its afterFirstSync.mainThread holds the page's
 * main-thread time until the first sync was done (measure.mjs), and its
 * rendererPeakRss the renderer's peak resident memory over the run.
 */
export async function runInBrowser(browser, serverBinary, { measure = false, ...config }) {
  const { child, url } = await startService(serverBinary, config.rows);
  browser.server.setService(url);
  const session = await browser.open();
  try {
    const page = await session.newPage(`${config.core} ${config.vfs}`);
    let timer;
    const timeout = new Promise((resolve) => {
      timer = setTimeout(() => resolve({ core: config.core, vfs: config.vfs, failed: 'timed out after 600 s', step: 'unknown' }), 600_000);
    });
    if (measure) {
      // The probe (probe.mjs) reads it when the first sync is done.
      const thread = await mainThread(session.context, page);
      await page.exposeFunction('opliteMainThread', () => thread.read());
    }
    const result = await Promise.race([page.evaluate((c) => window.runScenario(c), config), timeout]).finally(() => clearTimeout(timer));
    if (measure && !result.failed) result.rendererPeakRss = rendererPeakRss(session.profile);
    return result;
  } finally {
    await session.close();
    child.kill();
  }
}
