// The browser side of the web SDK drop-in test, bundled by run.mjs into
// dist/page.js: window.runScenario(config) runs the drop-in scenario
// (../scenario/drop-in.mjs) with @powersync/web on the database config
// names and resolves to its result (or {failed, step}).
//
// config: {core: 'bundled' | 'oplite', vfs: 'opfs' | 'idb', mode, rows,
// raw, triggers, probeMs}. 'bundled' is the SDK's own wa-sqlite database
// (OPFSCoopSyncVFS or IDBBatchAtomicVFS, in the SDK's database worker);
// 'oplite' is @oplite/powersync-web on the same storage. With probeMs, a
// query (SELECT 1 through db.get) is issued every probeMs during the
// initial sync and the longest wait for one is reported.
import * as sdk from '@powersync/web';
import { OpliteDBAdapter, OpliteOpenFactory } from '@oplite/powersync-web';
import { runDropIn } from '../scenario/drop-in.mjs';

function databaseSource({ core, vfs }) {
  if (core === 'oplite') {
    // Served from /oplite/ (wasm/pkg-powersync-web); a bundler that follows
    // new URL(..., import.meta.url) would find the worker by itself.
    return { factory: new OpliteOpenFactory({ dbFilename: 'app.db', vfs, worker: '/oplite/oplite-worker.js' }) };
  }
  const vfsName = vfs === 'opfs' ? sdk.WASQLiteVFS.OPFSCoopSyncVFS : sdk.WASQLiteVFS.IDBBatchAtomicVFS;
  // Sync in the tab, as with oplite: no shared sync worker.
  return { database: { dbFilename: 'app.db', vfs: vfsName, enableMultiTabs: false } };
}

async function sha256(text) {
  const hash = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(hash)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

// Issues a query every `everyMs` while the first sync runs; `stop()`
// resolves to the longest time one waited, and how many ran.
function probeQueries(db, everyMs) {
  let longest = 0;
  let count = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      await db.get('SELECT 1 AS one');
      longest = Math.max(longest, performance.now() - started);
      count++;
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return { async stop() { running = false; await loop; return { longestWaitMs: Math.round(longest), queries: count }; } };
}

window.runScenario = async (config) => {
  const state = { step: 'starting', lastSdkError: null };
  const t0 = performance.now();
  const log = (...parts) => console.log(`[${config.core} ${config.vfs} ${config.mode} ${((performance.now() - t0) / 1000).toFixed(1)}s]`,
    ...parts.map((p) => (typeof p === 'string' ? p : JSON.stringify(p))));
  let probe = null;
  try {
    const result = await runDropIn({
      sdk,
      openDatabase: (schema, logger) => {
        const db = new sdk.PowerSyncDatabase({ schema, logger, ...databaseSource(config) });
        if (config.probeMs) {
          // From the first connect until the first sync is done.
          db.registerListener({
            statusChanged(status) {
              if (status.connected && probe == null && !status.hasSynced) probe = probeQueries(db, config.probeMs);
            },
          });
        }
        return db;
      },
      core: config.core,
      url: location.origin,
      mode: config.mode,
      raw: config.raw,
      rows: config.rows,
      triggers: config.triggers,
      digest: sha256,
      log,
      state,
      afterFirstSync: () => probe?.stop() ?? null,
    });
    return { ...result, vfs: config.vfs };
  } catch (e) {
    console.error(`FAILED while ${state.step}:`, e?.stack ?? e);
    const failed = String(e?.message ?? e) + (state.lastSdkError ? `; the SDK's last error: ${state.lastSdkError}` : '');
    return { core: config.core, vfs: config.vfs, failed, step: state.step };
  }
};
window.pageReady = true;

// For the tab test: opens (or closes) this page's oplite database directly,
// outside the SDK; resolves to 'opened' or the error's name.
let tabDb = null;
window.tabTest = {
  async open(vfs) {
    const db = new OpliteDBAdapter({ dbFilename: 'tabs.db', vfs, worker: '/oplite/oplite-worker.js' });
    try {
      await db.get('SELECT 1 AS one');
      tabDb = db;
      return 'opened';
    } catch (e) {
      await db.close();
      return e?.name ?? String(e);
    }
  },
  async close() {
    await tabDb?.close();
    tabDb = null;
  },
};
