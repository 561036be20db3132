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
// uses. Adapters that open the same file in one page share one Worker and
// its connections (connection.js). The SDK syncs in the tab
// (TabLocalStreamingSyncImplementation): the adapter has no shared worker.
import { DBAdapter } from '@powersync/common';
import { ReadResultContext, acquireConnection, callOwnHost } from './connection.js';

// Whether oplite runs in this thread: asked to (worker: false), or where
// there is no Worker.
function runsInThread(worker) {
  return worker === false || (worker == null && typeof Worker === 'undefined');
}

/**
 * The way back to the SDK's own database (docs/web-sdk.md, "Moving between
 * the SDK's own database and oplite"): the database `dbFilename` that
 * oplite stores on `vfs` ('opfs' or 'idb') is rewritten in the PowerSync
 * core's layout (oplite_uninstall(), whose report this resolves to) and
 * moved to the SDK's own storage: its OPFSCoopSyncVFS file for 'opfs', its
 * IDBBatchAtomicVFS database for 'idb' (`sdkVfs` picks the other). Synced
 * rows, queued uploads and the client id come along; oplite's copy is
 * removed. The database must be closed in every tab first. encryptionKey,
 * worker and wasmUrl are the adapter's options.
 */
export function returnToSdkDatabase({ dbFilename, vfs = 'opfs', sdkVfs = vfs, encryptionKey, worker, wasmUrl } = {}) {
  if (typeof dbFilename !== 'string') return Promise.reject(new TypeError('returnToSdkDatabase: dbFilename must be a string'));
  const inThread = runsInThread(worker);
  const options = { name: dbFilename, vfs, key: encryptionKey || undefined, kind: sdkVfs, wasm: inThread ? wasmUrl : undefined };
  return callOwnHost({ dbFilename, worker, inThread }, 'returnToSdk', [options]);
}

/** Opens an OpliteDBAdapter when the SDK asks (PowerSyncDatabase's `factory` option). */
export class OpliteOpenFactory {
  constructor(options) {
    this.options = options;
  }
  openDB() {
    return new OpliteDBAdapter(this.options);
  }
}

// The SDK's WebDBAdapterConfiguration for these options. The SDK reads
// requiresPersistentTriggers (persistent diff tables for its trigger API)
// in its constructor; @powersync/web 2.4.0 then calls its trigger
// manager before that exists unless the adapter is its own, so it is
// false here, and reads that name a TEMP table run on the writer
// (docs/web-sdk.md).
function configuration({ dbFilename, vfs, cacheSizeKb, inThread, multiTab, key }) {
  return {
    dbFilename,
    vfs,
    cacheSizeKb,
    useWebWorker: !inThread,
    enableMultiTabs: multiTab,
    ssrMode: false,
    disableSSRWarning: false,
    temporaryStorage: 'memory',
    encryptionKey: key,
    additionalReaders: 0,
    requiresPersistentTriggers: false,
  };
}

/**
 * Where the SDK turns multi-tab on by default (its enableMultiTabs):
 * browsers with SharedWorker, but not Safari, iOS or Android.
 */
export function multiTabByDefault() {
  const nav = globalThis.navigator;
  return nav != null && typeof globalThis.SharedWorker !== 'undefined' &&
    !/(Android|iPhone|iPod|iPad)/i.test(nav.userAgent ?? '') && globalThis.safari == null;
}

export class OpliteDBAdapter extends DBAdapter {
  #name;
  #connection;
  #configuration;
  #closed = null;

