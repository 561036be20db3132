//! The thin unsafe boundary between oplite and SQLite's C API.
//!
//! Everything above this module uses safe types: a [`rusqlite::Connection`]
//! for statements, [`ValueRef`] for arguments and [`Value`] for results.
//! Raw pointers, `extern "C"` callbacks and the entry points live here and
//! nowhere else: this file (functions, entry points) and its submodules,
//! `vtab` (write-only virtual tables that see transactions begin, commit,
//! roll back and hit savepoints), `row_function` (single-row table-valued
//! functions), `connection_data` (per-connection state
//! and the change hooks), `shared_connection` (the statement cache kept
//! across calls, and its pre-close hook) and `borrowing` (a statement that binds text
//! without copying it, for storing sync lines).
//!
//! Why not rusqlite's own `create_scalar_function`? It reports every error as
//! `SQLITE_ERROR` (it sets the code before the message, and SQLite resets the
//! code when the message is set), but the protocol needs `SQLITE_MISUSE` for
//! calls outside a transaction, and hosts need `SQLITE_BUSY` to stay
//! `SQLITE_BUSY`. Registering through `sqlite3_create_function_v2` ourselves
//! costs forty lines and keeps the codes right.
//!
//! Panics: native builds unwind (`panic = "unwind"`), and every callback
//! below runs its Rust body inside `catch_unwind`, turning a panic into an
//! `SQLITE_INTERNAL` error with the panic message. A panic therefore never
//! crosses into C. WASM builds abort instead (the target's default), which
//! traps the module rather than unwinding through JavaScript.

