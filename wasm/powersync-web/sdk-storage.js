// Where @powersync/web's own database keeps a file, read and written here
// so that oplite can adopt it and hand it back (adoption.js). The formats
// are those of the SDK's wa-sqlite VFSs (docs/web-sdk.md, "Moving between
// the SDK's own database and oplite"):
//
// - 'opfs' (its OPFSCoopSyncVFS): the SQLite file itself at the OPFS path
//   of the database name, beside `-journal` and `-wal` files that are empty
//   unless a transaction was cut short; the Web Lock `ahp:<path>` guards
//   them, and a message on the BroadcastChannel of that name asks its
//   holder to let go.
// - 'idb' (its IDBBatchAtomicVFS): the IndexedDB database named after the
//   file, version 6, with the store 'metadata' ({name: path, fileSize,
//   version}) and the store 'blocks' ({path, offset: minus the byte
//   offset, version, data}, one page each). Versions count down with each
//   transaction: the current block at an offset is the one with the lowest
//   version not below the metadata's. The lock is `lock##IDB(<name>):<path>##access`.
//
// The path is the name as a file URL's path ('app.db' is '/app.db').
// Encrypted files are the same bytes, encrypted.
import { done, request } from './idb-store.js';

const JOURNAL_MAGIC = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7];
const IDB_VERSION = 6;

function pathOf(name) {
  return new URL(name, 'file://').pathname;
}

/** Runs fn while holding the SDK's lock on `name` for `kind`. */
async function withSdkLock(name, kind, fn) {
  const path = pathOf(name);
  if (kind === 'idb') return navigator.locks.request(`lock##IDB(${name}):${path}##access`, fn);
  // An open OPFSCoopSyncVFS holds its lock until asked for it.
  const channel = new BroadcastChannel(`ahp:${path}`);
  channel.postMessage(null);
  const asking = setInterval(() => channel.postMessage(null), 1000);
  try {
    return await navigator.locks.request(`ahp:${path}`, () => {
      clearInterval(asking);
      return fn();
    });
  } finally {
    clearInterval(asking);
    channel.close();
  }
}

// ---------------------------------------------------------------------------
// OPFS

async function opfsFile(name, suffix) {
  const root = await navigator.storage.getDirectory();
  try {
    const file = await (await root.getFileHandle(name + suffix)).getFile();
    return new Uint8Array(await file.arrayBuffer());
  } catch (e) {
    if (e?.name === 'NotFoundError' || e?.name === 'TypeMismatchError') return null;
    throw e;
  }
}

async function removeOpfs(name) {
  const root = await navigator.storage.getDirectory();
  // The file first: what is left after a crash is then at most an empty
  // or stale journal, which nothing reads without its file.
  for (const suffix of ['', '-journal', '-wal']) {
    await root.removeEntry(name + suffix).catch((e) => { if (e?.name !== 'NotFoundError') throw e; });
  }
}

async function writeOpfs(name, bytes) {
  await removeOpfs(name);
  const root = await navigator.storage.getDirectory();
  // A writable replaces the file when it closes, all at once.
  const writable = await (await root.getFileHandle(name, { create: true })).createWritable({ keepExistingData: false });
  await writable.write(bytes);
  await writable.close();
}

// ---------------------------------------------------------------------------
// IndexedDB

/** The SDK's IndexedDB database of `name`, or null when there is none (never creates one). */
async function openSdkIdb(name, create) {
  const existing = (await indexedDB.databases()).find((d) => d.name === name);
  if (existing == null && !create) return null;
  if (existing != null && existing.version < IDB_VERSION) {
    throw new Error(`the SDK's IndexedDB database ${JSON.stringify(name)} has version ${existing.version}, older than ${IDB_VERSION}: ` +
      'open it once with @powersync/web 1.11 or newer, which upgrades it, then with oplite');
  }
  if (existing != null && existing.version > IDB_VERSION) {
    throw new Error(`the SDK's IndexedDB database ${JSON.stringify(name)} has version ${existing.version}, newer than the ${IDB_VERSION} this adapter reads`);
  }
  const req = indexedDB.open(name, IDB_VERSION);
  req.onupgradeneeded = () => {
    req.result.createObjectStore('blocks', { keyPath: ['path', 'offset', 'version'] });
    req.result.createObjectStore('metadata', { keyPath: 'name' });
  };
  return request(req);
}

async function idbFile(idb, path) {
  const tx = idb.transaction(['blocks', 'metadata'], 'readonly');
  const range = IDBKeyRange.bound([path, -Infinity], [path, Infinity]);
  const [meta, blocks] = await Promise.all([request(tx.objectStore('metadata').get(path)), request(tx.objectStore('blocks').getAll(range))]);
  if (meta == null) return null;
  const bytes = new Uint8Array(meta.fileSize);
  const seen = new Set();
  // In key order: offsets from the end of the file, each offset's lowest version first.
  for (const block of blocks) {
    const start = -block.offset;
    if (block.version < meta.version || seen.has(start)) continue;
    seen.add(start);
    if (start < meta.fileSize) bytes.set(block.data.subarray(0, meta.fileSize - start), start);
  }
  return bytes;
}

