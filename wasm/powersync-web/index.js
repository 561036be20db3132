// @oplite/powersync-web: oplite as the database of the PowerSync web SDK.
//
//   import { PowerSyncDatabase } from '@powersync/web';
//   import { OpliteOpenFactory } from '@oplite/powersync-web';
//   const db = new PowerSyncDatabase({ schema, factory: new OpliteOpenFactory({ dbFilename: 'app.db', vfs: 'opfs' }) });
//
// The SDK accepts any DBAdapter (@powersync/common); this one keeps the
// oplite-wasm connections in a dedicated Worker (oplite-worker.js) and
// forwards each statement to it. Write locks take turns on the writer; read
// locks take turns on a read-only second connection that sees the last
// committed state. A read lock waits for the write locks asked for before
// it, as on the SDK's own single connection (a read sees the writes an app
// started before it), except while the running write lock is the sync
// client's (a powersync_control call, which may apply a checkpoint in
// steps): reads asked for then see the last committed state, without
// waiting for it or for the write locks queued behind it
// (docs/web-sdk.md). A read statement that names a TEMP table or view of
// the writer runs on the writer; on 'memory' (no second connection) read
// locks run there. Table changes come from oplite's powersync_update_hooks
// after each committed transaction, the mechanism the SDK's own database
// uses. The SDK syncs in
// the tab (TabLocalStreamingSyncImplementation): the adapter has no shared
// worker.
import { DBAdapter, LockContext, queryResultWithoutRows } from '@powersync/common';

/** Opens an OpliteDBAdapter when the SDK asks (PowerSyncDatabase's `factory` option). */
export class OpliteOpenFactory {
  constructor(options) {
    this.options = options;
  }
  openDB() {
    return new OpliteDBAdapter(this.options);
  }
}

/** The error a call got from the Worker, with SQLite's extended code when there is one. */
function toError(error) {
  const e = new Error(error.message);
  e.name = error.name;
  if (error.code != null) e.code = error.code;
  return e;
}

// The SDK's RawQueryResult; its insertId is a number.
function rawResult(result) {
  return {
    columnNames: result.columnNames,
    rawRows: result.rawRows,
    rowsAffected: result.changes,
    insertId: typeof result.lastInsertRowid === 'bigint' ? Number(result.lastInsertRowid) : result.lastInsertRowid,
  };
}

// The host of oplite-worker.js in this thread, behind the same messages.
function inThreadHost(receive) {
  const handle = import('./oplite-host.js').then(({ createHost }) => createHost(receive));
  return {
    postMessage(message) {
      handle.then((h) => h(message), (e) => receive({ id: message.id, error: { name: e?.name ?? 'Error', message: String(e?.message ?? e) } }));
    },
    terminate() {},
  };
}

// A pattern matching SQL that names one of `names` as a whole word; null
// for none.
function namePattern(names) {
  if (names.length === 0) return null;
  const escaped = names.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`(^|[^A-Za-z0-9_$])(${escaped.join('|')})($|[^A-Za-z0-9_$])`, 'i');
}

// The SDK's WebDBAdapterConfiguration for these options. The SDK reads
// requiresPersistentTriggers (persistent diff tables for its trigger API)
// in its constructor; @powersync/web 2.4.0 then calls its trigger
// manager before that exists unless the adapter is its own, so it is
// false here, and reads that name a TEMP table run on the writer
// (docs/web-sdk.md).
function configuration({ dbFilename, vfs, cacheSizeKb, inThread }) {
  return {
    dbFilename,
    vfs,
    cacheSizeKb,
    useWebWorker: !inThread,
    enableMultiTabs: false,
    ssrMode: false,
    disableSSRWarning: false,
    temporaryStorage: 'memory',
    encryptionKey: undefined,
    additionalReaders: 0,
    requiresPersistentTriggers: false,
  };
}