use std::cell::OnceCell;
use std::ffi::{c_char, c_int, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use rusqlite::ffi;
use rusqlite::types::{Value, ValueRef};
use rusqlite::Connection;

use crate::error::{OpliteError, Result};

mod borrowing;
mod connection_data;
mod row_function;
mod shared_connection;
mod vtab;

pub use borrowing::{BorrowingStatement, Param};
pub use connection_data::{client_data, install_change_hooks, ChangeObserver, ClientDataKey, ScopeCounter, ScopeGuard};
pub use row_function::{register_row_function, RowSource};
use shared_connection::CallConnection;
pub use shared_connection::{register_pre_close, CachedSql, PRE_CLOSE_TABLE};
pub use vtab::{register_write_only_table, WriteOnlyTable};

/// The body of a scalar SQL function: the connection it runs on and its
/// arguments in, a value or an error out.
pub type ScalarBody = dyn Fn(&Connection, &[ValueRef<'_>]) -> Result<Value>;

/// The body of a scalar SQL function that opens the connection only when it
/// needs it. Functions called once per row from triggers use this: wrapping
/// the handle in a [`Connection`] allocates, and most calls never need it.
pub type FunctionBody = dyn Fn(&CallContext, &[ValueRef<'_>]) -> Result<Value>;

/// The body of a scalar SQL function that hands its result to [`Emit`]
/// instead of returning it, so the result can borrow from state the
/// function keeps between calls (SQLite copies it).
pub type EmittingBody = dyn Fn(&CallContext, &[ValueRef<'_>], Emit<'_>) -> Result<()>;

/// Where an [`EmittingBody`] puts its result.
pub struct Emit<'a> {
    ctx: *mut ffi::sqlite3_context,
    _call: std::marker::PhantomData<&'a ()>,
}

impl Emit<'_> {
    /// Sets the function's result; SQLite copies text and blobs.
    pub fn value(self, value: ValueRef<'_>) {
        // SAFETY: ctx is the live context of the call this Emit was made for.
        unsafe { set_result_ref(self.ctx, value) }
    }
}

/// What a [`FunctionBody`] gets besides its arguments.
pub struct CallContext {
    handle: *mut ffi::sqlite3,
    connection: OnceCell<CallConnection>,
}

impl CallContext {
    /// The connection the function runs on, with its statement cache (see
    /// `sqlite/shared_connection.rs`), looked up on first use.
    pub fn db(&self) -> Result<&Connection> {
        if let Some(call) = self.connection.get() {
            return Ok(call.connection());
        }
        // SAFETY: the context's connection is open while its function runs,
        // and this context is dropped before the call returns.
        let call = unsafe { CallConnection::open(self.handle) }?;
        Ok(self.connection.get_or_init(|| call).connection())
    }
}

/// How a function behaves, for SQLite's planner and its security checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purity {
    /// Same arguments, same result, no side effects (`SQLITE_DETERMINISTIC`).
    Deterministic,
    /// Reads or changes state, or is random.
    Volatile,
    /// Changes sync state: callable only from top-level SQL, never from a
    /// trigger or view (`SQLITE_DIRECTONLY`), so a crafted schema cannot
    /// drive it.
    DirectOnly,
}

struct RegisteredFunction {
    name: &'static str,
    body: Body,
}

enum Body {
    Returning(Box<FunctionBody>),
    Emitting(Box<EmittingBody>),
}

/// Registers a scalar function on `db`. `n_args` of -1 accepts any number.
pub fn register_scalar(
    db: &Connection,
    name: &'static str,
    n_args: c_int,
    purity: Purity,
    body: Box<ScalarBody>,
) -> Result<()> {
    register_function(db, name, n_args, purity, Box::new(move |ctx, args| body(ctx.db()?, args)))
}

/// Registers a scalar function whose body opens the connection lazily
/// (see [`FunctionBody`]). `n_args` of -1 accepts any number.
pub fn register_function(
    db: &Connection,
    name: &'static str,
    n_args: c_int,
    purity: Purity,
    body: Box<FunctionBody>,
) -> Result<()> {
    register(db, name, n_args, purity, Body::Returning(body))
}

/// Registers a scalar function whose body emits its result (see
/// [`EmittingBody`]).
pub fn register_emitting_function(
    db: &Connection,
    name: &'static str,
    n_args: c_int,
    purity: Purity,
    body: Box<EmittingBody>,
) -> Result<()> {
    register(db, name, n_args, purity, Body::Emitting(body))
}

fn register(db: &Connection, name: &'static str, n_args: c_int, purity: Purity, body: Body) -> Result<()> {
    let c_name = CString::new(name).map_err(|_| OpliteError::Internal(format!("function name {name:?}")))?;
    let mut flags = ffi::SQLITE_UTF8;
    match purity {
        Purity::Deterministic => flags |= ffi::SQLITE_DETERMINISTIC,
        Purity::DirectOnly => flags |= ffi::SQLITE_DIRECTONLY,
        Purity::Volatile => {}
    }
    let user_data = Box::into_raw(Box::new(RegisteredFunction { name, body }));
    // SAFETY: `db.handle()` is a live connection; SQLite owns `user_data`
    // from here on and frees it through `destroy_function`, also when
    // registration fails.
    let rc = unsafe {
        ffi::sqlite3_create_function_v2(
            db.handle(),
            c_name.as_ptr(),
            n_args,
            flags,
            user_data.cast::<c_void>(),
            Some(call_function),
            None,
            None,
            Some(destroy_function),
        )
    };
    if rc != ffi::SQLITE_OK {
        return Err(OpliteError::sqlite(
            format!("registering {name}()"),
            rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None),
        ));
    }
    Ok(())
}

unsafe extern "C" fn destroy_function(user_data: *mut c_void) {
    // SAFETY: created by Box::into_raw in register_function; SQLite calls
    // this exactly once.
    drop(unsafe { Box::from_raw(user_data.cast::<RegisteredFunction>()) });
}

unsafe extern "C" fn call_function(ctx: *mut ffi::sqlite3_context, argc: c_int, argv: *mut *mut ffi::sqlite3_value) {
    // SAFETY: SQLite passes the pointer given at registration, valid until
    // destroy_function runs.
    let function = unsafe { &*ffi::sqlite3_user_data(ctx).cast::<RegisteredFunction>() };
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // Functions run once per row from triggers: most calls keep their
        // arguments on the stack instead of allocating.
        // (Filling 64 slots costs as much as a small function's body, so
        // the common few-argument call fills 8.)
        let argc = argc.max(0) as usize;
        let mut few = [ValueRef::Null; 8];
        let mut many;
        let mut on_heap = Vec::new();
        let args: &mut [ValueRef<'_>] = if argc <= few.len() {
            &mut few[..argc]
        } else if argc <= 64 {
            many = [ValueRef::Null; 64];
            &mut many[..argc]
        } else {
            on_heap.resize(argc, ValueRef::Null);
            &mut on_heap
        };
        for (i, arg) in args.iter_mut().enumerate() {
            // SAFETY: argv holds argc values that live for this call.
            *arg = unsafe { value_ref(*argv.add(i)) };
        }
        // SAFETY: ctx is the live context of this call.
        let call = CallContext { handle: unsafe { ffi::sqlite3_context_db_handle(ctx) }, connection: OnceCell::new() };
        match &function.body {
            Body::Returning(body) => body(&call, args).map(|value| {
                // SAFETY: ctx is the live context of this call.
                unsafe { set_result(ctx, value) }
            }),
            Body::Emitting(body) => body(&call, args, Emit { ctx, _call: std::marker::PhantomData }),
        }
    }));
    let result = outcome.unwrap_or_else(|panic| Err(panic_error(function.name, panic)));
    if let Err(err) = result {
        // SAFETY: ctx is the live context of this call.
        unsafe { set_error(ctx, function.name, &err) }
    }
}

