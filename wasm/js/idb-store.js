// The 'idb' storage's IndexedDB side (open() in oplite.js): the database
// `oplite:<name>` with the file's chunks (store 'chunks', keyed by index)
// and its size (store 'meta', key 'file'); storage.js reads and writes the
// same records to move a whole file in or out.

import * as wasm from './oplite_wasm.js';

// Persistence for the 'idb' storage. The wasm side keeps the file
// in memory and tracks which chunks committed transactions changed (see
// wasm/src/mirror.rs); the writer below takes them as one batch whenever its
// previous IndexedDB transaction is done, so changes coalesce while a write
// is in flight, and writes each batch in one IndexedDB transaction. IndexedDB
// therefore always holds the state after some committed SQLite transaction.

export function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

export function done(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error || new Error('IndexedDB transaction aborted'));
  });
}

/** The IndexedDB database of `name`, created if needed. */
export function openIdb(name) {
  const req = indexedDB.open(`oplite:${name}`, 1);
  req.onupgradeneeded = () => {
    req.result.createObjectStore('chunks');
    req.result.createObjectStore('meta');
  };
  return request(req);
}

// Chunks copied out of the module and put into IndexedDB per task (2 MiB).
const BATCH_SLICE_CHUNKS = 64;

export class IdbStore {
  constructor(idb, chunkSize) {
    this.idb = idb;
    this.chunkSize = chunkSize;
    this.raw = null; // the wasm Database, once open
    this.writing = null; // the running write loop
    this.error = null;
    this.batches = 0;
    // Wall time of the batches' IndexedDB transactions, ms (other calls
    // run between their slices).
    this.batchMs = 0;
  }

  static async open(name) {
    return new IdbStore(await openIdb(name), wasm.idbChunkSize());
  }

  /** Copies the stored file into the wasm module's memory. */
  async loadInto(name) {
    const tx = this.idb.transaction(['chunks', 'meta'], 'readonly');
    const chunks = tx.objectStore('chunks');
    const [meta, keys, values] = await Promise.all([
      request(tx.objectStore('meta').get('file')),
      request(chunks.getAllKeys()),
      request(chunks.getAll()),
    ]);
    wasm.mirrorForget(name);
    if (meta == null) return 0;
    if (meta.chunkSize !== this.chunkSize) {
      throw new Error(`IndexedDB database oplite:${name} uses ${meta.chunkSize}-byte chunks, this build ${this.chunkSize}`);
    }
    for (let i = 0; i < keys.length; i++) wasm.mirrorLoadChunk(name, keys[i], values[i]);
    wasm.mirrorSetSize(name, meta.size);
    return meta.size;
  }

  /** Starts writing if committed changes wait and no write is running. */
  kick() {
    if (this.writing == null && this.raw != null && this.raw.hasCommitted()) {
      this.writing = this.writeLoop().finally(() => { this.writing = null; });
    }
  }

  async writeLoop() {
    for (;;) {
      // null when nothing waits, or while a transaction has uncommitted
      // pages in the file (the end of that transaction kicks again).
      const size = this.raw.beginBatch();
      if (size == null) return;
      const tx = this.idb.transaction(['chunks', 'meta'], 'readwrite');
      const store = tx.objectStore('chunks');
      const raw = this.raw;
      // A slice at a time, the next from the success callback of the last
      // put: the transaction stays open, and queries run between slices.
      // Whatever fails aborts the transaction, so IndexedDB never holds
      // part of a batch.
      const putSlice = () => {
        try {
          const { indices, chunks } = raw.takeChunks(BATCH_SLICE_CHUNKS);
          if (indices.length === 0) {
            store.delete(IDBKeyRange.lowerBound(Math.ceil(size / this.chunkSize)));
            tx.objectStore('meta').put({ size, chunkSize: this.chunkSize }, 'file');
            return;
          }
          let put;
          for (let i = 0; i < indices.length; i++) put = store.put(chunks[i], indices[i]);
          put.onsuccess = putSlice;
        } catch (e) {
          tx.abort();
          throw e;
        }
      };
      const started = performance.now();
      try {
        putSlice();
        await done(tx);
        this.batches++;
        this.batchMs += performance.now() - started;
      } catch (e) {
        // The batch is lost: rewrite everything next time, report now.
        raw.abandonBatch();
        raw.markAllCommitted();
        this.error = e;
        return;
      }
    }
  }

  /** Resolves when everything committed so far is in IndexedDB. */
  async flush() {
    for (;;) {
      const before = this.batches;
      this.kick();
      if (this.writing != null) await this.writing;
      if (this.error != null) {
        const e = this.error;
        this.error = null;
        throw new Error(`writing to IndexedDB failed: ${e && e.message ? e.message : e}`);
      }
      if (this.raw == null || !this.raw.hasCommitted()) return;
      if (this.batches === before) {
        throw new Error('flush() cannot complete while a transaction is open; call it after the transaction');
      }
    }
  }

  close() {
    this.idb.close();
  }
}
