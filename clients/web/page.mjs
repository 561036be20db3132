// The browser side of the web SDK drop-in test, bundled by run.mjs into
// dist/page.js: window.runScenario(config) runs the drop-in scenario
// (../scenario/drop-in.mjs) with @powersync/web on the database config
// names and resolves to its result (or {failed, step}).
//
// config: {core: 'bundled' | 'oplite', vfs: 'opfs' | 'idb', inThread, mode,
// rows, raw, triggers, probeMs, probeSql}; inThread runs oplite in the page
// instead of a Worker ('idb' only). 'bundled' is the SDK's own wa-sqlite database
// (OPFSCoopSyncVFS or IDBBatchAtomicVFS, in the SDK's database worker);
// 'oplite' is @oplite/powersync-web on the same storage. With probeMs, a
// query (SELECT 1 through db.get) is issued every probeMs during the
// initial sync and the longest wait for one is reported; probeSql
// 'count' makes it count the synced rows.
import * as sdk from '@powersync/web';
import { OpliteDBAdapter, OpliteOpenFactory } from '@oplite/powersync-web';
import { runDropIn } from '../scenario/drop-in.mjs';

function databaseSource({ core, vfs, inThread }) {
  if (core === 'oplite') {
    // Served from /oplite/ (wasm/pkg-powersync-web); a bundler that follows
    // new URL(..., import.meta.url) would find the worker by itself. In the
    // page (inThread), oplite.js is bundled here and told where its .wasm is.
    const where = inThread ? { worker: false, wasmUrl: '/oplite/oplite_wasm_bg.wasm' } : { worker: '/oplite/oplite-worker.js' };
    return { factory: new OpliteOpenFactory({ dbFilename: 'app.db', vfs, ...where }) };
  }
  const vfsName = vfs === 'opfs' ? sdk.WASQLiteVFS.OPFSCoopSyncVFS : sdk.WASQLiteVFS.IDBBatchAtomicVFS;
  // Sync in the tab, as with oplite: no shared sync worker.
  return { database: { dbFilename: 'app.db', vfs: vfsName, enableMultiTabs: false } };
}

async function sha256(text) {
  const hash = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(hash)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

// The synced rows, in one statement (one snapshot).
const COUNT_ROWS = 'SELECT (SELECT count(*) FROM lists) + (SELECT count(*) FROM todos) AS n';

// Issues a query every `everyMs` while the first sync runs; `stop()`
// resolves to the longest time one waited, how many ran, and the row
// counts they saw other than none and all (the first sync is one
// checkpoint: a reader must see it all at once or not at all).
function probeQueries(db, everyMs, sql) {
  let longest = 0;
  let longestAt = null;
  let count = 0;
  let running = true;
  const counts = new Set();
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      const row = await db.get(sql);
      const took = performance.now() - started;
      if (took > longest) {
        longest = took;
        longestAt = Date.now() - took;
      }
      if (row.n != null) counts.add(row.n);
      count++;
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      const all = (await db.get(COUNT_ROWS)).n;
      const partialCounts = [...counts].filter((n) => n !== 0 && n !== all);
      const adapterStats = typeof db.database.stats === 'function' ? await db.database.stats() : null;
      return { longestWaitMs: Math.round(longest), queries: count, partialCounts, rows: all,
               applySteps: adapterStats?.applySteps ?? null, longestStepMs: adapterStats?.longestStepMs ?? null, longestStep: adapterStats?.longestStep ?? null, slowSteps: adapterStats?.slowSteps ?? null, longestFlushMs: adapterStats?.longestFlushMs ?? null, longestSyncMs: adapterStats?.longestSyncMs ?? null,
               longestCommitMs: adapterStats?.longestCommitMs ?? null, longestReadMs: adapterStats?.longestReadMs ?? null,
               longestReadSql: adapterStats?.longestReadSql ?? null,
               longestWaitFrom: longestAt, lastApply: adapterStats?.lastApply ?? null, stoppedAt: Date.now(), memoryHighwater: adapterStats?.memoryHighwater ?? null, wasmMemoryBytes: adapterStats?.wasmMemoryBytes ?? null };
    },
  };
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
              if (status.connected && probe == null && !status.hasSynced) probe = probeQueries(db, config.probeMs, config.probeSql === 'count' ? COUNT_ROWS : 'SELECT 1 AS one');
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

