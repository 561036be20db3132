// Moving a database between the SDK's own storage and oplite's, through
// PowerSyncDatabase (run.mjs; docs/web-sdk.md), bundled into the test page:
// window.adoptionChecks({vfs, key}) has the SDK's own database (its
// OPFSCoopSyncVFS or IDBBatchAtomicVFS, encrypted with `key` if given)
// write rows and queue their uploads; opens the file with oplite, first
// with a wrong key when there is one; writes with oplite; hands the file
// back with returnToSdkDatabase; and opens it with the SDK's own again.
// Each step reports what it read and where the file was stored.
import * as sdk from '@powersync/web';
import { returnToSdkDatabase } from '@oplite/powersync-web';
import { databaseOptions } from './databases.mjs';

const FILE = 'adopted.db';
const sdkDatabase = (vfs, encryptionKey) => databaseOptions({ core: 'bundled', vfs, dbFilename: FILE, multiTab: false, encryptionKey });
const opliteDatabase = (vfs, encryptionKey, inThread = false) =>
  databaseOptions({ core: 'oplite', vfs, dbFilename: FILE, multiTab: false, encryptionKey, inThread });

// Where the file is now: in the SDK's storage, in oplite's, or both.
async function storedIn(vfs) {
  const idbNames = (await indexedDB.databases()).map((d) => d.name);
  const root = await navigator.storage.getDirectory();
  const opfsFile = await root.getFileHandle(FILE).then((h) => h.getFile()).then((f) => f.size > 0, () => false);
  const opliteDir = await root.getDirectoryHandle('oplite').then((d) => d.getDirectoryHandle(FILE)).then(() => true, () => false);
  const where = [];
  if (vfs === 'opfs' ? opfsFile : idbNames.includes(FILE)) where.push('sdk');
  if (vfs === 'opfs' ? opliteDir : idbNames.includes(`oplite:${FILE}`)) where.push('oplite');
  return where;
}

// What a database holds: the notes, the queued uploads, the client id, and
// which core answered.
async function contents(db) {
  const notes = (await db.getAll('SELECT body FROM notes ORDER BY body')).map((r) => r.body);
  const queued = (await db.getAll('SELECT data FROM ps_crud ORDER BY id')).map((r) => JSON.parse(r.data).data?.body ?? null);
  const { id } = await db.get('SELECT powersync_client_id() AS id');
  // oplite's ps_buckets has a column the core's lacks.
  const { n } = await db.get("SELECT count(*) AS n FROM pragma_table_info('ps_buckets') WHERE name = 'oplite_op_count'");
  return { notes, queued, clientId: id, oplite: n > 0 };
}

// fn(db) on a database opened from `source`, closed after; 'refused' if opening or fn failed.
async function withDatabase(schema, source, fn) {
  const db = new sdk.PowerSyncDatabase({ schema, ...source });
  try {
    await db.init();
    return await fn(db);
  } catch (e) {
    return { refused: String(e?.message ?? e).slice(0, 200) };
  } finally {
    await db.close().catch(() => {});
  }
}

window.adoptionChecks = async ({ vfs, key }) => {
  const schema = new sdk.Schema({ notes: new sdk.Table({ body: sdk.column.text }) });
  const write = (body) => async (db) => {
    await db.execute('INSERT INTO notes (id, body) VALUES (uuid(), ?)', [body]);
    return contents(db);
  };
  const result = {};
  result.sdkWrote = await withDatabase(schema, sdkDatabase(vfs, key), async (db) => {
    await db.execute('INSERT INTO notes (id, body) VALUES (uuid(), ?)', ['one']);
    return write('two')(db);
  });
  result.storedAfterSdk = await storedIn(vfs);
  if (vfs === 'opfs') {
    // While the SDK's own database is open (its Web Lock held), oplite
    // refuses to take the file over, and changes nothing.
    const open = new sdk.PowerSyncDatabase({ schema, ...sdkDatabase(vfs, key) });
    await open.init();
    const whileOpen = await withDatabase(schema, opliteDatabase(vfs, key), contents);
    result.refusedWhileSdkOpen = /is open in another tab/.test(whileOpen.refused ?? '');
    result.sdkStillReads = (await contents(open)).notes;
    await open.close();
    result.storedAfterRefusal = await storedIn(vfs);
  }
  if (key) {
    const wrong = await withDatabase(schema, opliteDatabase(vfs, `${key}-wrong`), contents);
    result.wrongKeyRefused = wrong.refused != null;
    result.storedAfterWrongKey = await storedIn(vfs);
  }
  result.opliteRead = await withDatabase(schema, opliteDatabase(vfs, key), write('three'));
  result.storedAfterAdoption = await storedIn(vfs);
  result.opliteReopened = await withDatabase(schema, opliteDatabase(vfs, key), contents);
  result.returned = await returnToSdkDatabase({ dbFilename: FILE, vfs, encryptionKey: key, worker: '/oplite/oplite-worker.js' })
    .then((report) => ({ changed: report.changed, coreVersion: report.core_version }), (e) => ({ failed: String(e?.message ?? e) }));
  result.storedAfterReturn = await storedIn(vfs);
  result.sdkReadBack = await withDatabase(schema, sdkDatabase(vfs, key), write('four'));
  return result;
};

