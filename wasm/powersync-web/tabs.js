// Sharing one database between tabs (the multiTab option): one tab, elected
// with the Web Lock `oplite-owner:<vfs>:<name>`, holds the database's Worker
// and serves the other tabs over a BroadcastChannel of the same name. A
// tab's lock (read or write) becomes a slot in the owner's queues: the
// client asks for it, the owner grants it when its turn comes, the
// client's statements run in it on the owner's connections, and the client
// releases it. Each client holds a Web Lock of its own while it lives; the
// owner waits on it, so a client tab that closes mid-lock has its lock
// released (its open write transaction rolled back) instead of blocking
// everyone. When the owner closes, the first tab waiting on the owner lock
// takes over: the locks it was granted fail, and it opens the Worker
// itself (connection.js). Nothing committed is lost: it is in the file.
//
// Messages (all on the channel; `to` names the receiver):
//   client -> owner: {type: 'acquire', from, lock, read} | {type: 'call', from, lock, id, method, args}
//                    | {type: 'release', from, lock}
//   owner -> client: {type: 'granted', to, lock} | {type: 'released', to, lock, error?} (the slot ended, its commits durable)
//                    | {type: 'result', to, id, result} | {type: 'error', to, id, error}
//   owner -> all:    {type: 'tables', tables}

const locks = () => globalThis.navigator.locks;

/**
 * Waits for `promise`; with timeoutMs, at most that long, then calls
 * onTimeout and rejects with an error naming `what`.
 */