pub(crate) fn panic_error(name: &str, panic: Box<dyn std::any::Any + Send>) -> OpliteError {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    OpliteError::Internal(format!("panic in {name}(): {message}"))
}

/// Reads a `sqlite3_value` without copying its text or blob.
///
/// SAFETY: `value` must be a valid protected value for the lifetime `'a`.
pub(crate) unsafe fn value_ref<'a>(value: *mut ffi::sqlite3_value) -> ValueRef<'a> {
    unsafe {
        match ffi::sqlite3_value_type(value) {
            ffi::SQLITE_INTEGER => ValueRef::Integer(ffi::sqlite3_value_int64(value)),
            ffi::SQLITE_FLOAT => ValueRef::Real(ffi::sqlite3_value_double(value)),
            ffi::SQLITE_TEXT => {
                let text = ffi::sqlite3_value_text(value);
                let len = ffi::sqlite3_value_bytes(value);
                if text.is_null() || len <= 0 {
                    ValueRef::Text(&[])
                } else {
                    ValueRef::Text(std::slice::from_raw_parts(text, len as usize))
                }
            }
            ffi::SQLITE_BLOB => {
                let blob = ffi::sqlite3_value_blob(value);
                let len = ffi::sqlite3_value_bytes(value);
                if blob.is_null() || len <= 0 {
                    ValueRef::Blob(&[])
                } else {
                    ValueRef::Blob(std::slice::from_raw_parts(blob.cast::<u8>(), len as usize))
                }
            }
            _ => ValueRef::Null,
        }
    }
}

pub(crate) unsafe fn set_result(ctx: *mut ffi::sqlite3_context, value: Value) {
    unsafe {
        match value {
            Value::Null => ffi::sqlite3_result_null(ctx),
            Value::Integer(i) => ffi::sqlite3_result_int64(ctx, i),
            Value::Real(r) => ffi::sqlite3_result_double(ctx, r),
            Value::Text(s) => ffi::sqlite3_result_text64(
                ctx,
                s.as_ptr().cast::<c_char>(),
                s.len() as u64,
                ffi::SQLITE_TRANSIENT(),
                ffi::SQLITE_UTF8 as u8,
            ),
            Value::Blob(b) => {
                ffi::sqlite3_result_blob64(ctx, b.as_ptr().cast::<c_void>(), b.len() as u64, ffi::SQLITE_TRANSIENT())
            }
        }
    }
}

