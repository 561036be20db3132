// Moving a database between @powersync/web's own storage and oplite's
// (docs/web-sdk.md, "Moving between the SDK's own database and oplite").
//
// Adoption: when oplite opens a database it has never stored and the SDK's
// own database holds one of that name (on the same storage first, then on
// the other), oplite takes the file over: synced rows, the upload queue and
// the client id come along, and powersync_init brings the schema to
// oplite's as it does natively. The SDK's copy is removed once oplite's
// open succeeded, so the data lives in one place; a refused open (a wrong
// key) leaves it as it was.
//
// The way back (returnToSdk): oplite_uninstall() rewrites the file in the
// reference core's layout, the file goes to the SDK's storage, and
// oplite's storage is removed.
//
// A mark beside oplite's copy (storage.js) says how far a move got, so a
// crash at any point is finished or undone at the next open, without ever
// removing the last copy:
//   adopting:<kind>  oplite's copy is not confirmed yet: dropped, and the
//                    adoption done again from the SDK's copy (still there);
//   adopted:<kind>   oplite's copy is the database: the SDK's is removed;
//   returning:<kind> the way back did not end: oplite's copy is still the
//                    database, and the SDK's, perhaps partly written, goes;
//   returned:<kind>  the SDK's copy is complete and is the database:
//                    oplite's goes (and the open adopts the SDK's again).
// Nothing is adopted while the SDK's own database is open in a tab (its
// Web Locks say so): the open fails with a message instead.
import { acquireLock, load, open } from './oplite.js';
import { exportDatabase, getMark, hasDatabase, importDatabase, removeDatabase, rollBackJournal, setMark } from './storage.js';
import { readSdkDatabase, removeSdkDatabase, sdkDatabaseInUse, writeSdkDatabase } from './sdk-storage.js';

// The SDK's storages a database for oplite's `vfs` is looked for in, in order.
function sourcesFor(vfs) {
  const kinds = [vfs];
  if (vfs === 'idb' && typeof navigator.storage?.getDirectory === 'function') kinds.push('opfs');
  if (vfs === 'opfs') kinds.push('idb');
  return kinds;
}

// Finishes or undoes a move that a mark says was cut short.
async function recover(name, vfs) {
  const mark = await getMark(name, vfs);
  if (mark == null) return;
  const [state, kind] = mark.split(':');
  // A copy goes only while the other is there: it may be the last one.
  const opliteHasIt = await hasDatabase(name, vfs);
  const sdkHasIt = async () => (await readSdkDatabase(name, kind)) != null;
  if (state === 'adopting' || state === 'returned') {
    if (opliteHasIt && (await sdkHasIt())) await removeDatabase(name, vfs);
  } else if ((state === 'adopted' || state === 'returning') && opliteHasIt) {
    try {
      await removeSdkDatabase(name, kind);
    } catch (e) {
      // Kept for the next open; this one goes on with oplite's copy.
      console.warn(`oplite: removing the SDK's ${kind} copy of ${JSON.stringify(name)} failed: ${e?.message ?? e}`);
      return;
    }
  }
  await setMark(name, vfs, null);
}

function refuseWhileInUse(name, holder) {
  throw new Error(`the SDK's own database ${JSON.stringify(name)} is open in another tab (it holds the Web Lock ${JSON.stringify(holder)}): ` +
    'close it there, then open the database with oplite, which takes the file over');
}

/**
 * open()'s prepare for `name` on `vfs` ('opfs' or 'idb'), under oplite's
 * lock: adopts the SDK's own database if oplite has none. Resolves to
 * what open() tells whether it succeeded, or null.
 */
export async function adoptSdkDatabase({ name, vfs, key }) {
  if (vfs === 'memory') return null;
  await recover(name, vfs);
  if (await hasDatabase(name, vfs)) return null;
  // Before reading: reading asks an open OPFS database to let go of its file.
  const holder = await sdkDatabaseInUse(name);
  for (const kind of sourcesFor(vfs)) {
    const image = await readSdkDatabase(name, kind);
    if (image == null) continue;
    if (holder != null) {
      // Nothing of oplite's is left behind: its storage holds no file yet.
      await removeDatabase(name, vfs, { everything: true });
      refuseWhileInUse(name, holder);
    }
    await setMark(name, vfs, `adopting:${kind}`);
    const bytes = image.journal == null ? image.main : rollBackJournal(image.main, image.journal, key);
    await importDatabase(name, vfs, bytes);
    return async (opened) => {
      if (!opened) {
        // Refused (a wrong key, say): as if nothing had happened.
        await removeDatabase(name, vfs, { everything: true });
        return;
      }
      // Never throws: the database is open and is oplite's now.
      try {
        await setMark(name, vfs, `adopted:${kind}`);
        await removeSdkDatabase(name, kind);
        await setMark(name, vfs, null);
      } catch (e) {
        // The next open removes it.
        console.warn(`oplite: adopted ${JSON.stringify(name)} from the SDK's ${kind} storage, but removing that copy failed: ${e?.message ?? e}`);
      }
    };
  }
  return null;
}

/**
 * The way back: the database `name` on oplite's `vfs`, rewritten for the
 * PowerSync core, moves to the SDK's own storage `kind` (by default the
 * same). The database must be closed in every tab. Resolves to
 * oplite_uninstall()'s report.
 */
export async function returnToSdk({ name, vfs, key, kind = vfs, wasm }) {
  if (vfs !== 'opfs' && vfs !== 'idb') throw new TypeError(`returnToSdk: vfs must be 'opfs' or 'idb', not ${JSON.stringify(vfs)}`);
  if (kind !== 'opfs' && kind !== 'idb') throw new TypeError(`returnToSdk: kind must be 'opfs' or 'idb', not ${JSON.stringify(kind)}`);
  await load(wasm);
  const release = await acquireLock(name, vfs, 'error');
  try {
    await recover(name, vfs);
    if (!(await hasDatabase(name, vfs))) throw new Error(`returnToSdk: oplite's ${vfs} storage holds no database ${JSON.stringify(name)}`);
    const db = await open({ name, vfs, key, wasm, lockHeld: true });
    let report;
    try {
      const rows = await db.transaction((tx) => tx.query('SELECT oplite_uninstall() AS report'));
      report = JSON.parse(rows[0].report);
    } finally {
      await db.close();
    }
    await setMark(name, vfs, `returning:${kind}`);
    await writeSdkDatabase(name, kind, await exportDatabase(name, vfs));
    await setMark(name, vfs, `returned:${kind}`);
    await removeDatabase(name, vfs, { everything: true });
    return report;
  } finally {
    release();
  }
}