function clearIdbPaths(tx, path) {
  for (const p of [path, `${path}-journal`, `${path}-wal`]) {
    tx.objectStore('blocks').delete(IDBKeyRange.bound([p, -Infinity], [p, Infinity]));
    tx.objectStore('metadata').delete(p);
  }
}

async function writeIdb(name, bytes) {
  const idb = await openSdkIdb(name, true);
  try {
    const path = pathOf(name);
    const pageSize = pageSizeOf(bytes);
    const tx = idb.transaction(['blocks', 'metadata'], 'readwrite', { durability: 'strict' });
    clearIdbPaths(tx, path);
    for (let at = 0; at < bytes.length; at += pageSize) {
      tx.objectStore('blocks').put({ path, offset: -at, version: 0, data: bytes.slice(at, at + pageSize) });
    }
    tx.objectStore('metadata').put({ name: path, fileSize: bytes.length, version: 0 });
    await done(tx);
  } finally {
    idb.close();
  }
}

// The page size in a database header (bytes 16-17, big-endian, 1 meaning
// 65536); SQLite3MultipleCiphers leaves bytes 16 to 23 readable.
function pageSizeOf(bytes) {
  const raw = bytes.length >= 18 ? (bytes[16] << 8) | bytes[17] : 0;
  const size = raw === 1 ? 65536 : raw;
  if (size < 512 || (size & (size - 1)) !== 0 || bytes.length % size !== 0) {
    throw new Error(`not a database image: page size ${size}, ${bytes.length} bytes`);
  }
  return size;
}

// ---------------------------------------------------------------------------

const isHotJournal = (journal) => journal != null && journal.length >= 8 && JOURNAL_MAGIC.every((b, i) => journal[i] === b);

/**
 * The database `name` as the SDK's own database stored it on `kind`
 * ('opfs' or 'idb'): {main, journal}, journal a hot rollback journal or
 * null; null when the SDK holds no such database.
 */
export function readSdkDatabase(name, kind) {
  return withSdkLock(name, kind, async () => {
    let main;
    let journal;
    if (kind === 'opfs') {
      [main, journal] = [await opfsFile(name, ''), await opfsFile(name, '-journal')];
    } else {
      const idb = await openSdkIdb(name, false);
      if (idb == null) return null;
      try {
        [main, journal] = [await idbFile(idb, pathOf(name)), await idbFile(idb, `${pathOf(name)}-journal`)];
      } finally {
        idb.close();
      }
    }
    if (main == null || main.length === 0) return null;
    return { main, journal: isHotJournal(journal) ? journal : null };
  });
}

/** Stores `bytes` as the SDK's own database `name` on `kind`, replacing what was there. */
export function writeSdkDatabase(name, kind, bytes) {
  return withSdkLock(name, kind, () => (kind === 'opfs' ? writeOpfs(name, bytes) : writeIdb(name, bytes)));
}

/**
 * Removes the SDK's own database `name` on `kind`, if any. On IndexedDB a
 * connection still open elsewhere blocks that: it fails at once then (the
 * deletion still happens once that connection closes), without holding
 * the SDK's lock meanwhile, which would stall that connection.
 */
export async function removeSdkDatabase(name, kind) {
  if (kind === 'opfs') return withSdkLock(name, kind, () => removeOpfs(name));
  if (!(await indexedDB.databases()).some((d) => d.name === name)) return undefined;
  return new Promise((resolve, reject) => {
    const req = indexedDB.deleteDatabase(name);
    req.onsuccess = () => resolve();
    req.onerror = () => reject(req.error);
    req.onblocked = () => reject(new Error(`the SDK's own IndexedDB database ${JSON.stringify(name)} is open elsewhere; it is deleted once that closes`));
  });
}

/**
 * The name of a Web Lock that shows the SDK's own database `name` open or
 * in use in some tab, or null: its OPFS file's lock (held while open), a
 * transaction's lock on its IndexedDB file, its adapter's connection locks
 * and its shared sync worker's. An idle IndexedDB database holds none.
 * (PowerSyncDatabase's own locks, `lock-<name>` and `streaming-sync-*`,
 * are taken over oplite's adapter too, so they say nothing.)
 */
export async function sdkDatabaseInUse(name) {
  const path = pathOf(name);
  const exact = new Set([`ahp:${path}`, `lock##IDB(${name}):${path}##access`, `db-lock-${name}`]);
  const { held = [], pending = [] } = await navigator.locks.query();
  const lock = [...held, ...pending].find((l) => exact.has(l.name) || l.name?.startsWith(`shared-connection-${name}-`));
  return lock?.name ?? null;
}
