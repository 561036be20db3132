// The database side of @oplite/powersync-web: owns the oplite-wasm
// connections of one database and runs what the page's OpliteDBAdapter
// sends, in arrival order per connection. It runs in a dedicated Worker
// (oplite-worker.js; OPFS needs one) or, for 'idb' and 'memory' where no
// Worker is available or wanted, in the page itself (worker: false).
//
// Two connections: the writer, and (for 'opfs' and 'idb') a read-only
// reader that serves read locks. A checkpoint's apply is written in steps
// before the SDK's powersync_control call that applies it (see
// applyInSteps); the event loop turns between steps, so reads run
// meanwhile, on the reader, which sees the last committed state: the
// module's VFS keeps the page images the writer overwrites for it
// (wasm/src/snapshot.rs). Every FLUSH_EVERY_MS of steps the writer writes
// and syncs what it changed, so its COMMIT is short.
//
// Messages: {id, method, args} -> {id, result} or {id, error}; after each
// committed write transaction, {event: 'tables', tables}; when the SDK's
// sync client calls powersync_control, {event: 'syncing'}. A write's
// result carries tempNames (the writer's TEMP tables and views) after a
// statement that may have created or dropped one.
import { open } from './oplite.js';

// The SDK's call (BucketStorageAdapter's rawPowerSyncControl).
const CONTROL = /^\s*SELECT\s+CAST\s*\(\s*powersync_control\s*\(\s*\?\s*,\s*\?\s*\)\s+AS\s+TEXT\s*\)\s*$/i;
// The SDK's readTransaction opens with BEGIN IMMEDIATE; on the reader a
// deferred BEGIN gives the same snapshot without asking for the writer's lock.
const BEGIN_WRITE = /^\s*BEGIN\s+(IMMEDIATE|EXCLUSIVE)(\s+TRANSACTION)?\s*;?\s*$/i;
const COMMIT = /^\s*(COMMIT|END)(\s+TRANSACTION)?\s*;?\s*$/i;
// A statement that may create or drop a TEMP table or view (the writer's
// own: the reader cannot see them, so the adapter sends the reads that
// name one to the writer).
const TEMP_DDL = /\b(TEMP|TEMPORARY)\b|^\s*DROP\b/i;
// An apply step should take about this long; the first of an apply, or of
// a stage of it, writes this many rows.
const STEP_MS = 20;
const FIRST_STEP_ROWS = 500;
// A step this slow is kept in stats().slowSteps, for diagnosis.
const SLOW_STEP_MS = 60;
const MAX_SLOW_STEPS = 20;
// During an apply in steps, after about this much of its work the writer
// writes the pages it changed into the file and syncs it (cacheFlush,
// syncFile), so that COMMIT writes and syncs only what changed since.
const FLUSH_EVERY_MS = 50;

// Lets queued messages (reads) run: a macrotask, without the clamping of
// nested setTimeout.
function turnEventLoop() {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(null);
  });
}

