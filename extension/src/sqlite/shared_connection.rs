//! One rusqlite [`Connection`] per SQLite connection, kept across calls, so
//! that prepared statements outlive the call that prepared them.
//!
//! A small checkpoint is three `powersync_control` calls. Each used to wrap
//! the handle in a fresh non-owning `Connection`, whose statement cache died
//! with the call, so every call parsed the same statements again: half of a
//! one-op checkpoint's instructions (callgrind; docs/benchmarks.md). The
//! wrapper now lives in the connection's client data.
//!
//! Cached statements would make `sqlite3_close` fail with `SQLITE_BUSY`: it
//! refuses to close a connection with unfinalized statements, and frees
//! client data only after that check. But it disconnects every eponymous
//! virtual table *before* the check, so the eponymous table
//! `powersync_internal_close` (the reference core's name for the same hook)
//! is the pre-close hook: its `xDisconnect` finalizes the cache. Statements
//! stay cached only while that table is connected; a call that cannot
//! connect it (a schema SQLite cannot read) empties the cache as it ends.

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr;

use rusqlite::{ffi, Connection, Params, Row};

use super::{create_module, free_boxed, EPONYMOUS_MODULE};
use crate::error::{OpliteError, Result};

/// The pre-close hook's table.
pub const PRE_CLOSE_TABLE: &str = "powersync_internal_close";
/// Statements a connection keeps prepared: the sync client, the apply and
/// the schema's row writers use a few dozen.
const CACHED_STATEMENTS: usize = 96;
const KEY: &CStr = c"oplite.connection";

struct Shared {
    connection: Connection,
    /// The pre-close table is connected: cached statements will be
    /// finalized before the connection closes.
    hooked: Cell<bool>,
}

/// The connection's shared wrapper for one call; empties the statement
/// cache when dropped if nothing else would before a close.
pub struct CallConnection {
    shared: *const Shared,
}

impl CallConnection {
    /// The shared wrapper of `handle`, created on first use.
    ///
    /// SAFETY: `handle` is an open connection that outlives the returned
    /// value (a function call's context, dropped before the call returns).
    pub unsafe fn open(handle: *mut ffi::sqlite3) -> Result<CallConnection> {
        unsafe {
            let mut shared = ffi::sqlite3_get_clientdata(handle, KEY.as_ptr()).cast::<Shared>().cast_const();
            if shared.is_null() {
                let connection = Connection::from_handle(handle).map_err(|e| OpliteError::sqlite("opening connection handle", e))?;
                connection.set_prepared_statement_cache_capacity(CACHED_STATEMENTS);
                let fresh = Box::into_raw(Box::new(Shared { connection, hooked: Cell::new(false) }));
                let rc = ffi::sqlite3_set_clientdata(handle, KEY.as_ptr(), fresh.cast::<c_void>(), Some(drop_shared));
                if rc != ffi::SQLITE_OK {
                    // SQLite freed `fresh` through drop_shared.
                    return Err(OpliteError::sqlite(
                        "keeping the connection's statements",
                        rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None),
                    ));
                }
                shared = fresh;
            }
            let call = CallConnection { shared };
            if !(*shared).hooked.get() {
                // Naming the eponymous table connects it (x_connect sets
                // `hooked`); the statement itself is finalized at once, so
                // it holds no reference that would delay the disconnect.
                let _ = (*shared).connection.prepare(&format!("SELECT 1 FROM {PRE_CLOSE_TABLE}"));
            }
            Ok(call)
        }
    }

    /// The connection.
    pub fn connection(&self) -> &Connection {
        // SAFETY: see `open`: the client data lives while the connection is
        // open, which outlives self.
        unsafe { &(*self.shared).connection }
    }
}

impl Drop for CallConnection {
    fn drop(&mut self) {
        // SAFETY: see `connection`.
        let shared = unsafe { &*self.shared };
        if !shared.hooked.get() {
            shared.connection.flush_prepared_statement_cache();
        }
    }
}

/// `execute` and `query_row` through the connection's statement cache.
///
/// rusqlite's own `Connection::execute` and `query_row` prepare the
/// statement afresh each time; oplite's per-call statements use these
/// instead. Only for fixed SQL: a text built per call would only push the
/// fixed statements out of the cache.
pub trait CachedSql {
    /// Runs `sql` with `params`, returning the rows changed.
    fn execute_cached<P: Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize>;
    /// The first row of `sql` with `params`, through `f`.
    fn query_row_cached<T, P: Params, F: FnOnce(&Row<'_>) -> rusqlite::Result<T>>(
        &self,
        sql: &str,
        params: P,
        f: F,
    ) -> rusqlite::Result<T>;
}

