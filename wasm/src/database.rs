//! The `Database` class exported to JS: one SQLite connection with oplite
//! registered, on one of the three storages (see the crate docs), and the
//! read-only second connection `openReader()` adds on the same file.
//!
//! Every method is synchronous: SQLite runs on the calling thread (a
//! dedicated Worker in browsers). `js/oplite.js` wraps this class in the
//! promise-based API apps use; this layer stays small and typed so that the
//! JS side only moves values.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Array, Object, Reflect, Uint32Array, Uint8Array};
use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags};
use sqlite_wasm_rs::vfs::VfsFilesManager;
use sqlite_wasm_rs::WasmOsCallback;
use sqlite_wasm_vfs::sahpool::{self, OpfsSAHPoolCfgBuilder, OpfsSAHPoolUtil};
use wasm_bindgen::prelude::*;

use crate::errors::{sqlite_error, usage_error};
use crate::{cipher, mirror, values, vfs_wrapper};

/// Where a database lives.
enum Storage {
    Memory,
    Opfs(OpfsSAHPoolUtil),
    Idb(Rc<RefCell<mirror::MirrorFile>>),
    /// A reader (see [`Database::open_reader`]): its writer owns the storage.
    Reader,
}

/// An open database: the writer connection [`open_database`] returns, or a
/// reader on the same file.
#[wasm_bindgen]
pub struct Database {
    conn: Option<Connection>,
    name: String,
    storage: Storage,
    /// The VFS the connection was opened on (the counting wrapper, or
    /// SQLite3MultipleCiphers' cipher VFS over it for an encrypted file).
    vfs: String,
    /// The key of an encrypted file, for the readers it opens.
    key: Option<String>,
    /// Open readers of the writer; a reader shares its writer's counter.
    readers: Rc<Cell<u32>>,
}

fn set(object: &Object, key: &str, value: JsValue) {
    let _ = Reflect::set(object, &JsValue::from_str(key), &value);
}

/// One-time set-up: oplite on every connection, the IndexedDB VFS.
pub(crate) fn init() -> Result<(), JsValue> {
    thread_local!(static DONE: RefCell<bool> = const { RefCell::new(false) });
    if DONE.with(|d| *d.borrow()) {
        return Ok(());
    }
    oplite::register_auto_extension().map_err(|e| usage_error(&e.to_string()))?;
    mirror::register().map_err(|e| usage_error(&e))?;
    DONE.with(|d| *d.borrow_mut() = true);
    Ok(())
}

/// Checks a database name: it names OPFS directories and IndexedDB stores.
pub(crate) fn check_name(name: &str) -> Result<(), JsValue> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && !name.starts_with('.');
    if ok {
        Ok(())
    } else {
        Err(usage_error(&format!(
            "invalid database name {name:?}: use 1-128 characters from A-Z a-z 0-9 - _ . (not starting with .)"
        )))
    }
}

