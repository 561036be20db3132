// Encrypted databases through PowerSyncDatabase (run.mjs; docs/web-sdk.md),
// bundled into the test page: window.encryptionChecks(config) opens a
// database with an encryptionKey, the SDK's own (its SQLite3MultipleCiphers
// build of wa-sqlite) or oplite's, on config.vfs; writes a marker; opens it
// again with a wrong key and with none, then with the right one; and
// searches the stored bytes for the marker and SQLite's plain header. Both
// databases must give the same answers.
import * as sdk from '@powersync/web';
import { databaseOptions } from './databases.mjs';
import { storedNeedles } from '../../wasm/test/stored-bytes.mjs';

const MARKER = 'local-marker-5d1c9e0b';
const FILE = 'encrypted.db';

function source({ core, vfs, inThread }, encryptionKey) {
  return databaseOptions({ core, vfs, dbFilename: FILE, multiTab: false, inThread, encryptionKey });
}

// Where each database keeps the file.
function storage({ core, vfs }) {
  if (core === 'oplite') return vfs === 'opfs' ? { opfs: ['oplite', FILE] } : { idb: `oplite:${FILE}`, store: 'chunks' };
  return vfs === 'opfs' ? { opfsFile: FILE } : { idb: FILE, store: 'blocks', field: 'data' };
}

// fn(db) on a database opened with `key`, closed after; resolves to what
// fn returned, or 'refused' if opening or fn failed.
async function withDatabase(config, schema, key, fn) {
  const db = new sdk.PowerSyncDatabase({ schema, ...source(config, key) });
  try {
    await db.init();
    return await fn(db);
  } catch {
    return 'refused';
  } finally {
    await db.close().catch(() => {});
  }
}

window.encryptionChecks = async (config) => {
  const schema = new sdk.Schema({ notes: new sdk.Table({ body: sdk.column.text }) });
  const written = await withDatabase(config, schema, 'correct horse', async (db) => {
    await db.execute("INSERT INTO notes (id, body) VALUES ('m', ?)", [MARKER]);
    return (await db.get('SELECT count(*) AS n FROM ps_crud')).n;
  });
  const read = (db) => db.get("SELECT body FROM notes WHERE id = 'm'").then((r) => r.body);
  const wrongKey = await withDatabase(config, schema, 'wrong', read);
  const noKey = await withDatabase(config, schema, undefined, read);
  const rightKey = await withDatabase(config, schema, 'correct horse', read);
  const stored = await storedNeedles({ where: storage(config), needles: [MARKER, 'SQLite format 3'] });
  return { written, wrongKey, noKey, rightKey, plaintext: stored.found, filesRead: stored.files > 0 };
};