// A rollback journal as SQLite writes one (its file format): a header
// (magic, record count, checksum seed, the file's size in pages before the
// transaction, sector and page size) padded to a sector, then per page
// its number, its bytes before the transaction, and a checksum of some of
// them.
function rollbackJournal(pages, originalPages, pageSize) {
  const SECTOR = 512;
  const seed = 0x5eed1234;
  const journal = new Uint8Array(SECTOR + pages.length * (pageSize + 8));
  const view = new DataView(journal.buffer);
  journal.set([0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]);
  [pages.length, seed, originalPages, SECTOR, pageSize].forEach((value, i) => view.setUint32(8 + 4 * i, value));
  pages.forEach(({ number, bytes }, i) => {
    const at = SECTOR + i * (pageSize + 8);
    view.setUint32(at, number);
    journal.set(bytes, at + 4);
    let sum = seed;
    for (let k = pageSize - 200; k > 0; k -= 200) sum = (sum + bytes[k]) >>> 0;
    view.setUint32(at + 4 + pageSize, sum);
  });
  return journal;
}

async function writeOpfsFile(name, bytes) {
  const root = await navigator.storage.getDirectory();
  const writable = await (await root.getFileHandle(name, { create: true })).createWritable({ keepExistingData: false });
  await writable.write(bytes);
  await writable.close();
}

// The SDK's own database on OPFS writes rows; its file is then made what a
// crash in the middle of a later transaction can leave: every page after
// the first overwritten, two pages appended, and the hot journal that
// holds the pages as they were. (Page 1 stays: an encrypted file's page 1
// must be one the key decrypts, and a real crash leaves it old or new,
// both sound.) oplite, adopting it, must roll the journal back.
window.hotJournalCheck = async ({ key }) => {
  const schema = new sdk.Schema({ notes: new sdk.Table({ body: sdk.column.text }) });
  const written = await withDatabase(schema, sdkDatabase('opfs', key), async (db) => {
    await db.execute('INSERT INTO notes (id, body) VALUES (uuid(), ?)', ['one']);
    await db.execute('INSERT INTO notes (id, body) VALUES (uuid(), ?)', ['two']);
    return contents(db);
  });
  const root = await navigator.storage.getDirectory();
  const original = new Uint8Array(await (await (await root.getFileHandle(FILE)).getFile()).arrayBuffer());
  const pageSize = 4096;
  const count = original.length / pageSize;
  const pages = Array.from({ length: count }, (_, i) => ({ number: i + 1, bytes: original.slice(i * pageSize, (i + 1) * pageSize) }));
  const crashed = new Uint8Array(original.length + 2 * pageSize).fill(0xa5);
  crashed.set(original.subarray(0, pageSize));
  await writeOpfsFile(FILE, crashed);
  await writeOpfsFile(`${FILE}-journal`, rollbackJournal(pages, count, pageSize));
  const adopted = await withDatabase(schema, opliteDatabase('opfs', key), async (db) => ({
    ...(await contents(db)),
    integrity: (await db.get('PRAGMA integrity_check')).integrity_check,
  }));
  return { written, adopted, storedAfter: await storedIn('opfs') };
};

// A way back cut short while it wrote the SDK's copy (IndexedDB, oplite in
// the page): oplite's storage is marked 'returning', and the SDK's storage
// holds a torn file. oplite's next open keeps its own copy, whole, and
// removes the torn one.
window.interruptedReturnCheck = async () => {
  const schema = new sdk.Schema({ notes: new sdk.Table({ body: sdk.column.text }) });
  const inPage = () => opliteDatabase('idb', undefined, true);
  await withDatabase(schema, sdkDatabase('idb'), async (db) => {
    await db.execute('INSERT INTO notes (id, body) VALUES (uuid(), ?)', ['one']);
  });
  const adopted = await withDatabase(schema, inPage(), async (db) => {
    await db.execute('INSERT INTO notes (id, body) VALUES (uuid(), ?)', ['two']);
    return contents(db);
  });
  // Served from the package, not bundled (a variable keeps esbuild out).
  const served = (file) => import(`${location.origin}/oplite/${file}`);
  const storage = await served('storage.js');
  const sdkStorage = await served('sdk-storage.js');
  await storage.setMark(FILE, 'idb', 'returning:idb');
  const torn = new Uint8Array(2 * 4096);
  torn.set(new TextEncoder().encode('SQLite format 3\0'));
  torn[16] = 0x10;
  await sdkStorage.writeSdkDatabase(FILE, 'idb', torn);
  const storedBefore = await storedIn('idb');
  const reopened = await withDatabase(schema, inPage(), contents);
  return { adopted, storedBefore, reopened, storedAfter: await storedIn('idb'), mark: await storage.getMark(FILE, 'idb') };
};