/// Opens (creating if needed) the database `name` on `vfs` (`memory`,
/// `opfs` or `idb`) and runs `powersync_init()`. For `idb` the JS layer
/// loads the stored chunks with [`mirror_load_chunk`] and
/// [`mirror_set_size`] first. `opfs` works in dedicated Workers only.
///
/// With `key`, the file is encrypted (SQLite3MultipleCiphers, its default
/// cipher ChaCha20, as `@powersync/web`'s encrypted database): the
/// connection goes through the cipher VFS over the counting wrapper, and
/// the key is its first statement ([`cipher`]). A wrong key, no key for an
/// encrypted file, or a key for a plain one fails here, naming the file,
/// and changes nothing.
#[wasm_bindgen(js_name = openDatabase)]
pub async fn open_database(name: String, vfs: String, key: Option<String>) -> Result<Database, JsValue> {
    check_name(&name)?;
    init()?;
    let (base_vfs, storage) = match vfs.as_str() {
        "memory" => ("memvfs".to_owned(), Storage::Memory),
        "idb" => (mirror::VFS_NAME.to_owned(), Storage::Idb(mirror::file(&name))),
        "opfs" => {
            let (vfs_name, util) = opfs_pool(&name).await?;
            (vfs_name, Storage::Opfs(util))
        }
        other => return Err(usage_error(&format!("unknown vfs {other:?}: use 'memory', 'opfs' or 'idb'"))),
    };
    let counted = vfs_wrapper::wrap(&base_vfs).map_err(|e| usage_error(&e))?;
    let vfs = cipher::vfs_for(&counted, key.as_deref());
    match connect(&name, &vfs, key.as_deref()) {
        Ok(conn) => {
            if matches!(storage, Storage::Opfs(_)) {
                OPEN_OPFS.with(|open| open.borrow_mut().insert(name.clone()));
            }
            Ok(Database { conn: Some(conn), name, storage, vfs, key, readers: Rc::new(Cell::new(0)) })
        }
        Err(e) => {
            // A refused open (a wrong key, say) leaves the OPFS pool's
            // access handles free for the next try, here or in another Worker.
            if let Storage::Opfs(util) = &storage {
                let _ = util.pause();
            }
            Err(e)
        }
    }
}

thread_local! {
    /// The OPFS databases open in this module, which [`crate::transfer`]
    /// must not touch.
    static OPEN_OPFS: RefCell<std::collections::HashSet<String>> = RefCell::new(Default::default());
}

/// Whether the OPFS database `name` is open in this module.
pub(crate) fn opfs_is_open(name: &str) -> bool {
    OPEN_OPFS.with(|open| open.borrow().contains(name))
}

/// The OPFS pool of database `name` (the directory `oplite/<name>`),
/// installed as the VFS `oplite-opfs-<name>` and active: its VFS name and
/// its handle.
pub(crate) async fn opfs_pool(name: &str) -> Result<(String, OpfsSAHPoolUtil), JsValue> {
    let vfs_name = format!("oplite-opfs-{name}");
    let config = OpfsSAHPoolCfgBuilder::new().vfs_name(&vfs_name).directory(&format!("oplite/{name}")).build();
    let util = sahpool::install::<WasmOsCallback>(&config, false)
        .await
        .map_err(|e| usage_error(&format!("cannot open OPFS storage for {name:?} (dedicated Worker only): {e}")))?;
    if util.is_paused() {
        util.resume().await.map_err(|e| usage_error(&format!("cannot reopen OPFS storage for {name:?}: {e}")))?;
    }
    Ok((vfs_name, util))
}

/// The writer connection to `name` on `vfs`: unlocked with `key`, oplite
/// initialised, its table-change hooks installed.
fn connect(name: &str, vfs: &str, key: Option<&str>) -> Result<Connection, JsValue> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags_and_vfs(name, flags, vfs).map_err(|e| sqlite_error(&e))?;
    no_busy_wait(&conn)?;
    cipher::unlock(&conn, name, key)?;
    // Table-change notification: oplite's own update/commit/rollback hooks,
    // read back with powersync_update_hooks('get') (PROTOCOL.md §5).
    conn.execute_batch("BEGIN; SELECT powersync_init(); COMMIT; SELECT powersync_update_hooks('install');")
        .map_err(|e| sqlite_error(&e))?;
    Ok(conn)
}

/// Turns off rusqlite's default 5 s busy timeout. Every connection of this
/// module runs on one thread, so nothing can release a lock while SQLite
/// waits (and its sleep blocks the Worker): a lock another connection of
/// the module holds is reported as SQLITE_BUSY at once.
fn no_busy_wait(conn: &Connection) -> Result<(), JsValue> {
    conn.busy_timeout(std::time::Duration::ZERO).map_err(|e| sqlite_error(&e))
}