  /**
   * options: dbFilename (1-128 of A-Z a-z 0-9 - _ ., not starting with a dot);
   * vfs 'opfs' (default), 'idb' or 'memory'; onLocked 'error' (default: a
   * second tab gets DatabaseLockedError) or 'wait'; cacheSizeKb: SQLite's
   * page cache (default 50 MiB, the SDK's own default); worker: a URL of
   * oplite-worker.js, a function returning a Worker running it, or false
   * to run oplite in this thread ('idb' and 'memory' only; the default
   * where there is no Worker); wasmUrl: where oplite_wasm_bg.wasm is, for
   * worker: false when a bundler moved this file away from it. A second
   * adapter on the same file in this page shares the first one's Worker
   * and connections (and its cacheSizeKb and worker). multiTab ('opfs'
   * and 'idb'; enableMultiTabs, the SDK's name, is the same) shares the
   * database with other tabs that open it with multiTab too, instead of
   * failing with DatabaseLockedError: one tab holds it and serves the
   * others (tabs.js); when that tab closes, another takes over. Its
   * default is the SDK's (multiTabByDefault); false keeps one tab.
   * encryptionKey encrypts the file (SQLite3MultipleCiphers, ChaCha20,
   * the SDK's encrypted database's cipher); a wrong or missing key fails
   * the first call with SqliteError code 26. Tabs sharing the database use
   * the key of the tab that opened it.
   */
  constructor({ dbFilename, vfs = 'opfs', onLocked = 'error', cacheSizeKb = 50 * 1024, worker, wasmUrl, enableMultiTabs, multiTab = enableMultiTabs ?? multiTabByDefault(), encryptionKey } = {}) {
    super();
    if (typeof dbFilename !== 'string') throw new TypeError('OpliteDBAdapter: dbFilename must be a string');
    if (encryptionKey != null && typeof encryptionKey !== 'string') throw new TypeError('OpliteDBAdapter: encryptionKey must be a string');
    // Falsy keys mean no encryption, as in the SDK's own database.
    const key = encryptionKey || undefined;
    if (!Number.isInteger(cacheSizeKb) || cacheSizeKb <= 0) throw new TypeError('OpliteDBAdapter: cacheSizeKb must be a positive integer');
    const inThread = runsInThread(worker);
    if (inThread && vfs === 'opfs') {
      throw new TypeError("OpliteDBAdapter: 'opfs' needs a dedicated Worker (OPFS access handles exist only there); use vfs 'idb' without one");
    }
    this.#name = dbFilename;
    multiTab = multiTab === true && vfs !== 'memory';
    this.#configuration = configuration({ dbFilename, vfs, cacheSizeKb, inThread, multiTab, key });
    this.#connection = acquireConnection({ dbFilename, vfs, onLocked, cacheSizeKb, worker, wasmUrl, inThread, multiTab, key }, this);
  }

  get name() {
    return this.#name;
  }

  /** Called by the connection after a committed transaction changed `tables`. */
  connectionTablesChanged(tables) {
    if (!this.#closed) this.iterateListeners((l) => l.tablesUpdated?.({ tables }));
  }

  #exclusive(fn, options, read) {
    if (this.#closed) return Promise.reject(new Error(`database ${JSON.stringify(this.#name)} is closed`));
    return this.#connection.exclusive(fn, options, read);
  }

  readLock(fn, options) {
    return this.#exclusive(fn, options, true);
  }

  writeLock(fn, options) {
    return this.#exclusive(fn, options, false);
  }

  // One statement in a read lock of its own, asked for, run and ended in
  // one message (a read lock and its statement would be two).
  async #readOne(sql, parameters) {
    if (this.#closed) throw new Error(`database ${JSON.stringify(this.#name)} is closed`);
    return new ReadResultContext(await this.#connection.read(sql, parameters ?? []));
  }

  async getAll(sql, parameters) {
    return (await this.#readOne(sql, parameters)).getAll(sql, parameters);
  }

  async getOptional(sql, parameters) {
    return (await this.#readOne(sql, parameters)).getOptional(sql, parameters);
  }

  async get(sql, parameters) {
    return (await this.#readOne(sql, parameters)).get(sql, parameters);
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
    if (this.#closed) return Promise.reject(new Error(`database ${JSON.stringify(this.#name)} is closed`));
    return this.#connection.stats(options);
  }

  close() {
    this.#closed ??= this.#connection.release(this);
    return this.#closed;
  }
}