/// Sets a borrowed value as the result; SQLite copies text and blobs.
pub(crate) unsafe fn set_result_ref(ctx: *mut ffi::sqlite3_context, value: ValueRef<'_>) {
    unsafe {
        match value {
            ValueRef::Null => ffi::sqlite3_result_null(ctx),
            ValueRef::Integer(i) => ffi::sqlite3_result_int64(ctx, i),
            ValueRef::Real(r) => ffi::sqlite3_result_double(ctx, r),
            ValueRef::Text(s) => ffi::sqlite3_result_text64(
                ctx,
                s.as_ptr().cast::<c_char>(),
                s.len() as u64,
                ffi::SQLITE_TRANSIENT(),
                ffi::SQLITE_UTF8 as u8,
            ),
            ValueRef::Blob(b) => {
                ffi::sqlite3_result_blob64(ctx, b.as_ptr().cast::<c_void>(), b.len() as u64, ffi::SQLITE_TRANSIENT())
            }
        }
    }
}

/// Sets the message first and the code second: `sqlite3_result_error`
/// resets the code to `SQLITE_ERROR`, `sqlite3_result_error_code` keeps the
/// message. The message starts with the function's name, as the reference
/// core's do.
unsafe fn set_error(ctx: *mut ffi::sqlite3_context, function: &str, err: &OpliteError) {
    let message = err.reported_by(function);
    unsafe {
        ffi::sqlite3_result_error(ctx, message.as_ptr().cast::<c_char>(), message.len() as c_int);
        ffi::sqlite3_result_error_code(ctx, err.code());
    }
}

/// Registers the virtual-table `module` as `name` on `db`, with `aux` as
/// its client data; SQLite owns `aux` from then on and drops it when the
/// module goes (also when registration fails).
fn create_module<T>(db: &Connection, name: &str, module: &'static ffi::sqlite3_module, aux: Box<T>) -> Result<()> {
    unsafe extern "C" fn drop_boxed<T>(aux: *mut c_void) {
        // SAFETY: created by Box::into_raw below; SQLite calls this once.
        drop(unsafe { Box::from_raw(aux.cast::<T>()) });
    }
    let c_name = CString::new(name).map_err(|_| OpliteError::Internal(format!("module name {name:?}")))?;
    // SAFETY: `module` is static and `aux` is freed by drop_boxed::<T>.
    let rc = unsafe {
        ffi::sqlite3_create_module_v2(
            db.handle(),
            c_name.as_ptr(),
            module,
            Box::into_raw(aux).cast::<c_void>(),
            Some(drop_boxed::<T>),
        )
    };
    if rc != ffi::SQLITE_OK {
        return Err(OpliteError::sqlite(
            format!("registering virtual table {name}"),
            rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None),
        ));
    }
    Ok(())
}

/// An eponymous-only module (no `xCreate`: usable without CREATE VIRTUAL
/// TABLE) that implements nothing yet: each module of this file sets the
/// methods it has and takes the rest from here.
const EPONYMOUS_MODULE: ffi::sqlite3_module = ffi::sqlite3_module {
    iVersion: 1,
    xCreate: None,
    xConnect: None,
    xBestIndex: None,
    xDisconnect: None,
    xDestroy: None,
    xOpen: None,
    xClose: None,
    xFilter: None,
    xNext: None,
    xEof: None,
    xColumn: None,
    xRowid: None,
    xUpdate: None,
    xBegin: None,
    xSync: None,
    xCommit: None,
    xRollback: None,
    xFindFunction: None,
    xRename: None,
    xSavepoint: None,
    xRelease: None,
    xRollbackTo: None,
    xShadowName: None,
    xIntegrity: None,
};

