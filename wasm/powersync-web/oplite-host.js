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
// writer keeps the apply in its page cache (up to APPLY_CACHE_BYTES) until
// COMMIT.
//
// Messages: {id, method, args} -> {id, result} or {id, error}; and, after
// each committed write transaction, {event: 'tables', tables}.
import { open } from './oplite.js';

// The SDK's call (BucketStorageAdapter's rawPowerSyncControl).
const CONTROL = /^\s*SELECT\s+CAST\s*\(\s*powersync_control\s*\(\s*\?\s*,\s*\?\s*\)\s+AS\s+TEXT\s*\)\s*$/i;
// The SDK's readTransaction opens with BEGIN IMMEDIATE; on the reader a
// deferred BEGIN gives the same snapshot without asking for the writer's lock.
const BEGIN_WRITE = /^\s*BEGIN\s+(IMMEDIATE|EXCLUSIVE)(\s+TRANSACTION)?\s*;?\s*$/i;
const COMMIT = /^\s*(COMMIT|END)(\s+TRANSACTION)?\s*;?\s*$/i;
const SQLITE_BUSY = 5;
// An apply step should take about this long.
const STEP_MS = 20;
// During an apply in steps the writer keeps up to this much of its changes
// in its page cache before it spills them into the file (which makes reads
// wait for the COMMIT).
const APPLY_CACHE_BYTES = 512 * 1024 * 1024;

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

// Resolves every waiter in `waiters`; returns the empty list to keep.
function wakeAll(waiters) {
  for (const resolve of waiters) resolve();
  return [];
}

/** A host for one database; `post` sends a message to the adapter. Returns the message handler. */
export function createHost(post) {
  let db = null;
  let reader = null;
  // Rows per apply step, adapted so that a step takes about STEP_MS.
  let stepRows = 2000;
  // For stats(): steps run, the longest, the longest COMMIT and read.
  let applySteps = 0;
  let longestStepMs = 0;
  let longestCommitMs = 0;
  let longestRead = { ms: 0, sql: null };
  // When (Date.now()) the last stepped apply started and ended.
  let lastApply = null;
  // Reads that found the writer's changes in the file and waited for COMMIT.
  let busyReads = 0;
  // The spill threshold is raised from an apply in steps to the end of its
  // transaction. (The numeric form of PRAGMA cache_spill, in KiB when
  // negative, takes effect at once; the boolean form reaches the pager only
  // outside a transaction, so cache_spill = OFF inside the SDK's
  // transaction did nothing.)
  let spillRaised = false;
  // Waiters for the writer's transaction to end (a read that found the
  // database locked by a writer that had to spill), and for the reader's
  // (a COMMIT that found a read transaction open: with a rollback journal
  // the writer must wait for it).
  let idleWaiters = [];
  let readerIdleWaiters = [];

  function opened() {
    if (db == null) throw new Error('the database is not open');
    return db;
  }

  async function afterWrite() {
    if (db == null || (await db.inTransaction())) return;
    if (spillRaised) {
      spillRaised = false;
      // SQLite's default: spill once the cache is full.
      await db.execute('PRAGMA cache_spill = 1');
    }
    idleWaiters = wakeAll(idleWaiters);
  }

  // Before the SDK's powersync_control(op, payload): if that call will apply
  // a checkpoint, writes the apply's rows in steps in the open transaction.
  async function applyInSteps(op, payload) {
    if (reader == null) return;
    const prepared = await db.executeRaw('SELECT oplite_apply_prepare(?, ?)', [op, payload]);
    if (!prepared.rawRows[0][0]) return;
    if (!spillRaised) {
      spillRaised = true;
      await db.execute(`PRAGMA cache_spill = -${APPLY_CACHE_BYTES / 1024}`);
    }
    lastApply = { start: Date.now(), end: null };
    for (;;) {
      const started = performance.now();
      const more = (await db.executeRaw('SELECT oplite_apply_step(?)', [stepRows])).rawRows[0][0];
      const took = Math.max(performance.now() - started, 0.1);
      applySteps++;
      longestStepMs = Math.max(longestStepMs, took);
      stepRows = Math.round(Math.min(Math.max(stepRows * (STEP_MS / took), 100), 200000));
      if (!more) {
        lastApply.end = Date.now();
        return;
      }
      await turnEventLoop();
    }
  }

  async function read(sql, params) {
    if (BEGIN_WRITE.test(sql)) sql = 'BEGIN';
    try {
      for (;;) {
        try {
          const started = performance.now();
          const result = await reader.executeRaw(sql, params);
          const took = performance.now() - started;
          if (took > longestRead.ms) longestRead = { ms: took, sql: sql.slice(0, 200) };
          return result;
        } catch (e) {
          // The writer spilled its changes into the file: wait for its COMMIT.
          if (e?.code !== SQLITE_BUSY || !(await db.inTransaction())) throw e;
          busyReads++;
          await new Promise((resolve) => idleWaiters.push(resolve));
        }
      }
    } finally {
      if (reader != null && !(await reader.inTransaction())) {
        readerIdleWaiters = wakeAll(readerIdleWaiters);
      }
    }
  }

  // A statement on the writer. A COMMIT (or a statement outside a
  // transaction) that finds a read transaction open gets SQLITE_BUSY and is
  // retried once the reader's transaction ends.
  async function write(sql, params) {
    for (;;) {
      try {
        const started = performance.now();
        const result = await opened().executeRaw(sql, params);
        if (COMMIT.test(sql)) longestCommitMs = Math.max(longestCommitMs, performance.now() - started);
        return result;
      } catch (e) {
        const retry = e?.code === SQLITE_BUSY && reader != null && (COMMIT.test(sql) || !(await db.inTransaction()));
        if (!retry || !(await reader.inTransaction())) throw e;
        await new Promise((resolve) => readerIdleWaiters.push(resolve));
      }
    }
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
      try {
        if (CONTROL.test(sql) && params?.length === 2) await applyInSteps(params[0], params[1]);
        return await write(sql, params);
      } finally {
        await afterWrite();
      }
    },
    // One statement, many parameter sets: one message instead of one per set.
    async executeBatch(sql, sets) {
      let changes = 0;
      let lastInsertRowid = 0;
      try {
        for (const params of sets) {
          const result = await write(sql, params);
          changes += result.changes;
          lastInsertRowid = result.lastInsertRowid;
        }
      } finally {
        await afterWrite();
      }
      return { changes, lastInsertRowid };
    },
    // A statement of a read lock, on the reader.
    readRaw(sql, params) {
      opened();
      return read(sql, params);
    },
    flush() {
      return opened().flush();
    },
    async stats(options) {
      const stats = await opened().stats(options);
      return { ...stats, applySteps, longestStepMs: Math.round(longestStepMs), longestCommitMs: Math.round(longestCommitMs),
               longestReadMs: Math.round(longestRead.ms), longestReadSql: longestRead.sql, lastApply, busyReads };
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
