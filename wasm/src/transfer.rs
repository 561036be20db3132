//! Whole database files into and out of this module's OPFS storage, and a
//! hot journal rolled back in memory: what adopting a database another
//! program stored (the PowerSync web SDK's own) and handing one back need.
//!
//! An OPFS pool keeps each file behind a header of its own, so files move
//! in and out through the pool here; the IndexedDB storage's chunks are
//! plain records that the JS layer (`js/storage.js`) reads and
//! writes itself. Bytes are copied as they are: an encrypted file stays
//! encrypted, and only opening it checks its key. A transfer needs the
//! database closed in this module, and leaves its pool released, so the
//! next open (here or in another Worker) takes it up again.

use rusqlite::{Connection, OpenFlags};
use sqlite_wasm_rs::vfs::memvfs::MemVfsUtil;
use sqlite_wasm_rs::vfs::transfer::DbTransfer;
use sqlite_wasm_rs::vfs::VfsFilesManager;
use sqlite_wasm_vfs::sahpool::OpfsSAHPoolUtil;
use wasm_bindgen::prelude::*;

use crate::cipher;
use crate::database::{check_name, init, opfs_is_open, opfs_pool};
use crate::errors::{sqlite_error, usage_error};

/// Runs `op` on the released OPFS pool of `name`, and releases it again.
async fn with_pool<T>(name: &str, op: impl FnOnce(&OpfsSAHPoolUtil) -> Result<T, String>) -> Result<T, JsValue> {
    check_name(name)?;
    init()?;
    if opfs_is_open(name) {
        return Err(usage_error(&format!("{name:?} is open: close it before moving its file")));
    }
    let (_, util) = opfs_pool(name).await?;
    let result = op(&util);
    let released = util.pause();
    let value = result.map_err(|e| usage_error(&format!("OPFS storage of {name:?}: {e}")))?;
    released.map_err(|e| usage_error(&format!("releasing the OPFS storage of {name:?}: {e}")))?;
    Ok(value)
}

/// Whether the OPFS storage holds the database file `name`.
#[wasm_bindgen(js_name = opfsHasFile)]
pub async fn opfs_has_file(name: String) -> Result<bool, JsValue> {
    with_pool(&name, |util| util.contains(&name).map_err(|e| e.to_string())).await
}

/// Stores `bytes` as the database file `name`, which must not exist yet,
/// byte for byte (an encrypted image too).
#[wasm_bindgen(js_name = opfsImportFile)]
pub async fn opfs_import_file(name: String, bytes: Vec<u8>) -> Result<(), JsValue> {
    with_pool(&name, |util| util.import_db_unchecked(&name, &bytes).map_err(|e| format!("importing the file: {e}"))).await
}

/// The database file `name`, which must have no journal left to roll back.
#[wasm_bindgen(js_name = opfsExportFile)]
pub async fn opfs_export_file(name: String) -> Result<Vec<u8>, JsValue> {
    with_pool(&name, |util| util.export_db(&name).map_err(|e| format!("exporting the file: {e}"))).await
}

/// Removes the database file `name` and any journal of it.
#[wasm_bindgen(js_name = opfsRemoveFile)]
pub async fn opfs_remove_file(name: String) -> Result<(), JsValue> {
    with_pool(&name, |util| {
        for file in [name.clone(), format!("{name}-journal"), format!("{name}-wal")] {
            util.remove(&file).map_err(|e| format!("removing {file:?}: {e}"))?;
        }
        Ok(())
    })
    .await
}

/// The database `main` after SQLite rolled back its hot `journal` (the
/// rollback journal a transaction cut short left beside it), done in
/// memory; `key` opens an encrypted one. A wrong key fails as an open does.
#[wasm_bindgen(js_name = rollBackJournal)]
pub fn roll_back_journal(main: Vec<u8>, journal: Vec<u8>, key: Option<String>) -> Result<Vec<u8>, JsValue> {
    init()?;
    // Not a name check_name allows, so never a memory database of the app.
    const NAME: &str = "/oplite/rollback.db";
    // SAFETY: memvfs is installed by SQLite's initialisation and used on
    // this thread only.
    let util = unsafe { MemVfsUtil::get() }.map_err(|e| usage_error(&format!("the memory storage: {e}")))?;
    let journal_name = format!("{NAME}-journal");
    let forget = |util: &MemVfsUtil| {
        let _ = util.remove(NAME);
        let _ = util.remove(&journal_name);
    };
    forget(&util);
    let rolled_back = (|| {
        util.import_db_unchecked(NAME, &main).map_err(|e| usage_error(&format!("the database image: {e}")))?;
        util.import_db_unchecked(&journal_name, &journal).map_err(|e| usage_error(&format!("the journal: {e}")))?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags_and_vfs(NAME, flags, cipher::vfs_for("memvfs", key.as_deref()).as_str())
            .map_err(|e| sqlite_error(&e))?;
        // The first read finds the hot journal and rolls it back.
        cipher::unlock(&conn, NAME, key.as_deref())?;
        conn.close().map_err(|(_, e)| sqlite_error(&e))?;
        if util.contains(&journal_name).unwrap_or(false) {
            return Err(usage_error("the journal was not rolled back"));
        }
        util.export_db(NAME).map_err(|e| usage_error(&format!("reading back the database: {e}")))
    })();
    forget(&util);
    rolled_back
}
