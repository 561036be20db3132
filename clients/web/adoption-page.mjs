// Moving a database between the SDK's own storage and oplite's, through
// PowerSyncDatabase (run.mjs; docs/web-sdk.md), bundled into the test page:
// window.adoptionChecks({vfs, key}) has the SDK's own database (its
// OPFSCoopSyncVFS or IDBBatchAtomicVFS, encrypted with `key` if given)
// write rows and queue their uploads; opens the file with oplite, first
// with a wrong key when there is one; writes with oplite; hands the file
// back with returnToSdkDatabase; and opens it with the SDK's own again.
// Each step reports what it read and where the file was stored.
import * as sdk from '@powersync/web';
import { OpliteOpenFactory, returnToSdkDatabase } from '@oplite/powersync-web';

const FILE = 'adopted.db';
const WORKER = '/oplite/oplite-worker.js';

function sdkDatabase(vfs, key) {
  const vfsName = vfs === 'opfs' ? sdk.WASQLiteVFS.OPFSCoopSyncVFS : sdk.WASQLiteVFS.IDBBatchAtomicVFS;
  return { database: { dbFilename: FILE, vfs: vfsName, enableMultiTabs: false, encryptionKey: key } };
}

function opliteDatabase(vfs, key) {
  return { factory: new OpliteOpenFactory({ dbFilename: FILE, vfs, multiTab: false, encryptionKey: key, worker: WORKER }) };
}

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
  if (key) {
    const wrong = await withDatabase(schema, opliteDatabase(vfs, `${key}-wrong`), contents);
    result.wrongKeyRefused = wrong.refused != null;
    result.storedAfterWrongKey = await storedIn(vfs);
  }
  result.opliteRead = await withDatabase(schema, opliteDatabase(vfs, key), write('three'));
  result.storedAfterAdoption = await storedIn(vfs);
  result.opliteReopened = await withDatabase(schema, opliteDatabase(vfs, key), contents);
  result.returned = await returnToSdkDatabase({ dbFilename: FILE, vfs, encryptionKey: key, worker: WORKER })
    .then((report) => ({ changed: report.changed, coreVersion: report.core_version }), (e) => ({ failed: String(e?.message ?? e) }));
  result.storedAfterReturn = await storedIn(vfs);
  result.sdkReadBack = await withDatabase(schema, sdkDatabase(vfs, key), write('four'));
  return result;
};