// How long fn's promise took to settle, in ms.
async function timed(fn) {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

/** A host for one database; `post` sends a message to the adapter. Returns the message handler. */
export function createHost(post) {
  let db = null;
  let reader = null;
  // Rows per apply step, adapted so that a step takes about STEP_MS.
  let stepRows = FIRST_STEP_ROWS;
  // For stats(): steps run, the longest, the longest COMMIT and read.
  let applySteps = 0;
  // The longest step (ms, rows asked for, its stage, and what it grew: wasm
  // memory, temporary-file and database bytes written), cacheFlush and syncFile.
  let longestStep = { ms: 0, rows: 0, stage: 0, grewMemory: 0, tempBytes: 0, dbBytes: 0 };
  // Steps that took over SLOW_STEP_MS, the first MAX_SLOW_STEPS of them.
  const slowSteps = [];
  let longestFlushMs = 0;
  let longestSyncMs = 0;
  let longestCommitMs = 0;
  let longestRead = { ms: 0, sql: null };
  // When (Date.now()) the last stepped apply started and ended.
  let lastApply = null;

  function opened() {
    if (db == null) throw new Error('the database is not open');
    return db;
  }

  // Before the SDK's powersync_control(op, payload): if that call will apply
  // a checkpoint, writes the apply's rows in steps in the open transaction.
  async function applyInSteps(op, payload) {
    if (reader == null) return;
    const prepared = await db.executeRaw('SELECT oplite_apply_prepare(?, ?)', [op, payload]);
    if (!prepared.rawRows[0][0]) return;
    lastApply = { start: Date.now(), end: null };
    await writeSteps();
  }

  async function writeSteps() {
    let sinceFlushMs = 0;
    let lastStage = 1;
    for (;;) {
      // 0 once done, else the stage the next step continues: rows cost
      // differently in each, so a new stage starts from few rows again.
      const rows = stepRows;
      const before = await db.stats();
      const started = performance.now();
      const stage = (await db.executeRaw('SELECT oplite_apply_step(?)', [rows])).rawRows[0][0];
      const took = Math.max(performance.now() - started, 0.1);
      const after = await db.stats();
      stepRows = Math.round(Math.min(Math.max(rows * Math.min(STEP_MS / took, 4), 100), 200000));
      if (stage !== lastStage) stepRows = FIRST_STEP_ROWS;
      const stepStage = lastStage;
      lastStage = stage;
      applySteps++;
      if (took > longestStep.ms || took > SLOW_STEP_MS) {
        const step = { ms: Math.round(took), rows, stage: stepStage,
                       grewMemory: after.wasmMemoryBytes - before.wasmMemoryBytes,
                       tempBytes: after.tempBytesWritten - before.tempBytesWritten,
                       dbBytes: after.dbBytesWritten - before.dbBytesWritten, at: applySteps };
        if (took > longestStep.ms) longestStep = step;
        if (took > SLOW_STEP_MS && slowSteps.length < MAX_SLOW_STEPS) slowSteps.push(step);
      }
      sinceFlushMs += took;
      if (sinceFlushMs >= FLUSH_EVERY_MS) {
        sinceFlushMs = 0;
        // Writing the pages and syncing the file are tasks of their own.
        await turnEventLoop();
        longestFlushMs = Math.max(longestFlushMs, await timed(() => db.cacheFlush()));
        await turnEventLoop();
        longestSyncMs = Math.max(longestSyncMs, await timed(() => db.syncFile()));
      }
      if (stage === 0) {
        lastApply.end = Date.now();
        return;
      }
      await turnEventLoop();
    }
  }

  async function read(sql, params) {
    if (BEGIN_WRITE.test(sql)) sql = 'BEGIN';
    const started = performance.now();
    const result = await reader.executeRaw(sql, params);
    const took = performance.now() - started;
    if (took > longestRead.ms) longestRead = { ms: took, sql: sql.slice(0, 200) };
    return result;
  }

  async function write(sql, params) {
    const started = performance.now();
    const result = await opened().executeRaw(sql, params);
    if (COMMIT.test(sql)) longestCommitMs = Math.max(longestCommitMs, performance.now() - started);
    if (TEMP_DDL.test(sql)) {
      result.tempNames = (await db.executeRaw("SELECT name FROM temp.sqlite_schema WHERE type IN ('table', 'view')", [])).rawRows.map((r) => r[0]);
    }
    return result;
  }

  const methods = {
    async open({ name, vfs, onLocked, cacheSizeKb, wasm }) {
      db = await open({ name, vfs, onLocked, wasm });
      await db.execute(`PRAGMA cache_size = -${cacheSizeKb}`);
      db.onTablesChanged((tables) => post({ event: 'tables', tables }));
      if (vfs !== 'memory') {
        reader = await db.openReader();
        await reader.executeRaw(`PRAGMA cache_size = -${cacheSizeKb}`, []);
      }
      return { reader: reader != null };
    },
    async executeRaw(sql, params) {
      if (CONTROL.test(sql) && params?.length === 2) {
        // Reads asked for from now on need not wait for this write lock
        // (the adapter forgets this when the lock ends).
        post({ event: 'syncing' });
        await applyInSteps(params[0], params[1]);
      }
      return write(sql, params);
    },
    // One statement, many parameter sets: one message instead of one per set.
    async executeBatch(sql, sets) {
      let changes = 0;
      let lastInsertRowid = 0;
      for (const params of sets) {
        const result = await write(sql, params);
        changes += result.changes;
        lastInsertRowid = result.lastInsertRowid;
      }
      return { changes, lastInsertRowid };
    },
    // A statement of a read lock, on the reader.
    readRaw(sql, params) {
      opened();
      return read(sql, params);
    },
    // At the end of a write lock: what it committed made durable ('idb':
    // stored in IndexedDB), unless it left a transaction open, which the
    // end of a later lock then covers.
    async durable() {
      if (await opened().inTransaction()) return false;
      await db.flush();
      return true;
    },
    async stats(options) {
      const stats = await opened().stats(options);
      return { ...stats, applySteps, longestStepMs: longestStep.ms, longestStep, slowSteps,
               longestFlushMs: Math.round(longestFlushMs), longestSyncMs: Math.round(longestSyncMs), longestCommitMs: Math.round(longestCommitMs),
               longestReadMs: Math.round(longestRead.ms), longestReadSql: longestRead.sql, lastApply };
    },
    async close() {
      const current = db;
      db = null;
      await reader?.close();
      reader = null;
      await current?.close();
      return null;
    },
  };

  return async ({ id, method, args }) => {
    try {
      const handler = methods[method];
      if (handler == null) throw new Error(`unknown method ${method}`);
      post({ id, result: await handler(...args) });
    } catch (e) {
      post({ id, error: { name: e?.name ?? 'Error', message: String(e?.message ?? e), code: e?.code } });
    }
  };
}