export async function waitAtMost(promise, timeoutMs, what, onTimeout) {
  if (timeoutMs == null) return promise;
  let timer;
  const timedOut = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timedOut]);
  } catch (e) {
    onTimeout();
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

/** The channel and owner-lock name of a database. */
export function tabsName(vfs, name) {
  return `oplite-owner:${vfs}:${name}`;
}

/**
 * The owner's side: `connection` is the owning SharedConnection, whose
 * exclusive(fn, options, read) queues a lock and lockedCall(method, args)
 * runs one statement call inside the lock being held.
 */
export class TabServer {
  #channel;
  #connection;
  // Granted or waiting locks of clients: `${from}/${lock}` -> {release, write, abandoned}.
  #locks = new Map();
  #watched = new Set();

  constructor(channelName, connection) {
    this.#connection = connection;
    this.#channel = new BroadcastChannel(channelName);
    this.#channel.onmessage = ({ data }) => this.#receive(data);
  }

  /** Tells every client tab of committed table changes. */
  tablesChanged(tables) {
    this.#channel.postMessage({ type: 'tables', tables });
  }

  #receive(message) {
    if (message.to !== 'owner') return;
    this.#watch(message.from);
    const key = `${message.from}/${message.lock}`;
    if (message.type === 'acquire') this.#acquire(message, key);
    else if (message.type === 'call') this.#call(message);
    else if (message.type === 'release') this.#release(key);
  }

  #acquire({ from, lock, read }, key) {
    const entry = { release: null, write: !read, abandoned: false };
    const released = new Promise((resolve) => { entry.release = resolve; });
    this.#locks.set(key, entry);
    let granted = false;
    // The slot ends once its commits are durable ('idb': in IndexedDB);
    // only then does the client hear its write lock ended.
    this.#connection.exclusive(async () => {
      if (entry.abandoned) return;
      granted = true;
      this.#channel.postMessage({ type: 'granted', to: from, lock });
      await released;
    }, undefined, read).then(
      () => granted && this.#post({ type: 'released', to: from, lock }),
      (e) => granted && this.#post({ type: 'released', to: from, lock, error: { name: e?.name ?? 'Error', message: String(e?.message ?? e), code: e?.code } }),
    ).finally(() => this.#locks.delete(key));
  }

  #post(message) {
    try {
      this.#channel.postMessage(message);
    } catch {
      // Closed: the client learns from the owner lock.
    }
  }

  async #call({ from, id, method, args }) {
    try {
      const result = await this.#connection.lockedCall(method, args);
      this.#channel.postMessage({ type: 'result', to: from, id, result });
    } catch (e) {
      this.#channel.postMessage({ type: 'error', to: from, id, error: { name: e?.name ?? 'Error', message: String(e?.message ?? e), code: e?.code } });
    }
  }

  #release(key) {
    const entry = this.#locks.get(key);
    if (entry == null) return;
    entry.abandoned = true;
    entry.release();
  }

  // The client's own Web Lock is granted to us once the client is gone:
  // its locks end, a write transaction it left open is rolled back.
  #watch(from) {
    if (this.#watched.has(from)) return;
    this.#watched.add(from);
    locks().request(`oplite-tab:${from}`, async () => {
      this.#watched.delete(from);
      for (const [key, entry] of this.#locks) {
        if (!key.startsWith(`${from}/`)) continue;
        if (entry.write && !entry.abandoned) {
          await this.#connection.lockedCall('executeRaw', ['ROLLBACK', []]).catch(() => {});
        }
        this.#release(key);
      }
    });
  }

  close() {
    this.#channel.close();
    for (const key of [...this.#locks.keys()]) this.#release(key);
  }
}

/** A client tab's side. */
export class TabClient {
  #channel;
  #id = crypto.randomUUID();
  #nextLock = 1;
  #nextCall = 1;
  #granted = new Map();
  #released = new Map();
  #calls = new Map();
  #onTables;
  #releaseLife;
  #closed = null;

  constructor(channelName, onTables) {
    this.#onTables = onTables;
    this.#channel = new BroadcastChannel(channelName);
    this.#channel.onmessage = ({ data }) => this.#receive(data);
    // Held while this tab lives: the owner learns of our end from it.
    const life = new Promise((resolve) => { this.#releaseLife = resolve; });
    this.held = new Promise((resolve) => {
      locks().request(`oplite-tab:${this.#id}`, () => { resolve(); return life; });
    });
  }

  #receive(message) {
    if (message.type === 'tables') {
      this.#onTables(message.tables);
      return;
    }
    if (message.to !== this.#id) return;
    if (message.type === 'granted') {
      this.#granted.get(message.lock)?.resolve();
    } else if (message.type === 'released') {
      const waiting = this.#released.get(message.lock);
      this.#released.delete(message.lock);
      if (message.error) waiting?.reject(Object.assign(new Error(message.error.message), { name: message.error.name, code: message.error.code }));
      else waiting?.resolve();
    } else {
      const call = this.#calls.get(message.id);
      if (call == null) return;
      this.#calls.delete(message.id);
      if (message.type === 'error') call.reject(Object.assign(new Error(message.error.message), { name: message.error.name, code: message.error.code }));
      else call.resolve(message.result);
    }
  }

  #send(message) {
    if (this.#closed) throw this.#closed;
    this.#channel.postMessage({ ...message, from: this.#id, to: 'owner' });
  }

  /** A lock of the owner's; resolves to its id once granted. */
  async acquire(read, timeoutMs) {
    await this.held;
    if (this.#closed) throw this.#closed;
    const lock = this.#nextLock++;
    const granted = new Promise((resolve, reject) => this.#granted.set(lock, { resolve, reject }));
    this.#send({ type: 'acquire', lock, read });
    await waitAtMost(granted, timeoutMs, 'a lock of the tab holding the database', () => this.release(lock).catch(() => {}));
    this.#granted.delete(lock);
    return lock;
  }

  /** One statement call in `lock`, on the owner's connections. */
  call(lock, method, args) {
    return new Promise((resolve, reject) => {
      const id = this.#nextCall++;
      this.#calls.set(id, { resolve, reject });
      this.#send({ type: 'call', lock, id, method, args });
    });
  }

  /**
   * Ends `lock`; resolves once the owner ended its slot (for a write lock:
   * once what it committed is durable), rejects if the owner went first.
   */
  release(lock) {
    this.#granted.delete(lock);
    if (this.#closed) return Promise.reject(this.#closed);
    const released = new Promise((resolve, reject) => this.#released.set(lock, { resolve, reject }));
    this.#send({ type: 'release', lock });
    return released;
  }

  /** The owner is gone (or this tab closes): what waits or runs fails with `error`, and so does what comes later. */
  failAll(error) {
    this.#closed ??= error;
    for (const call of this.#calls.values()) call.reject(error);
    this.#calls.clear();
    for (const waiting of [...this.#granted.values(), ...this.#released.values()]) waiting.reject(error);
    this.#granted.clear();
    this.#released.clear();
  }

  close() {
    this.failAll(new Error('the database is closed'));
    this.#channel.close();
    this.#releaseLife();
  }
}
