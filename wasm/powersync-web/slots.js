// The lock queues of one database, kept in its host (the Worker), beside
// the connections they guard: write locks take turns on the writer, read
// locks on the reader. Every tab's locks queue here, this page's adapters'
// (over postMessage) and other tabs' (tabs.js, over a BroadcastChannel),
// so a lock of another tab is granted, used and ended without a turn of
// the owning tab's main thread, which may be busy with the app or the
// sync client. A read lock waits for the write locks asked for before it,
// as on the SDK's own single connection, except while the running write
// lock is the sync client's (the host says so at its powersync_control
// call): reads then see the last committed state without waiting for it.
// With no reader ('memory'), read locks take turns on the writer. A write
// lock ends once `durable` resolves ('idb': its commits are in IndexedDB).

export class Slots {
  #writer = Promise.resolve();
  #reader = Promise.resolve();
  #hasReader;
  #durable;
  #syncing = false;
  // Queued or granted locks: key -> {read, onReader, granted, abandoned, grant, end}.
  #slots = new Map();
  #nextOwn = 1;

  /** durable: run at the end of each write lock, before the next one starts. */
  constructor({ hasReader, durable }) {
    this.#hasReader = hasReader;
    this.#durable = durable;
  }

  /**
   * Queues lock `key`: resolves to true once it is granted, to false if
   * it was released first (it never runs).
   */
  acquire(key, read) {
    if (this.#slots.has(key)) throw new Error(`lock ${key} was asked for twice`);
    const onReader = read && this.#hasReader;
    const before = !onReader ? this.#writer : this.#syncing ? this.#reader : Promise.all([this.#reader, this.#writer]);
    const slot = { read, onReader, granted: false, abandoned: false, grant: null, end: null };
    const granted = new Promise((resolve) => { slot.grant = resolve; });
    const ended = new Promise((resolve) => { slot.end = resolve; });
    this.#slots.set(key, slot);
    const turn = before.then(() => {
      if (slot.abandoned) return undefined;
      slot.granted = true;
      slot.grant(true);
      return ended;
    });
    if (onReader) {
      this.#reader = turn;
    } else {
      this.#writer = turn;
      turn.then(() => { this.#syncing = false; });
    }
    return granted;
  }

  /**
   * Ends lock `key` (for a write lock once `durable` resolved; its error
   * is thrown after the lock ended), or drops it from the queue if it was
   * not granted yet. Nothing for a key that holds no lock.
   */
  async release(key) {
    const slot = this.#slots.get(key);
    if (slot == null) return;
    this.#slots.delete(key);
    if (!slot.granted) {
      slot.abandoned = true;
      slot.grant(false);
      return;
    }
    try {
      if (!slot.read) await this.#durable();
    } finally {
      slot.end();
    }
  }

  /** The granted lock `key` ({read, onReader}), or null if it is not granted. */
  held(key) {
    const slot = this.#slots.get(key);
    return slot?.granted ? slot : null;
  }

  /** The keys of the locks, granted or queued, whose key starts with `prefix`. */
  keysStartingWith(prefix) {
    return [...this.#slots.keys()].filter((key) => key.startsWith(prefix));
  }

  /** The running write lock is the sync client's: reads asked for from now on need not wait for it. */
  syncing() {
    this.#syncing = true;
  }

  /** Runs fn(key) in a lock of the host's own. */
  async run(read, fn) {
    const key = `host:${this.#nextOwn++}`;
    await this.acquire(key, read);
    let result;
    try {
      result = await fn(key);
    } catch (e) {
      await this.release(key).catch(() => {});
      throw e;
    }
    await this.release(key);
    return result;
  }

  /** Resolves once every lock queued so far has ended. */
  drained() {
    return Promise.all([this.#writer, this.#reader]);
  }
}