/// `xDisconnect` / `xClose` of a module whose tables or cursors are
/// `Box<T>`s made with Box::into_raw in `xConnect` / `xOpen`.
///
/// SAFETY: SQLite calls it once per table or cursor, with that pointer.
unsafe extern "C" fn free_boxed<T, P>(p: *mut P) -> c_int {
    drop(unsafe { Box::from_raw(p.cast::<T>()) });
    ffi::SQLITE_OK
}

/// Sets a virtual table's error message (`zErrMsg`), freeing the one it
/// held.
///
/// SAFETY: `slot` is an error-message pointer SQLite owns.
unsafe fn set_vtab_error(slot: *mut *mut c_char, message: &str) {
    unsafe {
        if !(*slot).is_null() {
            ffi::sqlite3_free((*slot).cast::<c_void>());
        }
        *slot = sqlite_string(message);
    }
}

/// Copies `message` into memory from sqlite3_malloc, as SQLite frees the
/// error messages of virtual tables (null if out of memory).
fn sqlite_string(message: &str) -> *mut c_char {
    // SAFETY: writes message.len() + 1 bytes into a fresh allocation of
    // that size.
    unsafe {
        let buf = ffi::sqlite3_malloc64(message.len() as u64 + 1).cast::<u8>();
        if !buf.is_null() {
            std::ptr::copy_nonoverlapping(message.as_ptr(), buf, message.len());
            *buf.add(message.len()) = 0;
        }
        buf.cast::<c_char>()
    }
}

/// Fills `buf` with SQLite's pseudo-random bytes (seeded by the VFS, so it
/// works the same natively and in the browser).
pub fn random_bytes(buf: &mut [u8]) {
    // SAFETY: writes exactly buf.len() bytes into buf.
    unsafe { ffi::sqlite3_randomness(buf.len() as c_int, buf.as_mut_ptr().cast::<c_void>()) }
}

/// The connection's `SQLITE_LIMIT_COLUMN`: the most columns a table,
/// index or result may have.
pub fn column_limit(db: &rusqlite::Connection) -> usize {
    // SAFETY: `db.handle()` is a live connection; a negative value only
    // reads the limit.
    let limit = unsafe { ffi::sqlite3_limit(db.handle(), ffi::SQLITE_LIMIT_COLUMN, -1) };
    usize::try_from(limit).unwrap_or(0)
}

/// The SQLite library version number of the running SQLite, e.g. 3045003.
pub fn sqlite_version_number() -> c_int {
    // SAFETY: no arguments, no state.
    unsafe { ffi::sqlite3_libversion_number() }
}

/// A SQLite version number (`3045003`) as SQLite's own version text (`3.45.3`).
pub fn version_text(number: c_int) -> String {
    format!("{}.{}.{}", number / 1_000_000, number / 1_000 % 1_000, number % 1_000)
}

/// The error for a host SQLite older than `oldest`; `what` ends the sentence,
/// e.g. "the oldest this build of oplite loads into".
pub fn too_old_message(running: c_int, oldest: c_int, what: &str) -> String {
    format!("SQLite {} is older than {}, {what}", version_text(running), version_text(oldest))
}

// ---------------------------------------------------------------------------
// Entry points.

/// Runs the extension's set-up on a new connection and reports failure in
/// SQLite's way: an error code and a message allocated with sqlite3_malloc.
unsafe fn init_connection(db: *mut ffi::sqlite3, pz_err_msg: *mut *mut c_char) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: SQLite hands the entry point an open connection.
        let conn = unsafe { Connection::from_handle(db) }.map_err(|e| OpliteError::sqlite("opening connection", e))?;
        crate::register(&conn)
    }));
    let result = outcome.unwrap_or_else(|panic| Err(panic_error("sqlite3_oplite_init", panic)));
    match result {
        Ok(()) => ffi::SQLITE_OK,
        Err(err) => {
            // SAFETY: pz_err_msg is either null or SQLite's out-pointer.
            unsafe { write_error_message(pz_err_msg, &err.to_string()) };
            err.code()
        }
    }
}

