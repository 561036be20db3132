// The database side of @oplite/powersync-web: owns the oplite-wasm
// connections of one database, its lock queues (slots.js) and, with
// multiTab, the server of the other tabs (tabs.js). It runs in a dedicated
// Worker (oplite-worker.js; OPFS needs one) or, for 'idb' and 'memory'
// where no Worker is available or wanted, in the page itself (worker: false).
//
// Two connections: the writer, and (for 'opfs' and 'idb') a read-only
// reader that serves read locks. A checkpoint's apply is written in steps
// before the SDK's powersync_control call that applies it (oplite.js
// applyInSteps, paced by apply-pacing.js); the event loop turns between
// steps, so reads run meanwhile, on the reader, which sees the last
// committed state: the module's VFS keeps the page images the writer
// overwrites for it (wasm/src/snapshot.rs).
//
// Messages: {id, method, args, lock?} -> {id, result} or {id, error};
// after each committed write transaction, {event: 'tables', tables}. A
// lock is asked for ('acquire', answered once granted), its statements
// name it (`lock`), and 'release' ends it; 'read' is a read lock of one
// statement in one message. A read statement that names a
// TEMP table or view of the writer (the reader cannot see it) runs on the
// writer, in a write lock of its own.
import { open } from './oplite.js';
import { adoptSdkDatabase, returnToSdk } from './adoption.js';
import { LineBatch } from './line-batch.js';
import { Slots } from './slots.js';
import { BEGIN_WRITE, COMMIT, CONTROL_CALL, NAMES_CONTROL, NOT_IN_TRANSACTION, TEMP_DDL, TRANSACTION_CONTROL } from './sql-shapes.js';
import { TabServer } from './tabs.js';

// A pattern matching SQL that names one of `names` as a whole word; null for none.
function namePattern(names) {
  if (names.length === 0) return null;
  const escaped = names.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`(^|[^A-Za-z0-9_$])(${escaped.join('|')})($|[^A-Za-z0-9_$])`, 'i');
}