// The DBAdapter's contract as apps see it through PowerSyncDatabase, on
// either database (run.mjs compares the two): errors and their codes,
// rollback, executeBatch, executeRaw, values, a watched query, ps_crud.
window.adapterChecks = async (config) => {
  const out = {};
  const schema = new sdk.Schema({ notes: new sdk.Table({ body: sdk.column.text, n: sdk.column.integer }) });
  const db = new sdk.PowerSyncDatabase({ schema, ...databaseSource(config) });
  try {
    await db.init();
    const error = await db.execute('SELEC 1').then(() => null, (e) => e);
    out.syntaxError = /syntax error/.test(String(error?.message));
    const constraint = await db.execute("INSERT INTO ps_kv(key, value) VALUES ('client_id', 'x')").then(() => null, (e) => e);
    out.constraintError = /UNIQUE constraint failed/.test(String(constraint?.message));
    // Not compared: the SDK's own database rejects with a plain Error
    // without SQLite's code, and reports rowsAffected 0 for executeBatch.
    out.notCompared = { errors: [error, constraint].map((e) => `${e?.name} ${e?.code ?? 'no code'}`) };
    await db.execute("INSERT INTO notes (id, body, n) VALUES ('a', 'one', 1)");
    const rolledBack = await db.writeTransaction(async (tx) => {
      await tx.execute("INSERT INTO notes (id, body, n) VALUES ('b', 'two', 2)");
      throw new Error('planned');
    }).then(() => 'committed', (e) => e.message);
    out.rollback = { error: rolledBack, rows: (await db.getAll('SELECT id FROM notes ORDER BY id')).map((r) => r.id) };
    const batch = await db.executeBatch('INSERT INTO notes (id, body, n) VALUES (?, ?, ?)', [['c', 'three', 3], ['d', 'four', 4], ['e', 'five', 5]]);
    out.notCompared.batchRowsAffected = batch.rowsAffected;
    out.batch = (await db.get('SELECT count(*) AS n FROM notes')).n;
    const raw = await db.executeRaw("SELECT 1 AS x, 2 AS x, 'three' AS y");
    out.raw = { columnNames: raw.columnNames, rawRows: raw.rawRows };
    const typed = await db.get("SELECT 9007199254740993 AS big, x'00ff' AS blob, 1.5 AS real, NULL AS none");
    out.values = { big: String(typed.big), bigType: typeof typed.big, blob: Array.from(typed.blob), real: typed.real, none: typed.none };
    // A watched query sees a later write.
    const seen = [];
    const abort = new AbortController();
    const done = new Promise((resolve) => {
      db.watch('SELECT count(*) AS n FROM notes', [], { onResult: (r) => { seen.push(r.rows._array[0].n); if (r.rows._array[0].n === 3) resolve(); } }, { signal: abort.signal, throttleMs: 10 });
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await db.execute("DELETE FROM notes WHERE id = 'a'");
    await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 5000))]);
    abort.abort();
    out.watch = { first: seen[0], last: seen.at(-1) };
    const crud = await db.getAll('SELECT data FROM ps_crud ORDER BY id');
    out.crud = crud.map((r) => { const d = JSON.parse(r.data); return `${d.op} ${d.type} ${d.id} ${JSON.stringify(d.data ?? null)}`; });
  } catch (e) {
    out.failed = String(e?.stack ?? e);
  } finally {
    await db.close();
  }
  return out;
};
