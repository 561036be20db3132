//! Single-row table-valued functions: `SELECT d.c0, d.c1 FROM f(a, b) AS d`.
//!
//! A scalar function returns one value, so reading n values of one thing
//! (the columns of a synced row) costs n calls, each with its own argument
//! marshalling, cache check and SQLite's own per-call work. A table-valued
//! function computes the row once in `xFilter`, and SQLite then reads each
//! column with a plain `xColumn` call. Only what oplite needs is here: the
//! function yields at most one row, its arguments are the declaration's
//! last (HIDDEN) columns, bound by equality (`f(a, b)` is SQLite's shorthand
//! for that), and an argument left out is NULL.

use std::cell::OnceCell;
use std::ffi::{c_char, c_int, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use rusqlite::ffi;
use rusqlite::types::ValueRef;
use rusqlite::Connection;

use super::{create_module, free_boxed, panic_error, set_vtab_error, value_ref, CallContext, Emit, EPONYMOUS_MODULE};
use crate::error::{OpliteError, Result};

/// The row behind one cursor of a row function.
pub trait RowSource: 'static {
    /// Computes the row for `args` (the argument columns, in declaration
    /// order); false if there is no row.
    fn load(&mut self, call: &CallContext, args: &[ValueRef<'_>]) -> Result<bool>;
    /// Emits declared column `i` of the row (SQLite copies it); emitting
    /// nothing leaves NULL.
    fn column(&self, i: usize, emit: Emit<'_>);
}

/// Makes the source of each new cursor.
pub type RowSourceFactory = dyn Fn() -> Box<dyn RowSource>;

struct ModuleAux {
    name: &'static str,
    declaration: CString,
    /// Declared columns before the arguments.
    columns: usize,
    arguments: usize,
    factory: Box<RowSourceFactory>,
}

#[repr(C)]
struct VTab {
    base: ffi::sqlite3_vtab,
    aux: *const ModuleAux,
    db: *mut ffi::sqlite3,
}

#[repr(C)]
struct Cursor {
    base: ffi::sqlite3_vtab_cursor,
    source: Box<dyn RowSource>,
    has_row: bool,
}

/// Arguments a row function may take: few enough that `x_filter` keeps
/// them on the stack, and each has a bit in `idxNum`.
const MAX_ARGUMENTS: usize = 8;

/// Registers the row function `name` on `db`. `declaration` is the
/// `CREATE TABLE x(...)` statement for its columns, whose last `arguments`
/// columns are the (HIDDEN) arguments.
pub fn register_row_function(
    db: &Connection,
    name: &'static str,
    declaration: &str,
    columns: usize,
    arguments: usize,
    factory: Box<RowSourceFactory>,
) -> Result<()> {
    if arguments > MAX_ARGUMENTS {
        return Err(OpliteError::Internal(format!("{name}: too many arguments")));
    }
    let declaration = CString::new(declaration).map_err(|_| OpliteError::Internal("row function declaration".into()))?;
    create_module(db, name, &MODULE, Box::new(ModuleAux { name, declaration, columns, arguments, factory }))
}

/// A function, not a table to create: eponymous-only, read-only.
static MODULE: ffi::sqlite3_module = ffi::sqlite3_module {
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
    ..EPONYMOUS_MODULE
};

unsafe extern "C" fn x_connect(
    db: *mut ffi::sqlite3,
    aux: *mut c_void,
    _argc: c_int,
    _argv: *const *const c_char,
    pp_vtab: *mut *mut ffi::sqlite3_vtab,
    pz_err: *mut *mut c_char,
) -> c_int {
    let aux = aux.cast::<ModuleAux>().cast_const();
    // SAFETY: aux is the ModuleAux registered with the module; db is the
    // connection being connected to; pp_vtab and pz_err are SQLite's
    // out-pointers.
    unsafe {
        let rc = ffi::sqlite3_declare_vtab(db, (*aux).declaration.as_ptr());
        if rc != ffi::SQLITE_OK {
            set_vtab_error(pz_err, &format!("declaring {}(): code {rc}", (*aux).name));
            return rc;
        }
        let base = ffi::sqlite3_vtab { pModule: std::ptr::null(), nRef: 0, zErrMsg: std::ptr::null_mut() };
        *pp_vtab = Box::into_raw(Box::new(VTab { base, aux, db })).cast::<ffi::sqlite3_vtab>();
    }
    ffi::SQLITE_OK
}

/// Binds every argument that has a usable equality constraint, in
/// declaration order; `idxNum` records which are bound. An argument whose
/// constraint cannot be used yet (its value comes from a table the planner
/// would put in an inner loop) rules the plan out.
unsafe extern "C" fn x_best_index(vtab: *mut ffi::sqlite3_vtab, info: *mut ffi::sqlite3_index_info) -> c_int {
    // SAFETY: SQLite passes back the VTab from x_connect and an index_info
    // valid for this call, with nConstraint entries in both arrays.
    unsafe {
        let aux = &*(*vtab.cast::<VTab>()).aux;
        let info = &mut *info;
        let mut constraint_of = [None::<usize>; MAX_ARGUMENTS];
        for i in 0..info.nConstraint.max(0) as usize {
            let c = &*info.aConstraint.add(i);
            let Some(arg) = (c.iColumn as usize).checked_sub(aux.columns).filter(|a| *a < aux.arguments) else {
                continue;
            };
            if c.iColumn < 0 || c.op != ffi::SQLITE_INDEX_CONSTRAINT_EQ as u8 {
                continue;
            }
            if c.usable == 0 {
                return ffi::SQLITE_CONSTRAINT;
            }
            constraint_of[arg] = Some(i);
        }
        let mut bound = 0;
        let mut mask = 0;
        for (arg, constraint) in constraint_of.iter().enumerate().take(aux.arguments) {
            if let Some(i) = constraint {
                bound += 1;
                mask |= 1 << arg;
                let usage = &mut *info.aConstraintUsage.add(*i);
                usage.argvIndex = bound;
                usage.omit = 1;
            }
        }
        info.idxNum = mask;
        info.estimatedCost = 1.0;
        info.estimatedRows = 1;
        info.idxFlags = ffi::SQLITE_INDEX_SCAN_UNIQUE;
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_open(vtab: *mut ffi::sqlite3_vtab, pp_cursor: *mut *mut ffi::sqlite3_vtab_cursor) -> c_int {
    // SAFETY: SQLite passes back the VTab from x_connect.
    let aux = unsafe { &*(*vtab.cast::<VTab>()).aux };
    match catch_unwind(AssertUnwindSafe(|| (aux.factory)())) {
        Ok(source) => {
            let cursor = Box::new(Cursor { base: ffi::sqlite3_vtab_cursor { pVtab: vtab }, source, has_row: false });
            // SAFETY: pp_cursor is SQLite's out-pointer; freed by free_boxed (xClose).
            unsafe { *pp_cursor = Box::into_raw(cursor).cast::<ffi::sqlite3_vtab_cursor>() };
            ffi::SQLITE_OK
        }
        Err(_) => ffi::SQLITE_NOMEM,
    }
}

unsafe extern "C" fn x_filter(
    cursor: *mut ffi::sqlite3_vtab_cursor,
    idx_num: c_int,
    _idx_str: *const c_char,
    argc: c_int,
    argv: *mut *mut ffi::sqlite3_value,
) -> c_int {
    // SAFETY: SQLite passes a cursor from x_open, whose table is alive, and
    // argc protected values that live for this call.
    unsafe {
        let cursor = &mut *cursor.cast::<Cursor>();
        let vtab = cursor.base.pVtab;
        let table = &*vtab.cast::<VTab>();
        let aux = &*table.aux;
        let mut args = [ValueRef::Null; MAX_ARGUMENTS];
        let mut next = 0;
        for (arg, slot) in args.iter_mut().enumerate().take(aux.arguments) {
            if idx_num & (1 << arg) != 0 && next < argc.max(0) as usize {
                *slot = value_ref(*argv.add(next));
                next += 1;
            }
        }
        let call = CallContext { handle: table.db, connection: OnceCell::new() };
        let outcome = catch_unwind(AssertUnwindSafe(|| cursor.source.load(&call, &args[..aux.arguments])));
        match outcome.unwrap_or_else(|panic| Err(panic_error(aux.name, panic))) {
            Ok(has_row) => {
                cursor.has_row = has_row;
                ffi::SQLITE_OK
            }
            Err(err) => {
                cursor.has_row = false;
                set_vtab_error(&mut (*vtab).zErrMsg, &err.to_string());
                err.code()
            }
        }
    }
}

unsafe extern "C" fn x_next(cursor: *mut ffi::sqlite3_vtab_cursor) -> c_int {
    // SAFETY: SQLite passes a cursor from x_open.
    unsafe { (*cursor.cast::<Cursor>()).has_row = false };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_eof(cursor: *mut ffi::sqlite3_vtab_cursor) -> c_int {
    // SAFETY: SQLite passes a cursor from x_open.
    c_int::from(unsafe { !(*cursor.cast::<Cursor>()).has_row })
}

unsafe extern "C" fn x_column(cursor: *mut ffi::sqlite3_vtab_cursor, ctx: *mut ffi::sqlite3_context, i: c_int) -> c_int {
    // SAFETY: SQLite passes a cursor from x_open and a live context.
    unsafe {
        let cursor = &*cursor.cast::<Cursor>();
        let aux = &*(*cursor.base.pVtab.cast::<VTab>()).aux;
        ffi::sqlite3_result_null(ctx);
        if (i as usize) < aux.columns {
            let emit = Emit { ctx, _call: std::marker::PhantomData };
            let _ = catch_unwind(AssertUnwindSafe(|| cursor.source.column(i as usize, emit)));
        }
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_rowid(_cursor: *mut ffi::sqlite3_vtab_cursor, rowid: *mut ffi::sqlite3_int64) -> c_int {
    // SAFETY: rowid is SQLite's out-pointer.
    unsafe { *rowid = 1 };
    ffi::SQLITE_OK
}