class OpliteLockContext extends LockContext {
  #call;
  #read;
  constructor(call, read) {
    super();
    this.#call = call;
    this.#read = read;
  }
  async executeRaw(sql, params) {
    return rawResult(await this.#call(this.#read ? 'readRaw' : 'executeRaw', [sql, params ?? []]));
  }
  async executeBatch(sql, params = []) {
    if (this.#read) {
      let rowsAffected = 0;
      let insertId;
      for (const set of params) {
        const result = rawResult(await this.#call('readRaw', [sql, set]));
        rowsAffected += result.rowsAffected;
        insertId = result.insertId;
      }
      return queryResultWithoutRows({ rowsAffected, insertId });
    }
    const result = await this.#call('executeBatch', [sql, params]);
    return queryResultWithoutRows({ rowsAffected: result.changes, insertId: Number(result.lastInsertRowid) });
  }
}

export class OpliteDBAdapter extends DBAdapter {
  #name;
  #worker;
  #pending = new Map();
  #nextId = 1;
  #ready;
  #queue = Promise.resolve();
  #readQueue = Promise.resolve();
  #hasReader = false;
  // Whether the running write lock is the sync client's (the host says so
  // at its powersync_control call; forgotten when the lock ends).
  #syncing = false;
  // The writer's TEMP tables and views, as a pattern matching a statement
  // that names one (the host reports them after each statement that may
  // create or drop one); null while there are none.
  #tempNames = null;
  #configuration;
  // 'idb' commits reach IndexedDB after COMMIT: a write lock ends once
  // they are there, so what the SDK was told is written survives a reload.
  #durableAtRelease;
  #closed = null;

  /**
   * options: dbFilename (1-128 of A-Z a-z 0-9 - _ ., not starting with a dot);
   * vfs 'opfs' (default), 'idb' or 'memory'; onLocked 'error' (default: a
   * second tab gets DatabaseLockedError) or 'wait'; cacheSizeKb: SQLite's
   * page cache (default 50 MiB, the SDK's own default); worker: a URL of
   * oplite-worker.js, a function returning a Worker running it, or false
   * to run oplite in this thread ('idb' and 'memory' only; the default
   * where there is no Worker); wasmUrl: where oplite_wasm_bg.wasm is, for
   * worker: false when a bundler moved this file away from it.
   */
  constructor({ dbFilename, vfs = 'opfs', onLocked = 'error', cacheSizeKb = 50 * 1024, worker, wasmUrl } = {}) {
    super();
    if (typeof dbFilename !== 'string') throw new TypeError('OpliteDBAdapter: dbFilename must be a string');
    if (!Number.isInteger(cacheSizeKb) || cacheSizeKb <= 0) throw new TypeError('OpliteDBAdapter: cacheSizeKb must be a positive integer');
    const inThread = worker === false || (worker == null && typeof Worker === 'undefined');
    if (inThread && vfs === 'opfs') {
      throw new TypeError("OpliteDBAdapter: 'opfs' needs a dedicated Worker (OPFS access handles exist only there); use vfs 'idb' without one");
    }
    this.#name = dbFilename;
    this.#configuration = configuration({ dbFilename, vfs, cacheSizeKb, inThread });
    this.#durableAtRelease = vfs === 'idb';
    if (inThread) this.#worker = inThreadHost((message) => this.#receive(message));
    else if (typeof worker === 'function') this.#worker = worker();
    else this.#worker = new Worker(worker ?? new URL('./oplite-worker.js', import.meta.url), { type: 'module', name: `oplite ${dbFilename}` });
    this.#worker.onmessage = ({ data }) => this.#receive(data);
    this.#worker.onerror = (event) => this.#failAll(new Error(`the oplite worker failed: ${event.message ?? 'unknown error'}`));
    this.#ready = this.#call('open', [{ name: dbFilename, vfs, onLocked, cacheSizeKb, wasm: inThread ? wasmUrl : undefined }]).then((opened) => {
      this.#hasReader = opened.reader;
    });
    // Calls await #ready and see its error; this keeps it from being unhandled.
    this.#ready.catch(() => {});
  }

