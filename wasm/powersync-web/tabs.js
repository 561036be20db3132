// Sharing one database between tabs (the multiTab option): one tab, elected
// with the Web Lock `oplite-owner:<vfs>:<name>`, holds the database's Worker,
// which serves the other tabs over a BroadcastChannel of the same name. A
// tab's lock (read or write) becomes a slot in the Worker's queues: the
// client asks for it, the owner grants it when its turn comes, the
// client's statements run in it on the owner's connections, and the client
// releases it. Each client holds a Web Lock of its own while it lives; the
// owner waits on it, so a client tab that closes mid-lock has its lock
// released (its open write transaction rolled back) instead of blocking
// everyone. When the owner closes, the first tab waiting on the owner lock
// takes over: the locks it was granted fail, and it opens the Worker
// itself (connection.js); a tab that finds another tab took over hears it
// from the new owner ('owner'), and asks it again for the locks it waits
// for. Nothing committed is lost: it is in the file.
//
// A write of a client tab that commits also records, in the same
// transaction, the number of its call under the tab's key in ps_oplite_kv
// (the host's tabWrite). When the owner goes before its answer arrives,
// the client reads that key from the next owner to learn whether the call
// committed (connection.js), instead of failing a write that is in the
// file and inviting a retry that would write it twice.
//
// Messages (all on the channel; `to` names the receiver):
//   client -> owner: {type: 'acquire', from, lock, read, once?} | {type: 'call', from, lock, id, method, args}
//                    | {type: 'release', from, lock}
//   owner -> client: {type: 'granted', to, lock, ran?} | {type: 'released', to, lock, error?} (the slot ended, its commits durable)
//                    | {type: 'result', to, id, result} | {type: 'error', to, id, error}
//   owner -> all:    {type: 'tables', tables} | {type: 'owner'} (a new owner serves from now on)
//   (every owner message names its owner in `by`)
// A read lock of one statement (once: {id, args}, a readRaw call) is
// granted with ran: true, the owner runs the call and ends the lock itself
// (one round trip instead of two). An owner that does not know `once`
// grants it plainly, and the client then sends the call and the release.

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

/** The ps_oplite_kv key of a client tab's last committed call. */
export function commitKey(tab) {
  return `tab_commit:${tab}`;
}

/** The error of a call whose owner went; callId names a call that was sent. */
function ownerGone(message, callId = null) {
  return Object.assign(new Error(message), { ownerGone: true, callId });
}

/**
 * An error as a message carries it (errorMessage), and back (toError: also
 * for the Worker's errors, with SQLite's extended code when there is one).
 */
function errorMessage(e) {
  return { name: e?.name ?? 'Error', message: String(e?.message ?? e), code: e?.code, ownerGone: e?.ownerGone };
}

export function toError(error) {
  if (error.ownerGone) return ownerGone(error.message);
  return Object.assign(new Error(error.message), { name: error.name, code: error.code });
}

/**
 * The owner's side, in the owning tab's host (oplite-host.js: its Worker),
 * so the owning tab's main thread is never in the way of another tab's
 * call. `host` is {slots, call, tabWrite, rollback}: the host's lock
 * queues (slots.js), a statement call in a granted lock, a client's write
 * call that records its commit, and the rollback of an open transaction.
 */
export class TabServer {
  #channel;
  #host;
  // Named in every message, so clients can tell this owner's from a previous one's.
  #id = crypto.randomUUID();
  #watched = new Set();

  constructor(channelName, host) {
    this.#host = host;
    this.#channel = new BroadcastChannel(channelName);
    this.#channel.onmessage = ({ data }) => this.#receive(data);
    // Clients still waiting on a previous owner ask again.
    this.#post({ type: 'owner' });
  }

  /**
   * Deletes the commit records of tabs that are gone (no tab holds their
   * life lock), but those in `keep`; a tab still alive may yet need its own.
   */
  async forgetGoneTabs(keep) {
    const { held } = await locks().query();
    const alive = held.map((l) => l.name).filter((n) => n?.startsWith('oplite-tab:')).map((n) => commitKey(n.slice('oplite-tab:'.length)));
    alive.push(...keep);
    const sql = "DELETE FROM ps_oplite_kv WHERE key LIKE 'tab\\_commit:%' ESCAPE '\\' AND key NOT IN (SELECT value FROM json_each(?))";
    await this.#host.slots.run(false, (key) => this.#host.call(key, 'executeRaw', [sql, [JSON.stringify(alive)]])).catch(() => {});
  }

