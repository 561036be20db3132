// oplite for the web: a promise-based API over the wasm module (SQLite with
// the oplite sync extension). Runs in dedicated Workers (all storages), in
// windows (memory, idb) and in Node (memory). Types: oplite.d.ts.
//
//   import { open, syncStream } from './oplite.js';
//   const db = await open({ name: 'app', vfs: 'opfs' });
//   await db.execute('INSERT INTO notes(id, body) VALUES (?, ?)', [id, body]);
//   const rows = await db.query('SELECT * FROM notes WHERE id = ?', [id]);
//
// Calls are queued: each runs alone, in order, synchronously inside the
// module, so a transaction() callback sees nobody else's writes. Listeners
// of onTablesChanged() hear about each committed write transaction.
// db.openReader() adds a read-only second connection with its own queue: it
// reads the last committed state while a transaction() is open, also once
// that transaction has written pages into the file (see Reader).
//
// Cross-tab safety: opening an 'opfs' or 'idb' database takes a Web Lock
// named after it; a second tab or worker gets a DatabaseLockedError (or
// waits, with onLocked: 'wait') until the first closes it. For 'opfs' the
// OPFS access handles are exclusive as well, so even code that bypasses
// the lock cannot write the file twice.

import initWasm, * as wasm from './oplite_wasm.js';
import { ApplyPacer } from './apply-pacing.js';
import { IdbStore } from './idb-store.js';

const isNode = typeof process !== 'undefined' && process.versions != null && process.versions.node != null;

let loading = null;

/** Loads the wasm module once. `source` may be a URL, a Response, bytes or a WebAssembly.Module. */
export function load(source) {
  if (loading == null) {
    loading = (async () => {
      let input = source;
      if (input === undefined && isNode) {
        // Not a literal: bundlers for the web then leave Node's fs alone.
        const specifier = 'node:fs';
        const fs = await import(/* webpackIgnore: true */ /* @vite-ignore */ specifier);
        input = fs.readFileSync(new URL('./oplite_wasm_bg.wasm', import.meta.url));
      }
      await initWasm(input === undefined ? undefined : { module_or_path: input });
    })();
  }
  return loading;
}

/** Thrown by open() when another tab or worker has the database open. */
export class DatabaseLockedError extends Error {
  constructor(name, vfs) {
    super(`database ${JSON.stringify(name)} (${vfs}) is open in another tab or worker; ` +
      `close it there, or open with onLocked: 'wait'`);
    this.name = 'DatabaseLockedError';
  }
}

const openMemoryNames = new Set();

/**
 * Takes the cross-tab lock of database `name` on `vfs` (open() takes it
 * too); resolves to the function that releases it.
 */
export async function acquireLock(name, vfs, onLocked) {
  const locks = globalThis.navigator && globalThis.navigator.locks;
  if (!locks) {
    if (vfs === 'memory') return () => {};
    throw new Error(`the ${vfs} storage needs the Web Locks API (navigator.locks)`);
  }
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  const acquired = new Promise((resolve, reject) => {
    locks.request(`oplite:${vfs}:${name}`, { ifAvailable: onLocked !== 'wait' }, (lock) => {
      if (lock == null) {
        reject(new DatabaseLockedError(name, vfs));
        return undefined;
      }
      resolve();
      return held;
    }).catch(reject);
  });
  await acquired;
  return release;
}

// ---------------------------------------------------------------------------

/**
 * Opens (creating if needed) a database and runs powersync_init().
 * @param {{name: string, vfs?: 'memory'|'opfs'|'idb', onLocked?: 'error'|'wait', wasm?: any}} options
 */
