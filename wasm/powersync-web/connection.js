// One oplite database of this page, shared by every OpliteDBAdapter that
// opens it: the Worker (or in-thread host) holding its connections, the
// calls in flight, and the two lock queues. The SDK's own tests, and apps,
// open two PowerSyncDatabase objects on one file in one page; with a
// connection each, the second would find the file held (its OPFS handles
// are exclusive and its Web Lock taken). Here the second adapter joins the
// first's connection: their locks queue in its host (slots.js), and every
// adapter hears of every committed table change. The connection closes
// with its last adapter. With the multiTab option, tabs share it too: one
// owns it (its Worker serves the others), the others are its clients
// (tabs.js).
import { LockContext, queryResultWithoutRows } from '@powersync/common';
import { TabClient, tabsName, toError, waitAtMost } from './tabs.js';

// Open connections by storage and file name.
const connections = new Map();

/**
 * The page's connection to `options.dbFilename` on `options.vfs`, opened
 * on first use; `adapter` is told of table changes until it releases it.
 * A later adapter's other options (cacheSizeKb, worker) are those of the
 * connection already open.
 */
export function acquireConnection(options, adapter) {
  const key = `${options.vfs}:${options.dbFilename}`;
  let connection = connections.get(key);
  if (connection == null || connection.closing) {
    connection = new SharedConnection(options, () => {
      if (connections.get(key) === connection) connections.delete(key);
    });
    connections.set(key, connection);
  }
  connection.adapters.add(adapter);
  return connection;
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

// The host of `dbFilename`'s connections: a Worker running oplite-worker.js
// (`worker`: its URL, or a function returning it), or this thread's.
function startHost({ dbFilename, worker, inThread }, receive) {
  let host;
  if (inThread) return inThreadHost(receive);
  if (typeof worker === 'function') host = worker();
  else host = new Worker(worker ?? new URL('./oplite-worker.js', import.meta.url), { type: 'module', name: `oplite ${dbFilename}` });
  host.onmessage = ({ data }) => receive(data);
  return host;
}

/**
 * One call of a host of its own, which ends after it: for what runs with
 * the database closed (index.js returnToSdkDatabase).
 */
export function callOwnHost(options, method, args) {
  return new Promise((resolve, reject) => {
    const host = startHost(options, ({ id, result, error }) => {
      if (id !== 1) return;
      host.terminate();
      if (error != null) reject(toError(error));
      else resolve(result);
    });
    host.onerror = (event) => {
      host.terminate();
      reject(new Error(`the oplite worker failed: ${event.message ?? 'unknown error'}`));
    };
    host.postMessage({ id: 1, method, args });
  });
}

// The owner went before answering call e.callId of a write lock; `record`
// is this tab's commit record as the next owner has it (tabs.js,
// commitKey). The call's result if it committed; throws e if it did not.
function committedResult(record, e) {
  if (record == null || record.seq < e.callId) throw e;
  if (record.rows > 0) {
    throw Object.assign(new Error(`${e.message}; the statement committed, but the rows it returned were lost`), { committed: true });
  }
  return { columnNames: [], rawRows: [], changes: record.changes, lastInsertRowid: BigInt(record.lastInsertRowid) };
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
  /** The host's counters (not the SDK's: SharedConnection.stats). */
  hostStats(options) {
    return this.#call('stats', [options]);
  }
}

/** A read lock's context whose one statement already ran (SharedConnection.read). */
export class ReadResultContext extends LockContext {
  #result;
  constructor(result) {
    super();
    this.#result = result;
  }
  async executeRaw() {
    return rawResult(this.#result);
  }
}

class SharedConnection {
  adapters = new Set();
  closing = null;
  #name;
  #worker;
  #pending = new Map();
  #nextId = 1;
  #ready;
  // This page's locks, named in the host's queues.
  #nextLock = 1;
  #forget;
  // multiTab, as a client: the way to the owner (then there is no Worker
  // here). #endOwnership releases the owner lock.
  #client = null;
  #endOwnership = () => {};
  // Whether a COMMIT is durable when it returns ('opfs'; 'memory' has
  // nothing to make durable), so that a write lock need not wait for the
  // host to end it; on 'idb' the end waits for IndexedDB.
  #durableAtCommit;

  constructor(options, forget) {
    this.#name = options.dbFilename;
    this.#durableAtCommit = options.vfs !== 'idb';
    this.#forget = forget;
    // multiTab is false for 'memory' (index.js).
    const shared = options.multiTab && globalThis.navigator?.locks != null;
    this.#ready = shared ? this.#elect(options) : this.#open(options, options.onLocked);
    // A connection that did not open (another tab holds the file, a wrong
    // key) is not reused: the next adapter tries again.
    // Nor is its Worker kept (for 'opfs' it released the pool already).
    this.#ready.catch(() => {
      forget();
      this.#worker?.terminate();
    });
  }

  // Starts the Worker and opens the database in it; with tabs ({channel,
  // keep}), the Worker serves the other tabs (tabs.js).
  async #open({ dbFilename, vfs, cacheSizeKb, worker, wasmUrl, inThread, key }, onLocked, tabs = null) {
    this.#worker = startHost({ dbFilename, worker, inThread }, (message) => this.#receive(message));
    this.#worker.onerror = (event) => this.#failAll(new Error(`the oplite worker failed: ${event.message ?? 'unknown error'}`));
    await this.#call('open', [{ name: dbFilename, vfs, onLocked, cacheSizeKb, wasm: inThread ? wasmUrl : undefined, tabs, key }]);
  }

  // multiTab: the owner lock decides. Held, this tab opens the database and
  // serves the others; taken, it becomes a client and waits for the lock,
  // to take over when the owner goes.
  #elect(options) {
    const name = tabsName(options.vfs, options.dbFilename);
    const owned = new Promise((resolve) => { this.#endOwnership = resolve; });
    // keep: commit records this tab may still read (its own as a client).
    const own = (onLocked, keep = []) => this.#open(options, onLocked, { channel: name, keep });
    return new Promise((resolve, reject) => {
      navigator.locks.request(name, { ifAvailable: true }, async (lock) => {
        if (lock != null) {
          try {
            await own(options.onLocked);
            resolve();
          } catch (e) {
            reject(e);
            return undefined;
          }
          return owned;
        }
        this.#client = new TabClient(name, (tables) => this.#tablesChanged(tables));
        resolve();
        navigator.locks.request(name, async () => {
          if (this.closing) return undefined;
          // The owner is gone; what its locks did not commit is not in the file.
          const client = this.#client;
          // Calls from now on (and locks the owner had not granted yet)
          // wait for this tab's own Worker.
          this.#client = null;
          this.#ready = own('wait', [client.commitKey]);
          client.failAll(Object.assign(new Error(`the tab that held database ${JSON.stringify(this.#name)} closed; the call did not complete`), { ownerGone: true }));
          client.close();
          try {
            await this.#ready;
          } catch {
            return undefined;
          }
          return owned;
        });
        return undefined;
      }).catch(reject);
    });
  }

  #tablesChanged(tables) {
    for (const adapter of this.adapters) adapter.connectionTablesChanged(tables);
  }

  // One call of the host's; lock names the lock a statement runs in.
  #call(method, args, lock) {
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, method, args, lock });
    });
  }

  #receive(data) {
    if (data.event === 'tables') {
      this.#tablesChanged(data.tables);
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

  // Runs fn in a lock of the host's queues (slots.js): write locks take
  // turns on the writer, read locks on the reader. With timeoutMs, gives
  // up waiting (the lock is dropped from the queue).
  async exclusive(fn, options, read = false) {
    if (this.closing) throw new Error(`database ${JSON.stringify(this.#name)} is closed`);
    await this.#ready;
    if (this.#client != null) return this.#remoteExclusive(this.#client, fn, options, read);
    const lock = `page:${this.#nextLock++}`;
    const release = () => this.#call('release', [lock]);
    await waitAtMost(this.#call('acquire', [lock, read]), options?.timeoutMs, `a lock on ${this.#name}`, () => release().catch(() => {}));
    const call = (method, args) => this.#call(method, args, lock);
    let result;
    try {
      result = await fn(new OpliteLockContext(call, read));
    } catch (e) {
      // fn's error is the caller's at once; the lock still ends only once
      // what fn committed before it threw is durable.
      release().catch(() => {});
      throw e;
    }
    // A write lock ends once its commits are durable ('idb': in IndexedDB).
    // Otherwise the next call need not wait for the end's answer: the host
    // takes this page's messages in order, so the lock has ended before
    // anything sent later runs. One round trip less per transaction: the
    // sync client's powersync_control calls are one transaction each.
    if (read || this.#durableAtCommit) release().catch(() => {});
    else await release();
    return result;
  }

  /**
   * A read lock of one statement, in one message to the host (or, as a
   * client, one round trip to the owner): resolves to readRaw's result.
   */
  async read(sql, params) {
    if (this.closing) throw new Error(`database ${JSON.stringify(this.#name)} is closed`);
    await this.#ready;
    if (this.#client == null) return this.#call('read', [sql, params]);
    try {
      return await this.#client.read(sql, params);
    } catch (e) {
      // The owner went: a read wrote nothing, so it is asked again (of
      // this tab's own connection once it took over, or the next owner).
      if (e?.ownerGone) return this.read(sql, params);
      throw e;
    }
  }

  // A lock of the owning tab's (multiTab): fn's statements run there.
  async #remoteExclusive(client, fn, options, read) {
    let lock;
    try {
      lock = await client.acquire(read, options?.timeoutMs);
    } catch (e) {
      // Not granted before the owner went: nothing ran, so it waits for
      // this tab's own connection (or the next owner) instead.
      if (e?.ownerGone) return this.exclusive(fn, options, read);
      throw e;
    }
    // The number of this lock's last call that committed, and this tab's
    // commit record once read after the owner went (the lock then ended:
    // no later call of it commits).
    let committed = null;
    let record;
    const call = async (method, args) => {
      try {
        const result = await client.call(lock, method, args);
        if (result?.marked != null) committed = result.marked;
        return result;
      } catch (e) {
        if (read || !e?.ownerGone || e.callId == null) throw e;
        record = await this.#commitRecord(client);
        const result = committedResult(record, e);
        committed = e.callId;
        return result;
      }
    };
    let result;
    try {
      result = await fn(new OpliteLockContext(call, read));
    } catch (e) {
      client.release(lock).catch(() => {});
      throw e;
    }
    // A write lock ends once the owner made its commits durable. If the
    // owner went first, the next one tells whether they are in the file
    // ('idb' may have lost them).
    const released = client.release(lock);
    if (read) {
      released.catch(() => {});
      return result;
    }
    try {
      await released;
    } catch (e) {
      if (!e?.ownerGone || committed == null) throw e;
      record ??= await this.#commitRecord(client);
      if (record == null || record.seq < committed) throw Object.assign(new Error(`${e.message}; what this lock committed was lost`), { ownerGone: true });
    }
    return result;
  }

  // This tab's commit record in the file, read through whoever holds it now; null if none.
  async #commitRecord(client) {
    const sql = 'SELECT value FROM ps_oplite_kv WHERE key = ?';
    const rows = await this.read(sql, [client.commitKey]).then((r) => r.rawRows, () => []);
    return rows.length === 0 ? null : JSON.parse(rows[0][0]);
  }

  /** The host's counters (Stats in oplite.d.ts), in a turn of the writer. */
  stats(options) {
    return this.exclusive((ctx) => ctx.hostStats(options));
  }

  /** `adapter` is done with the connection; the last one closes it. */
  release(adapter) {
    this.adapters.delete(adapter);
    if (this.adapters.size > 0) return Promise.resolve();
    this.closing ??= (async () => {
      this.#forget();
      try {
        await this.#ready;
        if (this.#client != null) {
          this.#client.close();
          return;
        }
        await this.#call('close', []);
      } catch {
        // Not opened (another tab holds it), or already failing: nothing to close.
      } finally {
        this.#worker?.terminate();
        this.#failAll(new Error(`database ${JSON.stringify(this.#name)} is closed`));
        this.#endOwnership();
      }
    })();
    return this.closing;
  }
}