unsafe fn write_error_message(pz_err_msg: *mut *mut c_char, message: &str) {
    if pz_err_msg.is_null() {
        return;
    }
    unsafe {
        let buf = ffi::sqlite3_malloc64(message.len() as u64 + 1).cast::<u8>();
        if buf.is_null() {
            return;
        }
        std::ptr::copy_nonoverlapping(message.as_ptr(), buf, message.len());
        *buf.add(message.len()) = 0;
        *pz_err_msg = buf.cast::<c_char>();
    }
}

#[cfg(feature = "loadable")]
unsafe fn entry_point(db: *mut ffi::sqlite3, pz_err_msg: *mut *mut c_char, p_api: *mut ffi::sqlite3_api_routines) -> c_int {
    if p_api.is_null() {
        return ffi::SQLITE_ERROR;
    }
    // SAFETY: p_api is the host's routine table; it outlives the extension.
    let init = catch_unwind(AssertUnwindSafe(|| unsafe { ffi::rusqlite_extension_init2(p_api) }));
    match init {
        Ok(Ok(())) => unsafe { init_connection(db, pz_err_msg) },
        failed => {
            let message = match failed {
                // The build's SQLite headers set the oldest host it can use.
                Ok(Err(ffi::InitError::VersionMismatch { compile_time, runtime })) => {
                    too_old_message(runtime, compile_time, "the oldest this build of oplite loads into")
                }
                Ok(Err(err)) => format!("oplite cannot load into this SQLite: {err}"),
                _ => "oplite cannot load into this SQLite: its routine table could not be read".to_owned(),
            };
            // The routine table was not installed, so allocate the message
            // with the host's own sqlite3_malloc from it.
            unsafe {
                if let (false, Some(malloc)) = (pz_err_msg.is_null(), (*p_api).malloc) {
                    let buf = malloc(message.len() as c_int + 1).cast::<u8>();
                    if !buf.is_null() {
                        std::ptr::copy_nonoverlapping(message.as_ptr(), buf, message.len());
                        *buf.add(message.len()) = 0;
                        *pz_err_msg = buf.cast::<c_char>();
                    }
                }
            }
            ffi::SQLITE_ERROR
        }
    }
}

#[cfg(not(feature = "loadable"))]
unsafe fn entry_point(db: *mut ffi::sqlite3, pz_err_msg: *mut *mut c_char, _p_api: *mut ffi::sqlite3_api_routines) -> c_int {
    // Linked directly against the host's SQLite: the routine table is not
    // needed (and is null when SQLite was built without extension loading).
    unsafe { init_connection(db, pz_err_msg) }
}

/// oplite's own SQLite extension entry point: registers oplite on one
/// connection, as [`register`](crate::register) does.
///
/// Exported from every build under this name (C declaration in
/// `include/oplite.h`). A host loading `liboplite.so` names it in
/// `load_extension`; a program linking the static library can pass it to
/// `sqlite3_auto_extension` itself or call it on an open connection.
///
/// ```text
/// sqlite> .load ./dist/lib/liboplite sqlite3_oplite_init
/// ```
///
/// # Arguments
///
/// - `db`: the open connection to register oplite on.
/// - `pz_err_msg`: where to put an error message, or null. On failure it
///   receives a message allocated with `sqlite3_malloc`, which the caller
///   frees with `sqlite3_free` (SQLite does when it called the entry point).
/// - `p_api`: SQLite's routine table for extensions. The loadable build
///   calls SQLite through it and fails with `SQLITE_ERROR` when it is null
///   or its SQLite is older than 3.45.3; the builds that link SQLite ignore
///   it (it may be null).
///
/// # Returns
///
/// `SQLITE_OK` (0), or the SQLite result code of the failure with the
/// message in `*pz_err_msg`: `SQLITE_MISUSE` for a SQLite older than
/// [`MIN_SQLITE_VERSION`](crate::MIN_SQLITE_VERSION), the code of
/// [`OpliteError::code`] otherwise.
///
/// # Safety
///
/// `db` must be an open connection, `pz_err_msg` null or valid for writing
/// a pointer, and `p_api` null or the routine table of the SQLite that
/// opened `db`, as SQLite passes them to an extension entry point.
#[no_mangle]
pub unsafe extern "C" fn sqlite3_oplite_init(
    db: *mut ffi::sqlite3,
    pz_err_msg: *mut *mut c_char,
    p_api: *mut ffi::sqlite3_api_routines,
) -> c_int {
    unsafe { entry_point(db, pz_err_msg, p_api) }
}

