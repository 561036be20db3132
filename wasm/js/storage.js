// Whole database files into and out of oplite's 'opfs' and 'idb'
// storages, for moving a database between oplite and another program's
// storage (the PowerSync web SDK adapter adopts the SDK's own stored
// database and hands one back with these). Bytes move as they are: an
// encrypted file stays encrypted. Each call needs the database closed and
// its cross-tab lock held (acquireLock in oplite.js, or open()'s prepare).
//
// A mark is a short text kept beside the file (on OPFS the file
// oplite/.<name>.mark, a name no database can have; on IndexedDB the
// record 'mark'), so a move cut short by a crash can be recognised and
// finished at the next open.
import * as wasm from './oplite_wasm.js';
import { done, openIdb, request } from './idb-store.js';

function checkVfs(vfs) {
  if (vfs !== 'opfs' && vfs !== 'idb') throw new TypeError(`storage: vfs must be 'opfs' or 'idb', not ${JSON.stringify(vfs)}`);
}

// Database names never start with a dot (database.rs check_name).
const markFile = (name) => `.${name}.mark`;

async function opliteDirectory() {
  const root = await navigator.storage.getDirectory();
  return root.getDirectoryHandle('oplite', { create: true });
}

/** Runs fn(store...) in one IndexedDB transaction on `name`'s database; resolves to fn's result once it completed. */
async function inIdb(name, mode, fn) {
  const idb = await openIdb(name);
  try {
    const tx = idb.transaction(['chunks', 'meta'], mode, { durability: 'strict' });
    const result = fn(tx.objectStore('chunks'), tx.objectStore('meta'));
    await done(tx);
    return await result;
  } finally {
    idb.close();
  }
}

/** Whether oplite's storage holds a database file `name` (of any size). */
export async function hasDatabase(name, vfs) {
  checkVfs(vfs);
  if (vfs === 'opfs') return wasm.opfsHasFile(name);
  return inIdb(name, 'readonly', (_, meta) => request(meta.get('file')).then((file) => file != null));
}

/** Stores `bytes` as the database file `name`, which must not exist yet. */
export async function importDatabase(name, vfs, bytes) {
  checkVfs(vfs);
  if (vfs === 'opfs') return wasm.opfsImportFile(name, bytes);
  const chunkSize = wasm.idbChunkSize();
  return inIdb(name, 'readwrite', (chunks, meta) => {
    chunks.clear();
    for (let i = 0; i * chunkSize < bytes.length; i++) chunks.put(bytes.slice(i * chunkSize, (i + 1) * chunkSize), i);
    meta.put({ size: bytes.length, chunkSize }, 'file');
  });
}

/** The database file `name`. */
export async function exportDatabase(name, vfs) {
  checkVfs(vfs);
  if (vfs === 'opfs') return wasm.opfsExportFile(name);
  return inIdb(name, 'readonly', async (chunks, meta) => {
    const [file, keys, values] = await Promise.all([request(meta.get('file')), request(chunks.getAllKeys()), request(chunks.getAll())]);
    if (file == null) throw new Error(`oplite's IndexedDB storage holds no database ${JSON.stringify(name)}`);
    const bytes = new Uint8Array(file.size);
    for (let i = 0; i < keys.length; i++) {
      const at = keys[i] * file.chunkSize;
      if (at < file.size) bytes.set(values[i].subarray(0, file.size - at), at);
    }
    return bytes;
  });
}

/**
 * Removes the database file `name`. With everything, also what holds it
 * (the OPFS pool directory, the IndexedDB database) and its mark; the
 * storage cannot be used again in this Worker then.
 */
export async function removeDatabase(name, vfs, { everything = false } = {}) {
  checkVfs(vfs);
  if (vfs === 'opfs') {
    await wasm.opfsRemoveFile(name);
    if (!everything) return;
    const dir = await opliteDirectory();
    await dir.removeEntry(name, { recursive: true }).catch((e) => { if (e?.name !== 'NotFoundError') throw e; });
    await setMark(name, vfs, null);
    return;
  }
  if (everything) {
    await request(indexedDB.deleteDatabase(`oplite:${name}`));
    return;
  }
  await inIdb(name, 'readwrite', (chunks, meta) => {
    chunks.clear();
    meta.delete('file');
  });
}

/** The mark of `name`, or null. */
export async function getMark(name, vfs) {
  checkVfs(vfs);
  if (vfs === 'idb') return inIdb(name, 'readonly', (_, meta) => request(meta.get('mark')).then((m) => m ?? null));
  const dir = await opliteDirectory();
  try {
    return await (await (await dir.getFileHandle(markFile(name))).getFile()).text();
  } catch (e) {
    if (e?.name === 'NotFoundError') return null;
    throw e;
  }
}

/** Sets the mark of `name` (null removes it). */
export async function setMark(name, vfs, mark) {
  checkVfs(vfs);
  if (vfs === 'idb') {
    return inIdb(name, 'readwrite', (_, meta) => (mark == null ? meta.delete('mark') : meta.put(mark, 'mark')));
  }
  const dir = await opliteDirectory();
  if (mark == null) {
    await dir.removeEntry(markFile(name)).catch((e) => { if (e?.name !== 'NotFoundError') throw e; });
    return undefined;
  }
  const writable = await (await dir.getFileHandle(markFile(name), { create: true })).createWritable();
  await writable.write(mark);
  return writable.close();
}

/**
 * The database image `main` with its hot rollback journal rolled back (in
 * memory), as SQLite would on opening it; `key` for an encrypted one.
 */
export function rollBackJournal(main, journal, key) {
  return wasm.rollBackJournal(main, journal, key ?? undefined);
}