export async function open(options) {
  const { name, vfs = 'memory', onLocked = 'error', key } = options || {};
  if (typeof name !== 'string') throw new TypeError('open(): name must be a string');
  if (key != null && (typeof key !== 'string' || key === '')) throw new TypeError('open(): key must be a non-empty string (or absent: no encryption)');
  if (!['memory', 'opfs', 'idb'].includes(vfs)) {
    throw new TypeError(`open(): unknown vfs ${JSON.stringify(vfs)}; use 'memory', 'opfs' or 'idb'`);
  }
  await load(options.wasm);
  if (vfs === 'memory') {
    if (openMemoryNames.has(name)) throw new DatabaseLockedError(name, vfs);
    openMemoryNames.add(name);
  }
  let release = () => {};
  let store = null;
  let settle = null;
  try {
    // skipLockForTests exists so tests can show that OPFS refuses a second
    // writer by itself; never use it in an app. lockHeld: the caller holds
    // the lock already (acquireLock).
    if (vfs !== 'memory' && !options.skipLockForTests && !options.lockHeld) release = await acquireLock(name, vfs, onLocked);
    // prepare: run under the lock before the file is read (the web SDK
    // adapter adopts the SDK's own stored database there); what it returns
    // is told whether the open succeeded.
    settle = (await options.prepare?.()) ?? null;
    if (vfs === 'idb') {
      store = await IdbStore.open(name);
      await store.loadInto(name);
    }
    const raw = await wasm.openDatabase(name, vfs, key ?? undefined);
    raw.takeChangedTables(); // powersync_init's own writes
    const db = new Database(raw, name, vfs, store, () => {
      release();
      if (vfs === 'memory') openMemoryNames.delete(name);
    });
    if (store != null) {
      store.raw = raw;
      store.kick();
    }
    await settle?.(true);
    return db;
  } catch (e) {
    if (store != null) {
      store.close();
      wasm.mirrorForget(name);
    }
    try {
      await settle?.(false);
    } catch {
      // What prepare undoes is its own to report.
    }
    release();
    if (vfs === 'memory') openMemoryNames.delete(name);
    throw e;
  }
}

// Sync events return instructions as JSON text; a few ops return a scalar.
function controlResult(value) {
  return typeof value === 'string' && value.startsWith('[') ? JSON.parse(value) : value;
}

class Transaction {
  constructor(db) {
    this.db = db;
  }
  execute(sql, params) {
    return this.db._raw().execute(sql, params ?? null);
  }
  query(sql, params) {
    return this.db._raw().query(sql, params ?? null);
  }
  get(sql, params) {
    return this.db._raw().query(sql, params ?? null)[0];
  }
  executeRaw(sql, params) {
    return this.db._raw().executeRaw(sql, params ?? null);
  }
  control(op, payload) {
    return controlResult(this.db._raw().control(op, payload ?? null));
  }
}

// The reads Database and Reader share; each runs fn(raw) through the
// subclass's own queue (_queued).
class Queries {
  /** Runs a query; resolves to its rows as plain objects. */
  query(sql, params) {
    return this._queued((raw) => raw.query(sql, params ?? null));
  }

  /**
   * Runs one statement; resolves to {columnNames, rawRows, changes,
   * lastInsertRowid}, rows as arrays in column order (the PowerSync SDKs'
   * executeRaw shape).
   */
  executeRaw(sql, params) {
    return this._queued((raw) => raw.executeRaw(sql, params ?? null));
  }

  /** The first row of a query, or undefined. */
  async get(sql, params) {
    return (await this.query(sql, params))[0];
  }

  /** Resolves to whether a transaction is open (after the calls queued before it). */
  inTransaction() {
    return this._queued((raw) => !raw.isAutocommit());
  }
}

export class Database extends Queries {
  #raw;
  #queue = Promise.resolve();
  #listeners = new Set();
  #readers = new Set();
  #store;
  #onClose;
  #longestCallMs = 0;
  #inTransaction = false;
  #pacer = new ApplyPacer();

  constructor(raw, name, vfs, store, onClose) {
    super();
    this.#raw = raw;
    this.name = name;
    this.vfs = vfs;
    this.#store = store;
    this.#onClose = onClose;
  }