  get name() {
    return this.#name;
  }

  #call(method, args) {
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, method, args });
    });
  }

  #receive(data) {
    if (data.event === 'tables') {
      this.iterateListeners((l) => l.tablesUpdated?.({ tables: data.tables }));
      return;
    }
    if (data.event === 'syncing') {
      this.#syncing = true;
      return;
    }
    const call = this.#pending.get(data.id);
    if (call == null) return;
    this.#pending.delete(data.id);
    if (data.error) call.reject(toError(data.error));
    else call.resolve(data.result);
  }

  #failAll(error) {
    for (const call of this.#pending.values()) call.reject(error);
    this.#pending.clear();
  }

  // A call of a lock context: notes what the host says of TEMP objects.
  async #contextCall(method, args) {
    // A read that names a TEMP table or view of the writer runs there, in
    // a turn of its own on the writer's queue.
    if (method === 'readRaw' && this.#tempNames?.test(args[0])) {
      return this.#exclusive(() => this.#contextCall('executeRaw', args));
    }
    const result = await this.#call(method, args);
    if (Array.isArray(result?.tempNames)) this.#tempNames = namePattern(result.tempNames);
    return result;
  }

  // Runs fn after everything queued before it on the writer (or, with
  // read, on the reader, once the write locks asked for before it are
  // released; see the top of this file). With timeoutMs, gives up waiting
  // (the queue still runs in order behind the abandoned slot).
  async #exclusive(fn, options, read = false) {
    if (this.#closed) throw new Error(`database ${JSON.stringify(this.#name)} is closed`);
    await this.#ready;
    const onReader = read && this.#hasReader;
    let before;
    if (onReader) {
      before = this.#syncing ? this.#readQueue : Promise.all([this.#readQueue, this.#queue]);
    } else {
      before = this.#queue;
    }
    let release;
    const slot = new Promise((resolve) => { release = resolve; });
    if (onReader) {
      this.#readQueue = slot;
    } else {
      this.#queue = slot;
      slot.then(() => { this.#syncing = false; });
    }
    const timeoutMs = options?.timeoutMs;
    if (timeoutMs != null) {
      let timer;
      const timedOut = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for a lock on ${this.#name}`)), timeoutMs);
      });
      try {
        await Promise.race([before, timedOut]);
      } catch (e) {
        before.then(release);
        throw e;
      } finally {
        clearTimeout(timer);
      }
    } else {
      await before;
    }
    try {
      const result = await fn(new OpliteLockContext((method, args) => this.#contextCall(method, args), onReader));
      if (!onReader && this.#durableAtRelease) await this.#call('durable', []);
      return result;
    } finally {
      release();
    }
  }

  readLock(fn, options) {
    return this.#exclusive(fn, options, true);
  }

  writeLock(fn, options) {
    return this.#exclusive(fn, options);
  }

  // A schema change is seen by the next statement on either connection.
  async refreshSchema() {}

  /** What the SDK asks of a web database (WebDBAdapter.getConfiguration). */
  getConfiguration() {
    return this.#configuration;
  }

  /**
   * Resolves when every committed transaction is durable: once the write
   * locks asked for before it ended ('opfs' is durable at each commit, and
   * an 'idb' write lock ends once IndexedDB holds its commits).
   */
  flush() {
    return this.#exclusive(async () => {});
  }

  /** oplite-wasm's counters (Stats in oplite.d.ts): bytes written, memory, the longest call. */
  stats(options) {
    return this.#exclusive(() => this.#call('stats', [options]));
  }

  close() {
    this.#closed ??= (async () => {
      try {
        await this.#ready;
        await this.#queue;
        await this.#readQueue;
        await this.#call('close', []);
      } catch {
        // Not opened (a second tab), or already failing: nothing to close.
      } finally {
        this.#worker.terminate();
        this.#failAll(new Error(`database ${JSON.stringify(this.#name)} is closed`));
      }
    })();
    return this.#closed;
  }
}
