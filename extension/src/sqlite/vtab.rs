//! Write-only, eponymous virtual tables that see the transaction.
//!
//! oplite needs to know where a transaction starts and ends without taking
//! the connection's one commit hook (the host may own it): the upload queue
//! gives every write of one transaction the same `tx_id`, and writes its
//! entries when the transaction commits. SQLite tells a virtual table
//! exactly that, through `xBegin`, `xSync` (where it may still write, as
//! FTS5 does), `xCommit`, `xRollback` and the savepoint callbacks, as soon
//! as a statement that may write to it starts. That is the only reason this
//! module exists, and why the tables it makes can be written (INSERT) but
//! never read: reading returns no rows.
//!
//! rusqlite's `vtab` module has no savepoint callbacks (`xSavepoint`,
//! `xRollbackTo`), which oplite needs to notice `ROLLBACK TO`; this module is
//! a small sqlite3_module of its own instead, with every callback wrapped in
//! `catch_unwind`.

use std::ffi::{c_char, c_int, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use rusqlite::ffi;
use rusqlite::types::ValueRef;
use rusqlite::Connection;

use super::{
    create_module, free_boxed, panic_error, set_result_ref, set_vtab_error, sqlite_string, value_ref, EPONYMOUS_MODULE,
};
use crate::error::{OpliteError, Result};

/// What a write-only table does. Each method gets the connection the table
/// belongs to; statements prepared with `prepare_cached` on it stay cached
/// for the connection's lifetime.
pub trait WriteOnlyTable: Send + Sync + 'static {
    /// An `INSERT INTO table(...) VALUES (...)`: `values` are the declared
    /// columns in order (NULL where the INSERT did not name them).
    fn insert(&self, db: &Connection, values: &[ValueRef<'_>]) -> Result<()>;
    /// The first statement of a transaction that may write to the table has
    /// started (also when it ends up writing nothing).
    fn begin(&self, _db: &Connection) -> Result<()> {
        Ok(())
    }
    /// The transaction is about to commit (two-phase commit, first phase):
    /// the table may still write to the database, as FTS5 flushes its
    /// pending terms here.
    fn sync(&self, _db: &Connection) -> Result<()> {
        Ok(())
    }
    /// The transaction committed.
    fn commit(&self) {}
    /// The transaction rolled back.
    fn rollback(&self) {}
    /// A savepoint (or a statement's own sub-transaction) with index
    /// `savepoint` opened.
    fn savepoint(&self, _savepoint: i32) {}
    /// Savepoints with index `savepoint` and above were released.
    fn release(&self, _savepoint: i32) {}
    /// `ROLLBACK TO` a savepoint, or a failed statement rolled back its own
    /// changes: everything since savepoint `savepoint` opened is undone.
    fn rollback_to(&self, _savepoint: i32) {}
    /// How many rows a SELECT from the table returns.
    fn row_count(&self) -> usize {
        0
    }
    /// Column `column` of row `row` (0-based), for a SELECT: passes the
    /// value to `result` (which copies it), or does nothing for NULL.
    fn column(&self, _row: usize, _column: usize, _result: &mut dyn FnMut(ValueRef<'_>)) {}
}

struct ModuleAux {
    name: &'static str,
    declaration: CString,
    table: Arc<dyn WriteOnlyTable>,
}

#[repr(C)]
struct VTab {
    base: ffi::sqlite3_vtab,
    aux: *const ModuleAux,
    db: Connection,
}

#[repr(C)]
struct Cursor {
    base: ffi::sqlite3_vtab_cursor,
    row: usize,
}

/// The table implementation behind a cursor.
///
/// SAFETY: `cursor` must be a Cursor from x_open, whose table is alive.
unsafe fn cursor_table<'a>(cursor: *mut ffi::sqlite3_vtab_cursor) -> (&'a mut Cursor, &'a ModuleAux) {
    unsafe {
        let cursor = &mut *cursor.cast::<Cursor>();
        let table = &*cursor.base.pVtab.cast::<VTab>();
        (cursor, &*table.aux)
    }
}

/// Registers the eponymous table `name` on `db`. `declaration` is the
/// `CREATE TABLE x(...)` statement SQLite uses for its columns.
pub fn register_write_only_table(
    db: &Connection,
    name: &'static str,
    declaration: &str,
    table: Arc<dyn WriteOnlyTable>,
) -> Result<()> {
    let declaration = CString::new(declaration).map_err(|_| OpliteError::Internal("table declaration".into()))?;
    create_module(db, name, &MODULE, Box::new(ModuleAux { name, declaration, table }))
}

/// Eponymous-only; version 2 for the savepoint methods.
static MODULE: ffi::sqlite3_module = ffi::sqlite3_module {
    iVersion: 2,
    xConnect: Some(x_connect),
    xBestIndex: Some(x_best_index),
    xDisconnect: Some(free_boxed::<VTab, ffi::sqlite3_vtab>),
    xDestroy: Some(free_boxed::<VTab, ffi::sqlite3_vtab>),
    xOpen: Some(x_open),
    xClose: Some(free_boxed::<Cursor, ffi::sqlite3_vtab_cursor>),
    xFilter: Some(x_filter),
    xNext: Some(x_next),
    xEof: Some(x_eof),
    xColumn: Some(x_column),
    xRowid: Some(x_rowid),
    xUpdate: Some(x_update),
    xBegin: Some(x_begin),
    xSync: Some(x_sync),
    xCommit: Some(x_commit),
    xRollback: Some(x_rollback),
    xSavepoint: Some(x_savepoint),
    xRelease: Some(x_release),
    xRollbackTo: Some(x_rollback_to),
    ..EPONYMOUS_MODULE
};

/// Runs `body` for the table behind `vtab`, reporting errors and panics
/// through the table's error message.
unsafe fn with_table(vtab: *mut ffi::sqlite3_vtab, body: impl FnOnce(&VTab, &ModuleAux) -> Result<()>) -> c_int {
    // SAFETY: SQLite passes back the VTab allocated in x_connect.
    let table = unsafe { &*vtab.cast::<VTab>() };
    // SAFETY: aux outlives every table of its module.
    let aux = unsafe { &*table.aux };
    let outcome = catch_unwind(AssertUnwindSafe(|| body(table, aux)));
    match outcome.unwrap_or_else(|panic| Err(panic_error(aux.name, panic))) {
        Ok(()) => ffi::SQLITE_OK,
        Err(err) => {
            // SAFETY: zErrMsg is ours to set; SQLite frees it with
            // sqlite3_free when it reads the message.
            unsafe { set_vtab_error(&mut (*vtab).zErrMsg, &err.to_string()) }
            err.code()
        }
    }
}

unsafe extern "C" fn x_connect(
    db: *mut ffi::sqlite3,
    aux: *mut c_void,
    _argc: c_int,
    _argv: *const *const c_char,
    pp_vtab: *mut *mut ffi::sqlite3_vtab,
    pz_err: *mut *mut c_char,
) -> c_int {
    let aux_ref = aux.cast::<ModuleAux>().cast_const();
    let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<*mut VTab> {
        // SAFETY: aux is the ModuleAux registered with the module.
        let declaration = unsafe { &(*aux_ref).declaration };
        // SAFETY: db is the connection being connected to.
        let rc = unsafe { ffi::sqlite3_declare_vtab(db, declaration.as_ptr()) };
        if rc != ffi::SQLITE_OK {
            return Err(OpliteError::Internal(format!("declaring virtual table: code {rc}")));
        }
        // SAFETY: the table is dropped by free_boxed (xDisconnect), before the
        // connection closes.
        let conn = unsafe { Connection::from_handle(db) }.map_err(|e| OpliteError::sqlite("opening connection", e))?;
        let base = ffi::sqlite3_vtab { pModule: std::ptr::null(), nRef: 0, zErrMsg: std::ptr::null_mut() };
        Ok(Box::into_raw(Box::new(VTab { base, aux: aux_ref, db: conn })))
    }));
    match outcome.unwrap_or_else(|panic| Err(panic_error("virtual table", panic))) {
        Ok(table) => {
            // SAFETY: pp_vtab is SQLite's out-pointer.
            unsafe { *pp_vtab = table.cast::<ffi::sqlite3_vtab>() };
            ffi::SQLITE_OK
        }
        Err(err) => {
            // SAFETY: pz_err is SQLite's out-pointer for a malloc'd message.
            unsafe { *pz_err = sqlite_string(&err.to_string()) };
            err.code()
        }
    }
}

unsafe extern "C" fn x_best_index(_vtab: *mut ffi::sqlite3_vtab, info: *mut ffi::sqlite3_index_info) -> c_int {
    // SAFETY: info is valid for this call. Every read is a full scan of a
    // small buffer, so any plan is as good as another.
    unsafe {
        (*info).estimatedCost = 1.0;
        (*info).estimatedRows = 100;
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_open(vtab: *mut ffi::sqlite3_vtab, pp_cursor: *mut *mut ffi::sqlite3_vtab_cursor) -> c_int {
    let cursor = Box::new(Cursor { base: ffi::sqlite3_vtab_cursor { pVtab: vtab }, row: 0 });
    // SAFETY: pp_cursor is SQLite's out-pointer; freed by free_boxed (xClose).
    unsafe { *pp_cursor = Box::into_raw(cursor).cast::<ffi::sqlite3_vtab_cursor>() };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_filter(
    cursor: *mut ffi::sqlite3_vtab_cursor,
    _idx_num: c_int,
    _idx_str: *const c_char,
    _argc: c_int,
    _argv: *mut *mut ffi::sqlite3_value,
) -> c_int {
    // SAFETY: SQLite passes a cursor from x_open.
    unsafe { cursor_table(cursor).0.row = 0 };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_next(cursor: *mut ffi::sqlite3_vtab_cursor) -> c_int {
    // SAFETY: SQLite passes a cursor from x_open.
    unsafe { cursor_table(cursor).0.row += 1 };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_eof(cursor: *mut ffi::sqlite3_vtab_cursor) -> c_int {
    // SAFETY: SQLite passes a cursor from x_open.
    let (cursor, aux) = unsafe { cursor_table(cursor) };
    let count = catch_unwind(AssertUnwindSafe(|| aux.table.row_count())).unwrap_or(0);
    c_int::from(cursor.row >= count)
}

unsafe extern "C" fn x_column(cursor: *mut ffi::sqlite3_vtab_cursor, ctx: *mut ffi::sqlite3_context, i: c_int) -> c_int {
    // SAFETY: SQLite passes a cursor from x_open and a live context.
    unsafe {
        let (cursor, aux) = cursor_table(cursor);
        ffi::sqlite3_result_null(ctx);
        let _ = catch_unwind(AssertUnwindSafe(|| {
            aux.table.column(cursor.row, i.max(0) as usize, &mut |value| set_result_ref(ctx, value))
        }));
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_rowid(cursor: *mut ffi::sqlite3_vtab_cursor, rowid: *mut ffi::sqlite3_int64) -> c_int {
    // SAFETY: SQLite passes a cursor from x_open; rowid is its out-pointer.
    unsafe { *rowid = cursor_table(cursor).0.row as i64 };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_update(
    vtab: *mut ffi::sqlite3_vtab,
    argc: c_int,
    argv: *mut *mut ffi::sqlite3_value,
    _rowid: *mut ffi::sqlite3_int64,
) -> c_int {
    unsafe {
        with_table(vtab, |table, aux| {
            // argc == 1 is a DELETE; argv[0] not NULL is an UPDATE.
            let is_insert = argc > 1 && ffi::sqlite3_value_type(*argv) == ffi::SQLITE_NULL;
            if !is_insert {
                return Err(OpliteError::Misuse {
                    function: aux.name,
                    reason: "this table only accepts INSERT".into(),
                });
            }
            // SAFETY: argv holds argc values for this call; argv[1] is the
            // rowid, the columns follow.
            let values: Vec<ValueRef<'_>> = (2..argc as usize).map(|i| value_ref(*argv.add(i))).collect();
            aux.table.insert(&table.db, &values)
        })
    }
}

unsafe extern "C" fn x_begin(vtab: *mut ffi::sqlite3_vtab) -> c_int {
    unsafe { with_table(vtab, |table, aux| aux.table.begin(&table.db)) }
}

unsafe extern "C" fn x_sync(vtab: *mut ffi::sqlite3_vtab) -> c_int {
    unsafe { with_table(vtab, |table, aux| aux.table.sync(&table.db)) }
}

unsafe extern "C" fn x_commit(vtab: *mut ffi::sqlite3_vtab) -> c_int {
    unsafe {
        with_table(vtab, |table, aux| {
            aux.table.commit();
            // As at rollback: the upload-queue tables are eponymous, and
            // sqlite3_close() checks for unfinalized statements before it
            // disconnects eponymous tables, so statements still cached here
            // after the last transaction made every close of a connection
            // that had written through a view fail with SQLITE_BUSY and
            // leak it (found by the `schema` fuzz target's leak check).
            // Finalizing at the end of each transaction that used the table
            // costs a few prepares per committing local-write transaction.
            table.db.flush_prepared_statement_cache();
            Ok(())
        })
    }
}

unsafe extern "C" fn x_rollback(vtab: *mut ffi::sqlite3_vtab) -> c_int {
    unsafe {
        with_table(vtab, |table, aux| {
            aux.table.rollback();
            // Statements cached on the table's connection would make
            // sqlite3_close() fail with SQLITE_BUSY when it closes a
            // connection with an open transaction: it rolls back (calling
            // this) before it checks for unfinalized statements, and the
            // table is not disconnected until after. Rollbacks are rare.
            table.db.flush_prepared_statement_cache();
            Ok(())
        })
    }
}

unsafe extern "C" fn x_savepoint(vtab: *mut ffi::sqlite3_vtab, savepoint: c_int) -> c_int {
    unsafe {
        with_table(vtab, |_, aux| {
            aux.table.savepoint(savepoint);
            Ok(())
        })
    }
}

unsafe extern "C" fn x_release(vtab: *mut ffi::sqlite3_vtab, savepoint: c_int) -> c_int {
    unsafe {
        with_table(vtab, |_, aux| {
            aux.table.release(savepoint);
            Ok(())
        })
    }
}

unsafe extern "C" fn x_rollback_to(vtab: *mut ffi::sqlite3_vtab, savepoint: c_int) -> c_int {
    unsafe {
        with_table(vtab, |_, aux| {
            aux.table.rollback_to(savepoint);
            Ok(())
        })
    }
}