  /** Tells every client tab of committed table changes. */
  tablesChanged(tables) {
    this.#post({ type: 'tables', tables });
  }

  #receive(message) {
    if (message.to !== 'owner') return;
    this.#watch(message.from);
    const key = `tab:${message.from}/${message.lock}`;
    if (message.type === 'acquire') this.#acquire(message, key);
    else if (message.type === 'call') this.#call(message, key);
    else if (message.type === 'release') this.#release(message, key);
  }

  async #acquire({ from, lock, read, once }, key) {
    try {
      if (!(await this.#host.slots.acquire(key, read))) return;
    } catch {
      // Asked for twice: the first request stands.
      return;
    }
    if (!read || once == null) {
      this.#post({ type: 'granted', to: from, lock });
      return;
    }
    this.#post({ type: 'granted', to: from, lock, ran: true });
    try {
      this.#post({ type: 'result', to: from, id: once.id, result: await this.#host.call(key, 'readRaw', once.args) });
    } catch (e) {
      this.#post({ type: 'error', to: from, id: once.id, error: errorMessage(e) });
    } finally {
      await this.#host.slots.release(key).catch(() => {});
    }
  }

  // The slot ends once its commits are durable ('idb': in IndexedDB);
  // only then does the client hear its write lock ended.
  async #release({ from, lock }, key) {
    const granted = this.#host.slots.held(key) != null;
    try {
      await this.#host.slots.release(key);
      if (granted) this.#post({ type: 'released', to: from, lock });
    } catch (e) {
      if (granted) this.#post({ type: 'released', to: from, lock, error: errorMessage(e) });
    }
  }

  #post(message) {
    try {
      this.#channel.postMessage({ ...message, by: this.#id });
    } catch {
      // Closed: the client learns from the owner lock.
    }
  }

  // Only in a lock this owner granted: a call sent to an owner that went
  // must not run inside another tab's transaction here.
  async #call({ from, id, method, args }, key) {
    try {
      const slot = this.#host.slots.held(key);
      if (slot == null) throw ownerGone('the lock this call ran in ended: the tab holding the database changed');
      const result = slot.read
        ? await this.#host.call(key, method, args)
        : await this.#host.tabWrite(key, method, args, { key: commitKey(from), seq: id });
      this.#post({ type: 'result', to: from, id, result });
    } catch (e) {
      this.#post({ type: 'error', to: from, id, error: errorMessage(e) });
    }
  }

  // The client's own Web Lock is granted to us once the client is gone:
  // its locks end, a write transaction it left open is rolled back.
  #watch(from) {
    if (this.#watched.has(from)) return;
    this.#watched.add(from);
    locks().request(`oplite-tab:${from}`, async () => {
      this.#watched.delete(from);
      for (const key of this.#host.slots.keysStartingWith(`tab:${from}/`)) {
        if (this.#host.slots.held(key)?.read === false) await this.#host.rollback().catch(() => {});
        await this.#host.slots.release(key).catch(() => {});
      }
    });
  }

  close() {
    this.#channel.close();
    for (const key of this.#host.slots.keysStartingWith('tab:')) this.#host.slots.release(key).catch(() => {});
  }
}

/** A client tab's side. */
export class TabClient {
  #channel;
  #id = crypto.randomUUID();
  #nextLock = 1;
  #nextCall = 1;
  // Locks asked for and not granted yet: lock -> {read, resolve, reject}.
  #granted = new Map();
  // Locks granted by the owner serving now, and by owners that went.
  #held = new Set();
  #dead = new Set();
  #released = new Map();
  // Calls in flight: id -> {resolve, reject}.
  #calls = new Map();
  #onTables;
  #releaseLife;
  #closed = null;
  // The owner serving us (its messages' `by`), once we heard from one.
  #owner = null;

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

  /** The ps_oplite_kv key under which owners record this tab's committed calls. */
  get commitKey() {
    return commitKey(this.#id);
  }

  #receive(message) {
    if (message.type === 'tables') {
      this.#onTables(message.tables);
      return;
    }
    if (message.type === 'owner') {
      if (message.by === this.#owner) return;
      this.#owner = message.by;
      this.#ownerChanged();
      return;
    }
    if (message.to !== this.#id) return;
    // A late answer of an owner that went: what it concerned has failed.
    if (this.#owner != null && message.by !== this.#owner) return;
    this.#owner = message.by;
    if (message.type === 'granted') {
      const waiting = this.#granted.get(message.lock);
      if (waiting == null) return;
      this.#granted.delete(message.lock);
      // ran: the owner runs the lock's one call and ends the lock itself.
      if (!message.ran) this.#held.add(message.lock);
      waiting.resolve(message.ran === true);
    } else if (message.type === 'released') {
      const waiting = this.#released.get(message.lock);
      this.#released.delete(message.lock);
      if (message.error) waiting?.reject(toError(message.error));
      else waiting?.resolve();
    } else {
      const call = this.#calls.get(message.id);
      if (call == null) return;
      this.#calls.delete(message.id);
      if (message.type === 'result') call.resolve(message.result);
      else call.reject(toError(message.error));
    }
  }

  // Another tab took over from the owner we talked to: what we had of that
  // owner fails (a call's error names it, for the commit check), and the
  // locks we wait for are asked of the new owner.
  #ownerChanged() {
    const gone = 'the tab that held the database closed; another tab holds it now';
    this.#failInFlight(gone);
    for (const [lock, { read, once }] of this.#granted) this.#send({ type: 'acquire', lock, read, once });
  }

  #failInFlight(message) {
    // The one call of a read lock not granted yet is asked of the new owner with it.
    const asked = new Set([...this.#granted.values()].map((waiting) => waiting.once?.id));
    for (const [id, call] of this.#calls) {
      if (asked.has(id)) continue;
      call.reject(ownerGone(message, id));
      this.#calls.delete(id);
    }
    for (const lock of this.#held) this.#dead.add(lock);
    this.#held.clear();
    for (const waiting of this.#released.values()) waiting.reject(ownerGone(message));
    this.#released.clear();
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
    const granted = new Promise((resolve, reject) => this.#granted.set(lock, { read, resolve, reject }));
    this.#send({ type: 'acquire', lock, read });
    await waitAtMost(granted, timeoutMs, 'a lock of the tab holding the database', () => this.release(lock).catch(() => {}));
    return lock;
  }

  /**
   * A read lock of one statement: resolves to readRaw(sql, params)'s
   * result, run on the owner's reader. Fails with ownerGone when the owner
   * goes first (nothing was written: it may be asked again).
   */
  async read(sql, params) {
    await this.held;
    if (this.#closed) throw this.#closed;
    const lock = this.#nextLock++;
    const once = { id: this.#nextCall++, args: [sql, params] };
    const result = new Promise((resolve, reject) => this.#calls.set(once.id, { resolve, reject }));
    const granted = new Promise((resolve, reject) => this.#granted.set(lock, { read: true, once, resolve, reject }));
    result.catch(() => {});
    this.#send({ type: 'acquire', lock, read: true, once });
    if (await granted) return result;
    // An owner that runs no `once`: the call and the release as for any lock.
    this.#calls.delete(once.id);
    try {
      return await this.call(lock, 'readRaw', once.args);
    } finally {
      this.release(lock).catch(() => {});
    }
  }

  /**
   * One statement call in `lock`, on the owner's connections. Fails with
   * ownerGone when the owner goes first; callId is then the call's number
   * if it was sent (a write may have committed: see commitKey).
   */
  call(lock, method, args) {
    return new Promise((resolve, reject) => {
      if (this.#closed) throw this.#closed;
      if (!this.#held.has(lock)) throw ownerGone('the lock ended: the tab that held the database closed');
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
    if (this.#dead.delete(lock)) return Promise.reject(ownerGone('the tab that held the database closed before the lock ended'));
    const held = this.#held.delete(lock);
    // Not granted yet: the owner ends the slot it queued when it comes.
    this.#send({ type: 'release', lock });
    if (!held) return Promise.resolve();
    return new Promise((resolve, reject) => this.#released.set(lock, { resolve, reject }));
  }

  /** The owner is gone and this tab takes over (or it closes): everything of the owner's fails with `error`, and so does what comes later. */
  failAll(error) {
    this.#closed ??= error;
    for (const [id, call] of this.#calls) call.reject(Object.assign(new Error(error.message), { ownerGone: error.ownerGone, callId: id }));
    this.#calls.clear();
    for (const lock of this.#held) this.#dead.add(lock);
    this.#held.clear();
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