/// A statement from the connection's cache, which keeps it for the next
/// call unless it is an `EXPLAIN`. SQLite prepares a cached statement again
/// when the schema changed, but an `EXPLAIN` never checks the schema cookie
/// that would tell it: cached, its plan would stay the old one (the SDK's
/// own database does not cache them either), and even a new one is
/// prepared with the schema this connection last loaded, which another
/// connection (the writer, for a reader) may have changed since.
struct Prepared<'c>(Option<rusqlite::CachedStatement<'c>>);

fn prepare<'c>(conn: &'c Connection, sql: &str) -> Result<Prepared<'c>, JsValue> {
    let stmt = conn.prepare_cached(sql).map_err(|e| sqlite_error(&e))?;
    if stmt.is_explain() == 0 {
        return Ok(Prepared(Some(stmt)));
    }
    // A read of sqlite_schema checks the cookie and reloads a changed
    // schema; the EXPLAIN is then prepared again against it.
    stmt.discard();
    conn.prepare("SELECT 1 FROM sqlite_schema LIMIT 1").and_then(|mut check| check.exists([])).map_err(|e| sqlite_error(&e))?;
    conn.prepare_cached(sql).map(|stmt| Prepared(Some(stmt))).map_err(|e| sqlite_error(&e))
}

impl Drop for Prepared<'_> {
    /// Puts the statement back in the cache, or drops it if it is an `EXPLAIN`.
    fn drop(&mut self) {
        if let Some(stmt) = self.0.take() {
            if stmt.is_explain() != 0 {
                stmt.discard();
            }
        }
    }
}

impl<'c> std::ops::Deref for Prepared<'c> {
    type Target = rusqlite::Statement<'c>;
    fn deref(&self) -> &Self::Target {
        self.0.as_ref().expect("a statement until dropped")
    }
}

impl std::ops::DerefMut for Prepared<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.0.as_mut().expect("a statement until dropped")
    }
}

impl Database {
    fn conn(&self) -> Result<&Connection, JsValue> {
        self.conn.as_ref().ok_or_else(|| usage_error("the database is closed"))
    }

    /// Runs `sql` with `params`, stepping through any rows; multiple
    /// statements are allowed when there are no parameters.
    fn run(&self, sql: &str, params: &JsValue) -> Result<(), JsValue> {
        let conn = self.conn()?;
        if params.is_null() || params.is_undefined() {
            return conn.execute_batch(sql).map_err(|e| sqlite_error(&e));
        }
        let mut stmt = prepare(conn, sql)?;
        values::bind(&mut stmt, params).map_err(|e| usage_error(&e))?;
        let mut rows = stmt.raw_query();
        while rows.next().map_err(|e| sqlite_error(&e))?.is_some() {}
        Ok(())
    }
}