/** A host for one database; `post` sends a message to the adapter. Returns the message handler. */
export function createHost(post) {
  let db = null;
  let reader = null;
  let slots = null;
  let server = null;
  // The sync client's data lines, committed in batches (line-batch.js);
  // null without a reader ('memory').
  let batch = null;
  // The writer's TEMP tables and views, as a pattern; null while there are none.
  let tempNames = null;
  let unsteppedControlCalls = 0;
  let longestCommitMs = 0;
  let longestRead = { ms: 0, sql: null };
  // The longest statement on the writer (a powersync_control call storing a line, say).
  let longestWrite = { ms: 0, sql: null };
  // The sync client's powersync_control calls: how many, and their time in
  // ms (storing lines, and applying checkpoints, stepped or not).
  const control = { calls: 0, ms: 0 };
  // Every statement's time on the writer and on the reader, ms: with the
  // stepped applies, how busy this Worker was.
  const statementMs = { write: 0, read: 0 };

  function opened() {
    if (db == null) throw new Error('the database is not open');
    return db;
  }

  // Before the SDK's powersync_control(op, payload): if that call will apply
  // a checkpoint, writes the apply's rows in steps in the open transaction
  // (oplite.js applyInSteps); without a reader nothing could read meanwhile.
  async function beforeControl(sql, params) {
    if (!CONTROL_CALL.test(sql) || params?.length !== 2) {
      if (unsteppedControlCalls++ === 0) console.warn(`@oplite/powersync-web: a powersync_control call this adapter does not step: ${sql.slice(0, 200)}`);
      return;
    }
    // The sync client's lock (not the app's subscription calls): reads
    // asked for from now on need not wait for it.
    if (params[0] !== 'subscriptions') slots.syncing();
    if (reader != null) await db.applyInSteps(params[0], params[1]);
  }

  async function read(sql, params) {
    if (BEGIN_WRITE.test(sql)) sql = 'BEGIN';
    const started = performance.now();
    const result = await reader.executeRaw(sql, params);
    const took = performance.now() - started;
    statementMs.read += took;
    if (took > longestRead.ms) longestRead = { ms: took, sql: sql.slice(0, 200) };
    return result;
  }

  async function write(sql, params) {
    const started = performance.now();
    const result = await opened().executeRaw(sql, params);
    const took = performance.now() - started;
    statementMs.write += took;
    if (COMMIT.test(sql)) longestCommitMs = Math.max(longestCommitMs, took);
    if (took > longestWrite.ms) longestWrite = { ms: took, sql: sql.slice(0, 80) };
    if (TEMP_DDL.test(sql)) {
      const names = await db.executeRaw("SELECT name FROM temp.sqlite_schema WHERE type IN ('table', 'view')", []);
      tempNames = namePattern(names.rawRows.map((r) => r[0]));
    }
    return result;
  }

  // A client tab's commit: records `marker` ({key, seq}) in ps_oplite_kv in
  // the transaction about to commit, with the result the tab would lose.
  // Returns whether it could (not before powersync_init made the table).
  async function mark(marker, result) {
    const value = JSON.stringify({ seq: marker.seq, changes: result?.changes ?? 0,
      lastInsertRowid: String(result?.lastInsertRowid ?? 0), rows: result?.rawRows?.length ?? 0 });
    try {
      await db.executeRaw('INSERT OR REPLACE INTO ps_oplite_kv(key, value) VALUES (?, ?)', [marker.key, value]);
      return true;
    } catch {
      return false;
    }
  }

  async function totalChanges() {
    return (await db.executeRaw('SELECT total_changes()', [])).rawRows[0][0];
  }

  // Statement calls, run in the lock they name (inLock checked it).
  const statements = {
    async executeRaw(sql, params) {
      if (!NAMES_CONTROL.test(sql)) return write(sql, params);
      const started = performance.now();
      try {
        await beforeControl(sql, params);
        return await write(sql, params);
      } finally {
        control.calls++;
        control.ms += performance.now() - started;
      }
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
    // A statement of a read lock: on the reader, but with no reader, or
    // naming a TEMP object of the writer's, on the writer.
    readRaw(sql, params, slot) {
      opened();
      if (!slot.onReader) return write(sql, params);
      if (tempNames?.test(sql)) return slots.run(false, () => write(sql, params));
      return read(sql, params);
    },
    async stats(options) {
      const stats = await opened().stats(options);
      return { ...stats, unsteppedControlCalls, longestCommitMs: Math.round(longestCommitMs),
               longestReadMs: Math.round(longestRead.ms), longestReadSql: longestRead.sql,
               longestWriteMs: Math.round(longestWrite.ms), longestWriteSql: longestWrite.sql,
               controlCalls: control.calls, controlMs: Math.round(control.ms),
               writeStatementsMs: Math.round(statementMs.write), readStatementsMs: Math.round(statementMs.read),
               lineBatches: batch?.counts.batches ?? 0, batchedLines: batch?.counts.lines ?? 0 };
    },
  };

  function inLock(key, method) {
    const slot = slots?.held(key);
    if (slot == null) throw new Error(`${method} outside a lock: the lock it was sent in ended`);
    if (slot.read && method !== 'readRaw') throw new Error(`${method} in a read lock`);
    return slot;
  }

  // One statement call in `slot`, the lock it was sent in.
  function run(slot, method, args) {
    return method === 'readRaw' ? statements.readRaw(args[0], args[1], slot) : statements[method](...args);
  }

  // A statement call of this page's lock `key`: on the writer, through
  // the line batches.
  function call(key, method, args) {
    const slot = inLock(key, method);
    if (batch == null || method === 'readRaw' || method === 'stats') return run(slot, method, args);
    const [sql, params] = args;
    return batch.statement(key, sql, method === 'executeRaw' ? params : null, () => run(slot, method, args));
  }

  // A write of another tab's (tabs.js): what it commits carries its
  // marker. Its COMMIT gets the marker first; a statement outside a
  // transaction runs in one of its own, with the marker if it changed a
  // row (a statement SQLite refuses in a transaction runs unmarked).
  async function tabWrite(key, method, args, marker) {
    const [sql] = args;
    const slot = inLock(key, method);
    const statement = () => run(slot, method, args);
    await batch?.commit();
    if (method !== 'executeRaw' && method !== 'executeBatch') return statement();
    if (await opened().inTransaction()) {
      if (method !== 'executeRaw' || !COMMIT.test(sql)) return statement();
      const marked = await mark(marker, null);
      const result = await statement();
      return marked ? { ...result, marked: marker.seq } : result;
    }
    if (method === 'executeRaw' && TRANSACTION_CONTROL.test(sql)) return statement();
    await db.executeRaw('BEGIN IMMEDIATE', []);
    let result;
    try {
      const before = await totalChanges();
      result = await statement();
      if (await totalChanges() !== before && await mark(marker, result)) result = { ...result, marked: marker.seq };
    } catch (e) {
      if (await db.inTransaction()) await db.executeRaw('ROLLBACK', []);
      if (NOT_IN_TRANSACTION.test(String(e?.message))) return statement();
      throw e;
    }
    try {
      await write('COMMIT', []);
    } catch (e) {
      if (await db.inTransaction()) await db.executeRaw('ROLLBACK', []);
      throw e;
    }
    return result;
  }

  // What a write lock left uncommitted is rolled back (its tab went).
  async function rollback() {
    await batch?.commit();
    if (await db?.inTransaction()) await db.executeRaw('ROLLBACK', []);
  }

  const methods = {
    // tabs: with multiTab, {channel, keep} (tabs.js): this host serves the other tabs.
    async open({ name, vfs, onLocked, cacheSizeKb, wasm, tabs, key }) {
      // A database the SDK's own stored under this name is taken over
      // (adoption.js).
      db = await open({ name, vfs, onLocked, wasm, key, prepare: () => adoptSdkDatabase({ name, vfs, key }) });
      await db.execute(`PRAGMA cache_size = -${cacheSizeKb}`);
      if (vfs !== 'memory') {
        reader = await db.openReader();
        await reader.executeRaw(`PRAGMA cache_size = -${cacheSizeKb}`, []);
        // On 'idb' a batch's commit is also an IndexedDB write; smaller
        // batches kept reads from waiting behind it (docs/web-sdk.md).
        batch = new LineBatch(db, write, { maxMs: vfs === 'idb' ? 100 : 500 });
      }
      // At the end of a write lock, what it committed made durable ('idb':
      // stored in IndexedDB), unless it left a transaction open, which the
      // end of a later lock then covers.
      const durable = async () => {
        if (vfs === 'idb' && db != null && !(await db.inTransaction())) await db.flush();
      };
      slots = new Slots({ hasReader: reader != null, durable });
      db.onTablesChanged((tables) => {
        post({ event: 'tables', tables });
        server?.tablesChanged(tables);
      });
      if (tabs != null) {
        server = new TabServer(tabs.channel, { slots, call, tabWrite, rollback });
        server.forgetGoneTabs(tabs.keep);
      }
    },
    // Answers once lock `key` is granted (true), or dropped by a release first (false).
    acquire(key, read) {
      opened();
      return slots.acquire(key, read);
    },
    async release(key) {
      try {
        await batch?.released(key);
      } finally {
        await slots?.release(key);
      }
    },
    // A read lock of one statement (the SDK's get, getAll, getOptional),
    // asked for, run and ended in one message.
    read(sql, params) {
      opened();
      return slots.run(true, (key) => call(key, 'readRaw', [sql, params]));
    },
    // The way back (adoption.js): nothing may be open in this host.
    async returnToSdk(options) {
      if (db != null) throw new Error('returnToSdk: this host has the database open; close it first');
      return returnToSdk(options);
    },
    // Other tabs' locks end (a transaction one of them left open goes with
    // the connection); those of this page's adapters it waits for.
    async close() {
      const current = db;
      server?.close();
      server = null;
      await slots?.drained();
      await batch?.commit();
      batch = null;
      db = null;
      await reader?.close();
      reader = null;
      await current?.close();
      return null;
    },
  };

  return async ({ id, method, args, lock }) => {
    try {
      let result;
      if (Object.hasOwn(statements, method)) result = await call(lock, method, args);
      else if (methods[method] != null) result = await methods[method](...args);
      else throw new Error(`unknown method ${method}`);
      post({ id, result });
    } catch (e) {
      post({ id, error: { name: e?.name ?? 'Error', message: String(e?.message ?? e), code: e?.code } });
    }
  };
}