/// The entry point under the PowerSync core's name: the same as
/// [`sqlite3_oplite_init`], arguments, result and all.
///
/// The PowerSync SDKs name this entry point when they load the core's
/// library (`load_extension(path, "sqlite3_powersync_init")`), so oplite
/// exports it too and loads in the core's place without changes to the
/// host.
///
/// # Safety
///
/// As for [`sqlite3_oplite_init`].
#[no_mangle]
pub unsafe extern "C" fn sqlite3_powersync_init(
    db: *mut ffi::sqlite3,
    pz_err_msg: *mut *mut c_char,
    p_api: *mut ffi::sqlite3_api_routines,
) -> c_int {
    unsafe { entry_point(db, pz_err_msg, p_api) }
}

#[cfg(not(feature = "loadable"))]
unsafe extern "C" fn auto_entry_point(
    db: *mut ffi::sqlite3,
    pz_err_msg: *mut *mut c_char,
    p_api: *const ffi::sqlite3_api_routines,
) -> c_int {
    unsafe { entry_point(db, pz_err_msg, p_api.cast_mut()) }
}

/// Registers oplite with `sqlite3_auto_extension`, so that every connection
/// the process opens from now on has it: the C entry point of the static
/// library (Android, iOS), declared in `include/oplite.h`.
///
/// Call it once, before opening connections; calling it again is harmless
/// (SQLite ignores a function it already has). Connections opened earlier
/// do not get oplite. Exists only in builds that link SQLite directly (the
/// static library, the WASM package, the tests), not in `liboplite.so`.
/// Rust code can call [`register_auto_extension`](crate::register_auto_extension),
/// which returns a [`Result`] instead.
///
/// ```c
/// #include "oplite.h"
///
/// if (oplite_auto_extension() != 0) { /* out of memory */ }
/// sqlite3 *db;
/// sqlite3_open("app.db", &db); // has powersync_init(), powersync_control(), ...
/// ```
///
/// # Returns
///
/// `SQLITE_OK` (0), or SQLite's result code when `sqlite3_auto_extension`
/// fails (`SQLITE_NOMEM`). When registering oplite on a later connection
/// fails (a SQLite older than [`MIN_SQLITE_VERSION`](crate::MIN_SQLITE_VERSION)),
/// opening that connection fails with oplite's message.
#[cfg(not(feature = "loadable"))]
#[no_mangle]
pub extern "C" fn oplite_auto_extension() -> c_int {
    // SAFETY: registers a function pointer with SQLite's global list;
    // registering the same pointer twice is a no-op.
    unsafe { ffi::sqlite3_auto_extension(Some(auto_entry_point)) }
}

#[cfg(test)]
mod tests {
    use super::{too_old_message, version_text};

    #[test]
    fn versions_read_as_sqlite_writes_them() {
        assert_eq!(version_text(3_045_003), "3.45.3");
        assert_eq!(version_text(3_040_001), "3.40.1");
        assert_eq!(version_text(3_044_000), "3.44.0");
        assert_eq!(version_text(3_100_010), "3.100.10");
        assert_eq!(
            too_old_message(3_040_001, 3_045_003, "the oldest this build of oplite loads into"),
            "SQLite 3.40.1 is older than 3.45.3, the oldest this build of oplite loads into"
        );
    }
}