impl CachedSql for Connection {
    fn execute_cached<P: Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }

    fn query_row_cached<T, P: Params, F: FnOnce(&Row<'_>) -> rusqlite::Result<T>>(
        &self,
        sql: &str,
        params: P,
        f: F,
    ) -> rusqlite::Result<T> {
        self.prepare_cached(sql)?.query_row(params, f)
    }
}

unsafe extern "C" fn drop_shared(data: *mut c_void) {
    // SAFETY: created by Box::into_raw in `open`. The cache is empty by now
    // (the pre-close table was disconnected first); dropping the wrapper
    // does not close the non-owned handle.
    drop(unsafe { Box::from_raw(data.cast::<Shared>()) });
}

/// Registers the pre-close table on `db`.
pub fn register_pre_close(db: &Connection) -> Result<()> {
    create_module(db, PRE_CLOSE_TABLE, &MODULE, Box::new(()))
}

#[repr(C)]
struct PreCloseTable {
    base: ffi::sqlite3_vtab,
    db: *mut ffi::sqlite3,
}

/// The shared wrapper of `db`, if one was made.
unsafe fn shared_of<'a>(db: *mut ffi::sqlite3) -> Option<&'a Shared> {
    // SAFETY: only `open` stores data under KEY, always a Shared.
    unsafe { ffi::sqlite3_get_clientdata(db, KEY.as_ptr()).cast::<Shared>().as_ref() }
}

unsafe extern "C" fn x_connect(
    db: *mut ffi::sqlite3,
    _aux: *mut c_void,
    _argc: c_int,
    _argv: *const *const c_char,
    pp_vtab: *mut *mut ffi::sqlite3_vtab,
    _pz_err: *mut *mut c_char,
) -> c_int {
    unsafe {
        let rc = ffi::sqlite3_declare_vtab(db, c"CREATE TABLE x(_ TEXT)".as_ptr());
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let base = ffi::sqlite3_vtab { pModule: ptr::null(), nRef: 0, zErrMsg: ptr::null_mut() };
        *pp_vtab = Box::into_raw(Box::new(PreCloseTable { base, db })).cast::<ffi::sqlite3_vtab>();
        if let Some(shared) = shared_of(db) {
            shared.hooked.set(true);
        }
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_disconnect(vtab: *mut ffi::sqlite3_vtab) -> c_int {
    unsafe {
        let table = Box::from_raw(vtab.cast::<PreCloseTable>());
        if let Some(shared) = shared_of(table.db) {
            shared.hooked.set(false);
            shared.connection.flush_prepared_statement_cache();
        }
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_best_index(_vtab: *mut ffi::sqlite3_vtab, _info: *mut ffi::sqlite3_index_info) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_open(vtab: *mut ffi::sqlite3_vtab, cursor: *mut *mut ffi::sqlite3_vtab_cursor) -> c_int {
    unsafe { *cursor = Box::into_raw(Box::new(ffi::sqlite3_vtab_cursor { pVtab: vtab })) };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_filter(
    _cursor: *mut ffi::sqlite3_vtab_cursor,
    _idx_num: c_int,
    _idx_str: *const c_char,
    _argc: c_int,
    _argv: *mut *mut ffi::sqlite3_value,
) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_next(_cursor: *mut ffi::sqlite3_vtab_cursor) -> c_int {
    ffi::SQLITE_OK
}

/// The table never has a row.
unsafe extern "C" fn x_eof(_cursor: *mut ffi::sqlite3_vtab_cursor) -> c_int {
    1
}

unsafe extern "C" fn x_column(_cursor: *mut ffi::sqlite3_vtab_cursor, _ctx: *mut ffi::sqlite3_context, _i: c_int) -> c_int {
    ffi::SQLITE_MISUSE
}

unsafe extern "C" fn x_rowid(_cursor: *mut ffi::sqlite3_vtab_cursor, _rowid: *mut ffi::sqlite3_int64) -> c_int {
    ffi::SQLITE_MISUSE
}

/// Eponymous-only, read-only, always empty.
static MODULE: ffi::sqlite3_module = ffi::sqlite3_module {
    xConnect: Some(x_connect),
    xBestIndex: Some(x_best_index),
    xDisconnect: Some(x_disconnect),
    xOpen: Some(x_open),
    xClose: Some(free_boxed::<ffi::sqlite3_vtab_cursor, ffi::sqlite3_vtab_cursor>),
    xFilter: Some(x_filter),
    xNext: Some(x_next),
    xEof: Some(x_eof),
    xColumn: Some(x_column),
    xRowid: Some(x_rowid),
    ..EPONYMOUS_MODULE
};