  _raw() {
    if (this.#raw == null) throw new Error(`database ${JSON.stringify(this.name)} is closed`);
    return this.#raw;
  }

  // Runs fn alone, after every call queued before it.
  #run(fn) {
    const result = this.#queue.then(() => {
      const raw = this._raw();
      const started = performance.now();
      try {
        return fn(raw);
      } finally {
        const took = performance.now() - started;
        if (took > this.#longestCallMs) this.#longestCallMs = took;
        this.#afterCall(raw);
      }
    });
    this.#queue = result.then(() => undefined, () => undefined);
    return result;
  }

  #afterCall(raw) {
    if (this.#inTransaction || !raw.isAutocommit()) return;
    if (this.#store != null) this.#store.kick();
    const tables = raw.takeChangedTables();
    if (tables.length > 0) {
      for (const listener of this.#listeners) {
        try {
          listener(tables);
        } catch (e) {
          setTimeout(() => { throw e; });
        }
      }
    }
  }

  /** Runs a statement (or a script, without params). Resolves to {changes, lastInsertRowid}. */
  execute(sql, params) {
    return this.#run((raw) => raw.execute(sql, params ?? null));
  }

  _queued(fn) {
    return this.#run(fn);
  }

  /**
   * powersync_control(op, payload) in its own transaction; resolves to the
   * parsed instructions. With a Reader open, a call that applies a
   * checkpoint writes its rows in steps first (apply-pacing.js), so the
   * Reader's queries run during the apply.
   */
  control(op, payload) {
    if (this.#readers.size === 0) return this.#run((raw) => controlResult(raw.control(op, payload ?? null)));
    return this.transaction(async (tx) => {
      const raw = this._raw();
      await this.#pacer.run({
        prepare: () => tx.get('SELECT oplite_apply_prepare(?, ?) AS p', [op, payload ?? null]).p,
        step: (rows) => tx.get('SELECT oplite_apply_step(?) AS s', [rows]).s,
        cacheFlush: () => raw.cacheFlush(),
        syncFile: () => raw.syncFile(),
        stats: () => raw.stats(false),
      });
      return tx.control(op, payload);
    });
  }

  /**
   * For a host that runs powersync_control(op, payload) itself, in a
   * transaction it opened with execute(): call this first, in that
   * transaction. If the call will apply a checkpoint, its rows are written
   * now, in steps, with the event loop turning between them (see
   * control()). Resolves to whether it stepped.
   */
  applyInSteps(op, payload) {
    return this.#pacer.run({
      prepare: async () => (await this.executeRaw('SELECT oplite_apply_prepare(?, ?)', [op, payload ?? null])).rawRows[0][0],
      step: async (rows) => (await this.executeRaw('SELECT oplite_apply_step(?)', [rows])).rawRows[0][0],
      cacheFlush: () => this.cacheFlush(),
      syncFile: () => this.syncFile(),
      stats: () => this._queued((raw) => raw.stats(false)),
    });
  }

  /**
   * Runs fn(tx) inside BEGIN IMMEDIATE ... COMMIT (ROLLBACK if it throws).
   * tx has synchronous execute/query/get/control. fn may be async, but
   * nothing else runs on this database until it settles.
   */
  transaction(fn) {
    let resolveOuter;
    let rejectOuter;
    const outer = new Promise((resolve, reject) => { resolveOuter = resolve; rejectOuter = reject; });
    this.#queue = this.#queue.then(async () => {
      let raw;
      try {
        raw = this._raw();
        raw.execute('BEGIN IMMEDIATE', null);
      } catch (e) {
        rejectOuter(e);
        return;
      }
      this.#inTransaction = true;
      try {
        const value = await fn(new Transaction(this));
        raw.execute('COMMIT', null);
        resolveOuter(value);
      } catch (e) {
        if (!raw.isAutocommit()) raw.execute('ROLLBACK', null);
        rejectOuter(e);
      } finally {
        this.#inTransaction = false;
        this.#afterCall(raw);
      }
    });
    return outer;
  }

  /** Calls listener(tables) after each committed write transaction. Returns an unsubscribe function. */
  onTablesChanged(listener) {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Resolves when every committed transaction is durable (waits for IndexedDB writes on 'idb'). */
  async flush() {
    await this.#queue;
    if (this.#store != null) await this.#store.flush();
  }

  /**
   * Inside a write transaction: writes the pages it changed from SQLite's page
   * cache into the file now, keeping them cached, so that COMMIT has less to
   * write (sqlite3_db_cacheflush). Readers keep their snapshot.
   */
  cacheFlush() {
    return this._queued((raw) => raw.cacheFlush());
  }

  /** Syncs the database file now, so that a later COMMIT has less to sync (after cacheFlush). */
  syncFile() {
    return this._queued((raw) => raw.syncFile());
  }

  /** Write counters, memory use and the longest single call into the module so far (ms). */
  async stats({ reset = false } = {}) {
    await this.#queue;
    const out = this._raw().stats(reset);
    out.longestCallMs = this.#longestCallMs;
    Object.assign(out, this.#pacer.report());
    if (this.#store != null) {
      out.idbBatches = this.#store.batches;
      out.idbBatchMs = Math.round(this.#store.batchMs);
    }
    if (reset) this.#longestCallMs = 0;
    return out;
  }

  /**
   * A second, read-only connection to this database ('opfs' and 'idb'):
   * see Reader. close() closes it too.
   */
  async openReader() {
    const reader = new Reader(this._raw().openReader(), this.name, this.vfs, (r) => this.#readers.delete(r));
    this.#readers.add(reader);
    return reader;
  }

  /** Closes the readers, flushes, closes the connection and releases the cross-tab lock. */
  async close() {
    if (this.#raw == null) return;
    for (const reader of [...this.#readers]) await reader.close();
    await this.#queue;
    try {
      if (this.#store != null) await this.#store.flush();
    } finally {
      const raw = this.#raw;
      this.#raw = null;
      try {
        raw.close();
        // A transaction left open has just rolled back: the commits it held
        // back from IndexedDB can be stored now (its flush above failed).
        if (this.#store != null) await this.#store.flush();
        raw.free();
      } finally {
        if (this.#store != null) {
          this.#store.close();
          wasm.mirrorForget(this.name);
        }
        this.#onClose();
      }
    }
  }
}

/**
 * A read-only connection to a database (from db.openReader()), for queries
 * that must not wait behind the writer: calls queue among themselves only.
 * Each read transaction sees the state committed when it began, even while
 * the writer's open transaction writes the file (the module's VFS keeps the
 * pages it overwrites for the reader); neither waits for the other.
 */
export class Reader extends Queries {
  #raw;
  #queue = Promise.resolve();
  #onClose;

  constructor(raw, name, vfs, onClose) {
    super();
    this.#raw = raw;
    this.name = name;
    this.vfs = vfs;
    this.#onClose = onClose;
  }

  // Runs fn alone, after every call of this reader queued before it.
  _queued(fn) {
    const result = this.#queue.then(() => {
      if (this.#raw == null) throw new Error(`the reader of ${JSON.stringify(this.name)} is closed`);
      return fn(this.#raw);
    });
    this.#queue = result.then(() => undefined, () => undefined);
    return result;
  }

  /** Closes the connection; the database stays open. */
  async close() {
    if (this.#raw == null) return;
    await this.#queue;
    const raw = this.#raw;
    this.#raw = null;
    try {
      raw.close();
    } finally {
      raw.free();
      this.#onClose(this);
    }
  }
}

/** The SQLite version inside the module (after load() or open()). */
export function sqliteVersion() {
  return wasm.sqliteVersion();
}

// ---------------------------------------------------------------------------
// A minimal sync driver: powersync_control events in, instructions out, the
// HTTP stream in between. Enough for the demo, the tests and the benchmark;
// SDKs bring their own (credentials, retries, uploads).

function* splitLines(state, text) {
  state.rest += text;
  let start = 0;
  for (;;) {
    const end = state.rest.indexOf('\n', start);
    if (end < 0) break;
    const line = state.rest.slice(start, end);
    start = end + 1;
    if (line.trim() !== '') yield line;
  }
  state.rest = state.rest.slice(start);
}

function* splitBson(state, bytes) {
  if (state.buffer.length === 0) {
    state.buffer = bytes;
  } else {
    const joined = new Uint8Array(state.buffer.length + bytes.length);
    joined.set(state.buffer);
    joined.set(bytes, state.buffer.length);
    state.buffer = joined;
  }
  let start = 0;
  while (state.buffer.length - start >= 4) {
    const b = state.buffer;
    const size = b[start] | (b[start + 1] << 8) | (b[start + 2] << 16) | (b[start + 3] << 24);
    if (size < 5) throw new Error(`invalid BSON document length ${size}`);
    if (b.length - start < size) break;
    yield b.slice(start, start + size);
    start += size;
  }
  state.buffer = state.buffer.slice(start);
}

/**
 * Syncs until the server closes the stream (or CloseSyncStream): start,
 * POST the EstablishSyncStream request to `url`, feed every line to
 * powersync_control, flush storage on FlushFileSystem and after every
 * applied checkpoint (DidCompleteSync), end with stop.
 * Resolves to {lines, completed, status, applyMs}.
 */
export async function syncStream(db, options) {
  const { url, binary = false, parameters = {}, onStatus, onLog, signal, headers = {} } = options;
  const fetchImpl = options.fetch || globalThis.fetch;
  let lastStatus = null;
  let completed = false;
  let closeRequested = false;
  let establish = null;
  const handle = async (instructions) => {
    for (const instruction of instructions) {
      const [kind, payload] = Object.entries(instruction)[0];
      if (kind === 'UpdateSyncStatus') {
        lastStatus = payload.status;
        if (onStatus) onStatus(payload.status);
      } else if (kind === 'EstablishSyncStream') {
        establish = payload.request;
      } else if (kind === 'FlushFileSystem') {
        await db.flush();
      } else if (kind === 'DidCompleteSync') {
        // A synced state is reported only once it is durable (idb: in IndexedDB).
        completed = true;
        await db.flush();
      } else if (kind === 'CloseSyncStream') {
        closeRequested = true;
      } else if (kind === 'LogLine') {
        if (onLog) onLog(payload.severity, payload.line);
      }
    }
  };
  await handle(await db.control('start', JSON.stringify({ parameters })));
  if (establish == null) throw new Error('powersync_control(start) did not ask for a sync stream');
  let lines = 0;
  let applyMs = 0;
  try {
    const response = await fetchImpl(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: binary ? 'application/vnd.powersync.bson-stream' : 'application/x-ndjson',
        ...headers,
      },
      body: JSON.stringify(establish),
      signal,
    });
    if (!response.ok) throw new Error(`sync stream: HTTP ${response.status} ${response.statusText}`);
    await handle(await db.control('connection', 'established'));
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    const state = { rest: '', buffer: new Uint8Array(0) };
    while (!closeRequested) {
      const { value, done: finished } = await reader.read();
      if (finished) break;
      const items = binary ? splitBson(state, value) : splitLines(state, decoder.decode(value, { stream: true }));
      for (const line of items) {
        const started = performance.now();
        const instructions = await db.control(binary ? 'line_binary' : 'line_text', line);
        const took = performance.now() - started;
        lines++;
        if (instructions.some((i) => 'DidCompleteSync' in i)) applyMs += took;
        await handle(instructions);
        if (closeRequested) break;
      }
    }
    if (closeRequested) await reader.cancel().catch(() => {});
    else await handle(await db.control('connection', 'end'));
  } finally {
    await handle(await db.control('stop', null));
    await db.flush();
  }
  return { lines, completed, status: lastStatus, applyMs };
}