#[wasm_bindgen]
impl Database {
    /// A second connection to this database, for reads only: it sees the
    /// last committed state while this connection has a write transaction
    /// open. It is opened read-write (so SQLite takes the same file locks)
    /// with `PRAGMA query_only = 1`; it runs no `powersync_init` and
    /// installs no update hooks. The two connections coordinate through the
    /// locks and read snapshots of [`crate::vfs_wrapper`]: each read
    /// transaction sees the state committed when it began, also after the
    /// writer's open transaction wrote pages into the file, and neither
    /// waits for the other.
    ///
    /// `opfs` and `idb` only. The reader does not own the storage: close
    /// it before its writer ([`Database::close`] refuses while readers are
    /// open).
    #[wasm_bindgen(js_name = openReader)]
    pub fn open_reader(&self) -> Result<Database, JsValue> {
        self.conn()?;
        match self.storage {
            Storage::Opfs(_) | Storage::Idb(_) => {}
            Storage::Memory => {
                return Err(usage_error(&format!(
                    "openReader(): {:?} is a memory database; readers need the 'opfs' or 'idb' storage",
                    self.name
                )))
            }
            Storage::Reader => return Err(usage_error("openReader(): call it on the database, not on a reader")),
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags_and_vfs(&self.name, flags, self.vfs.as_str())
            .map_err(|e| sqlite_error(&e))?;
        no_busy_wait(&conn)?;
        cipher::unlock(&conn, &self.name, self.key.as_deref())?;
        conn.execute_batch("PRAGMA query_only = 1").map_err(|e| sqlite_error(&e))?;
        self.readers.set(self.readers.get() + 1);
        Ok(Database {
            conn: Some(conn),
            name: self.name.clone(),
            storage: Storage::Reader,
            vfs: self.vfs.clone(),
            key: self.key.clone(),
            readers: self.readers.clone(),
        })
    }

    /// The name the database was opened with.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// Runs one statement (or several, without parameters). Returns
    /// `{changes, lastInsertRowid}`.
    pub fn execute(&self, sql: &str, params: JsValue) -> Result<JsValue, JsValue> {
        self.run(sql, &params)?;
        let conn = self.conn()?;
        let out = Object::new();
        set(&out, "changes", JsValue::from_f64(conn.changes() as f64));
        set(&out, "lastInsertRowid", values::to_js(rusqlite::types::ValueRef::Integer(conn.last_insert_rowid())));
        Ok(out.into())
    }

    /// Runs one statement and returns its rows as plain objects keyed by
    /// column name.
    pub fn query(&self, sql: &str, params: JsValue) -> Result<Array, JsValue> {
        let conn = self.conn()?;
        let mut stmt = prepare(conn, sql)?;
        values::bind(&mut stmt, &params).map_err(|e| usage_error(&e))?;
        let out = Array::new();
        let mut names: Option<Vec<JsValue>> = None;
        let mut rows = stmt.raw_query();
        while let Some(row) = rows.next().map_err(|e| sqlite_error(&e))? {
            // After the first step: a statement SQLite prepared again for a
            // changed schema has its new columns only from then on.
            let names = names.get_or_insert_with(|| row.as_ref().column_names().into_iter().map(JsValue::from_str).collect());
            let object = Object::new();
            for (i, name) in names.iter().enumerate() {
                let value = row.get_ref(i).map_err(|e| sqlite_error(&e))?;
                let _ = Reflect::set(&object, name, &values::to_js(value));
            }
            out.push(&object);
        }
        Ok(out)
    }

    /// Runs one statement and returns `{columnNames, rawRows, changes,
    /// lastInsertRowid}`: rows as arrays in column order, as the PowerSync
    /// SDKs' `executeRaw` wants them (names may repeat, order is kept).
    /// `changes` is for writes; after a query it is what the last write
    /// left, as `sqlite3_changes` says.
    #[wasm_bindgen(js_name = executeRaw)]
    pub fn execute_raw(&self, sql: &str, params: JsValue) -> Result<JsValue, JsValue> {
        let conn = self.conn()?;
        let mut stmt = prepare(conn, sql)?;
        values::bind(&mut stmt, &params).map_err(|e| usage_error(&e))?;
        let rows = Array::new();
        let mut cursor = stmt.raw_query();
        while let Some(row) = cursor.next().map_err(|e| sqlite_error(&e))? {
            // Read per row: the first step may have prepared the statement
            // again for a changed schema, with other columns.
            let width = row.as_ref().column_count();
            let values = Array::new_with_length(width as u32);
            for i in 0..width {
                values.set(i as u32, values::to_js(row.get_ref(i).map_err(|e| sqlite_error(&e))?));
            }
            rows.push(&values);
        }
        drop(cursor);
        // The statement as it last ran, so the names are the ones of its rows.
        let names = Array::new();
        for name in stmt.column_names() {
            names.push(&JsValue::from_str(name));
        }
        let out = Object::new();
        set(&out, "columnNames", names.into());
        set(&out, "rawRows", rows.into());
        set(&out, "changes", JsValue::from_f64(conn.changes() as f64));
        set(&out, "lastInsertRowid", values::to_js(rusqlite::types::ValueRef::Integer(conn.last_insert_rowid())));
        Ok(out.into())
    }

    /// `powersync_control(op, payload)`: `payload` is a string (JSON, a
    /// text line), a `Uint8Array` (a BSON line) or `null`. Runs in its own
    /// `BEGIN IMMEDIATE` transaction unless one is open. Returns what the
    /// function returned: the instructions as JSON text for sync events,
    /// other values (an integer for `target_checkpoint_request_id`, say)
    /// as they are.
    pub fn control(&self, op: &str, payload: JsValue) -> Result<JsValue, JsValue> {
        let conn = self.conn()?;
        let payload = values::to_sql(&payload).map_err(|e| usage_error(&format!("powersync_control payload: {e}")))?;
        let own_transaction = conn.is_autocommit();
        if own_transaction {
            conn.execute_batch("BEGIN IMMEDIATE").map_err(|e| sqlite_error(&e))?;
        }
        let result = conn
            .prepare_cached("SELECT powersync_control(?1, ?2)")
            .and_then(|mut stmt| stmt.query_row((op, &payload), |row| row.get::<_, Value>(0)));
        match result {
            Ok(value) => {
                if own_transaction {
                    if let Err(e) = conn.execute_batch("COMMIT") {
                        let _ = conn.execute_batch("ROLLBACK");
                        return Err(sqlite_error(&e));
                    }
                }
                Ok(values::to_js(rusqlite::types::ValueRef::from(&value)))
            }
            Err(e) => {
                if own_transaction {
                    let _ = conn.execute_batch("ROLLBACK");
                }
                Err(sqlite_error(&e))
            }
        }
    }

    /// Inside a write transaction: writes the pages it changed out of
    /// SQLite's page cache into the file, keeping them cached
    /// (`sqlite3_db_cacheflush`), so its COMMIT has less to write. Readers
    /// keep their snapshot ([`crate::snapshot`]).
    #[wasm_bindgen(js_name = cacheFlush)]
    pub fn cache_flush(&self) -> Result<(), JsValue> {
        self.conn()?.cache_flush().map_err(|e| sqlite_error(&e))
    }

    /// Syncs the database file (its storage's xSync), so that a later
    /// COMMIT has less to sync: after `cacheFlush`, in a long transaction.
    #[wasm_bindgen(js_name = syncFile)]
    pub fn sync_file(&self) -> Result<(), JsValue> {
        vfs_wrapper::sync_main_file(self.conn()?).map_err(|e| sqlite_error(&e))
    }

    /// Whether no transaction is open.
    #[wasm_bindgen(js_name = isAutocommit)]
    pub fn is_autocommit(&self) -> Result<bool, JsValue> {
        Ok(self.conn()?.is_autocommit())
    }

    /// The tables changed by transactions committed since the last call
    /// (`powersync_update_hooks('get')`).
    #[wasm_bindgen(js_name = takeChangedTables)]
    pub fn take_changed_tables(&self) -> Result<Vec<String>, JsValue> {
        let conn = self.conn()?;
        let json: String = conn
            .prepare_cached("SELECT powersync_update_hooks('get')")
            .and_then(|mut stmt| stmt.query_row([], |row| row.get(0)))
            .map_err(|e| sqlite_error(&e))?;
        serde_json::from_str(&json).map_err(|e| usage_error(&format!("powersync_update_hooks('get'): {e}")))
    }

    /// For `idb`: whether committed changes wait to be stored.
    #[wasm_bindgen(js_name = hasCommitted)]
    pub fn has_committed(&self) -> bool {
        matches!(&self.storage, Storage::Idb(file) if file.borrow().has_committed())
    }

    /// For `idb`, after a failed IndexedDB write: the next batch rewrites
    /// the whole file.
    #[wasm_bindgen(js_name = markAllCommitted)]
    pub fn mark_all_committed(&self) {
        if let Storage::Idb(file) = &self.storage {
            file.borrow_mut().mark_all_committed();
        }
    }

    /// For `idb`: begins a batch of the committed changes not yet stored
    /// and returns the file's size after them; `null` if there are none,
    /// while a transaction has uncommitted pages in the file, or while a
    /// batch is being taken. Take its chunks with `takeChunks`.
    #[wasm_bindgen(js_name = beginBatch)]
    pub fn begin_batch(&self) -> Option<f64> {
        let Storage::Idb(file) = &self.storage else {
            return None;
        };
        file.borrow_mut().begin_batch().map(|size| size as f64)
    }

    /// For `idb`: up to `max` more chunks of the batch begun, as `{indices:
    /// Uint32Array, chunks: Uint8Array[]}`, as they were when it began;
    /// none once it is all taken.
    #[wasm_bindgen(js_name = takeChunks)]
    pub fn take_chunks(&self, max: u32) -> JsValue {
        let taken = match &self.storage {
            Storage::Idb(file) => file.borrow_mut().take_chunks(max as usize),
            _ => Vec::new(),
        };
        let indices: Vec<u32> = taken.iter().map(|(index, _)| *index).collect();
        let chunks = Array::new();
        for (_, bytes) in &taken {
            chunks.push(&Uint8Array::from(&bytes[..]));
        }
        let out = Object::new();
        set(&out, "indices", Uint32Array::from(&indices[..]).into());
        set(&out, "chunks", chunks.into());
        out.into()
    }

    /// For `idb`, after a failed IndexedDB write: drops the batch being
    /// taken (call `markAllCommitted` too).
    #[wasm_bindgen(js_name = abandonBatch)]
    pub fn abandon_batch(&self) {
        if let Storage::Idb(file) = &self.storage {
            file.borrow_mut().abandon_batch();
        }
    }

    /// Counters: bytes written to temporary files, journals and database
    /// files by all databases of this module, rollback journals deleted; the
    /// time spent in the storage's reads, writes and syncs, and their
    /// numbers (`vfsReadMs`, `vfsReads`, ...); the
    /// bytes of before images kept for readers' snapshots; SQLite's memory in use and
    /// its high-water mark (reset when `resetHighwater` is true); the size
    /// of the module's linear memory (which holds `idb` databases whole).
    pub fn stats(&self, reset_highwater: bool) -> JsValue {
        let counts = vfs_wrapper::counts();
        let (mut current, mut highwater) = (0i64, 0i64);
        // SAFETY: plain out-parameters.
        unsafe {
            rusqlite::ffi::sqlite3_status64(
                rusqlite::ffi::SQLITE_STATUS_MEMORY_USED,
                &mut current,
                &mut highwater,
                i32::from(reset_highwater),
            );
        }
        let out = Object::new();
        set(&out, "tempBytesWritten", JsValue::from_f64(counts.temp as f64));
        set(&out, "journalBytesWritten", JsValue::from_f64(counts.journal as f64));
        set(&out, "dbBytesWritten", JsValue::from_f64(counts.main as f64));
        set(&out, "journalsDeleted", JsValue::from_f64(counts.journals_deleted as f64));
        set(&out, "snapshotBytes", JsValue::from_f64(vfs_wrapper::snapshot_bytes() as f64));
        set(&out, "memoryUsed", JsValue::from_f64(current as f64));
        set(&out, "memoryHighwater", JsValue::from_f64(highwater as f64));
        let io = crate::io_time::times();
        set(&out, "vfsReadMs", JsValue::from_f64(io.read_ms));
        set(&out, "vfsWriteMs", JsValue::from_f64(io.write_ms));
        set(&out, "vfsSyncMs", JsValue::from_f64(io.sync_ms));
        set(&out, "vfsReads", JsValue::from_f64(io.reads as f64));
        set(&out, "vfsWrites", JsValue::from_f64(io.writes as f64));
        set(&out, "vfsSyncs", JsValue::from_f64(io.syncs as f64));
        let wasm_memory = std::arch::wasm32::memory_size::<0>() as f64 * 65536.0;
        set(&out, "wasmMemoryBytes", JsValue::from_f64(wasm_memory));
        out.into()
    }

    /// Closes the connection. OPFS storage releases its access handles so
    /// another Worker or tab can open the database; a memory database is
    /// deleted. Further calls fail. A database with open readers refuses
    /// (close them first); closing a reader leaves the storage to its
    /// writer.
    pub fn close(&mut self) -> Result<(), JsValue> {
        let is_reader = matches!(self.storage, Storage::Reader);
        if !is_reader && self.conn.is_some() && self.readers.get() > 0 {
            return Err(usage_error(&format!(
                "cannot close {:?}: {} reader(s) opened with openReader() are still open; close them first",
                self.name,
                self.readers.get()
            )));
        }
        let Some(conn) = self.conn.take() else {
            return Ok(());
        };
        if !is_reader {
            // A reader never writes, so it caches no such statements.
            release_vtab_statements(&conn);
        }
        if let Err((conn, e)) = conn.close() {
            self.conn = Some(conn);
            return Err(sqlite_error(&e));
        }
        if is_reader {
            self.readers.set(self.readers.get() - 1);
        }
        match &self.storage {
            Storage::Memory => {
                // SAFETY: single-threaded use of memvfs.
                if let Ok(util) = unsafe { sqlite_wasm_rs::vfs::memvfs::MemVfsUtil::get() } {
                    let _ = util.remove(&self.name);
                }
            }
            Storage::Opfs(util) => {
                OPEN_OPFS.with(|open| open.borrow_mut().remove(&self.name));
                util.pause().map_err(|e| usage_error(&format!("releasing the OPFS storage of {:?}: {e}", self.name)))?;
            }
            Storage::Idb(_) | Storage::Reader => {}
        }
        Ok(())
    }
}

impl Drop for Database {
    /// A reader freed without `close()` no longer counts as open (its
    /// connection closes as it drops).
    fn drop(&mut self) {
        if self.conn.is_some() && matches!(self.storage, Storage::Reader) {
            self.readers.set(self.readers.get() - 1);
        }
    }
}

/// Works around sqlite3_close() failing with "unable to close due to
/// unfinalized statements" after local writes: oplite's upload-queue virtual
/// tables (`powersync_crud`, `powersync_crud_`, eponymous, so disconnected
/// only after close checks for statements) keep statements cached on the
/// connection, and drop them only when a transaction that touched them rolls
/// back. So: a transaction that touches both and rolls back, writing nothing.
/// Errors (no such table, in builds without them) are ignored.
fn release_vtab_statements(conn: &Connection) {
    if !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    let _ = conn.execute_batch(
        "BEGIN;
         INSERT INTO powersync_crud(op, id, type) SELECT NULL, NULL, NULL WHERE 0;
         INSERT INTO powersync_crud_(data) SELECT NULL WHERE 0;",
    );
    if !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
}

/// For `idb`, before [`open_database`]: adds chunk `index` read from
/// IndexedDB to the in-memory file `name`.
#[wasm_bindgen(js_name = mirrorLoadChunk)]
pub fn mirror_load_chunk(name: &str, index: u32, bytes: &[u8]) {
    mirror::file(name).borrow_mut().load_chunk(index, bytes);
}

/// For `idb`, after the chunks: the file size recorded in IndexedDB.
#[wasm_bindgen(js_name = mirrorSetSize)]
pub fn mirror_set_size(name: &str, size: f64) {
    mirror::file(name).borrow_mut().set_loaded_size(size as u64);
}

/// For `idb`: drops the in-memory file `name` (after closing it, or when
/// loading failed).
#[wasm_bindgen(js_name = mirrorForget)]
pub fn mirror_forget(name: &str) {
    mirror::forget(name);
}

/// Bytes per IndexedDB record of the `idb` storage.
#[wasm_bindgen(js_name = idbChunkSize)]
pub fn idb_chunk_size() -> u32 {
    mirror::CHUNK_SIZE as u32
}

/// The SQLite library version, e.g. `3.50.4`.
#[wasm_bindgen(js_name = sqliteVersion)]
pub fn sqlite_version() -> String {
    rusqlite::version().to_owned()
}
