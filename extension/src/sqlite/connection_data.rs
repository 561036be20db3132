//! State that lives as long as a connection, and the change hooks that feed
//! it.
//!
//! Some of oplite's state belongs to one connection, not to the database:
//! which tables changed since the host last asked (`powersync_update_hooks`),
//! whether a sync apply is running. It is kept with
//! `sqlite3_set_clientdata` (SQLite 3.44, oplite's minimum), which frees it
//! when the connection closes, so there is no global registry to leak from.
//!
//! The change hooks (`sqlite3_update_hook`, `sqlite3_commit_hook`,
//! `sqlite3_rollback_hook`) are per connection and there is one of each:
//! installing them replaces the host's. oplite installs them only when the
//! host asks (`powersync_update_hooks('install')`), as the reference core
//! does. Their state cannot be client data: SQLite frees client data before
//! the rollback it runs while closing a connection, and that rollback calls
//! the hook (found the hard way: a use after free that hung at exit).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rusqlite::ffi;
use rusqlite::Connection;

/// Names one kind of per-connection data and its type. Declare each key
/// once, as a `static`, so a name is never used with two types.
pub struct ClientDataKey<T> {
    name: &'static CStr,
    _type: PhantomData<fn() -> T>,
}

impl<T> ClientDataKey<T> {
    /// A key stored under `name` (by convention `oplite.<what>`).
    pub const fn new(name: &'static CStr) -> Self {
        ClientDataKey { name, _type: PhantomData }
    }
}

/// How many scopes of one kind (e.g. "inside a sync operation") are open
/// on a connection; kept as client data under a [`ClientDataKey`].
#[derive(Default)]
pub struct ScopeCounter {
    depth: Arc<AtomicUsize>,
}

impl ScopeCounter {
    /// True while a [`ScopeGuard`] of this kind is alive.
    pub fn active(&self) -> bool {
        self.depth.load(Ordering::SeqCst) > 0
    }

    /// The counter itself, for a function registered on the connection.
    pub fn shared(&self) -> Arc<AtomicUsize> {
        self.depth.clone()
    }
}

/// Keeps one scope of `key`'s kind open on a connection while it lives.
pub struct ScopeGuard<'c> {
    counter: &'c ScopeCounter,
}

impl<'c> ScopeGuard<'c> {
    /// Opens a scope on `db`.
    pub fn enter(db: &'c Connection, key: &ClientDataKey<ScopeCounter>) -> Self {
        let counter = client_data(db, key);
        counter.depth.fetch_add(1, Ordering::SeqCst);
        ScopeGuard { counter }
    }
}

impl Drop for ScopeGuard<'_> {
    fn drop(&mut self) {
        self.counter.depth.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The data stored under `key` on `db`, created with `T::default()` on
/// first use and dropped when the connection closes. Use interior
/// mutability for state that changes.
pub fn client_data<'c, T: Default + Send + Sync + 'static>(db: &'c Connection, key: &ClientDataKey<T>) -> &'c T {
    // SAFETY: the pointer under this key was always created below as a
    // Box<T> (the key's type), and SQLite keeps it until the connection
    // closes, which the borrow of `db` rules out for 'c.
    unsafe {
        let existing = ffi::sqlite3_get_clientdata(db.handle(), key.name.as_ptr());
        if !existing.is_null() {
            return &*existing.cast::<T>();
        }
        let fresh = Box::into_raw(Box::<T>::default());
        let rc = ffi::sqlite3_set_clientdata(db.handle(), key.name.as_ptr(), fresh.cast::<c_void>(), Some(drop_box::<T>));
        if rc != ffi::SQLITE_OK {
            // SQLite called drop_box already (it frees on failure); nothing
            // is stored, so keep a leaked value rather than fail: this only
            // happens when SQLite is out of memory.
            return Box::leak(Box::<T>::default());
        }
        &*fresh
    }
}

unsafe extern "C" fn drop_box<T>(data: *mut c_void) {
    // SAFETY: created by Box::into_raw in client_data with this T.
    drop(unsafe { Box::from_raw(data.cast::<T>()) });
}

/// Receives the connection's row changes and transaction outcomes.
pub trait ChangeObserver: Default + Send + Sync + 'static {
    /// A row of `table` was inserted, updated or deleted (rowid tables only:
    /// SQLite does not report WITHOUT ROWID tables).
    fn changed(&self, table: &str);
    /// The transaction is about to commit.
    fn committing(&self);
    /// The transaction rolled back.
    fn rolled_back(&self);
}

/// Installs update, commit and rollback hooks on `db` that report to
/// `observer` (replacing any hooks the host installed).
///
/// The observer must outlive the connection, hence `'static`: SQLite calls
/// the rollback hook while it closes the connection, *after* it has freed
/// the connection's client data (see `sqlite3Close`), so the observer
/// cannot live there. Callers leak one observer per connection.
pub fn install_change_hooks<T: ChangeObserver>(db: &Connection, observer: &'static T) {
    let arg = (observer as *const T).cast_mut().cast::<c_void>();
    // SAFETY: the observer lives forever; the hooks may fire until the
    // connection is gone.
    unsafe {
        ffi::sqlite3_update_hook(db.handle(), Some(update_hook::<T>), arg);
        ffi::sqlite3_commit_hook(db.handle(), Some(commit_hook::<T>), arg);
        ffi::sqlite3_rollback_hook(db.handle(), Some(rollback_hook::<T>), arg);
    }
}

unsafe extern "C" fn update_hook<T: ChangeObserver>(
    arg: *mut c_void,
    _op: c_int,
    _db_name: *const c_char,
    table: *const c_char,
    _rowid: ffi::sqlite3_int64,
) {
    // SAFETY: arg is the observer given in install_change_hooks; table is a
    // NUL-terminated name valid for this call.
    let _ = catch_unwind(AssertUnwindSafe(|| unsafe {
        let observer = &*arg.cast::<T>();
        if let Ok(name) = CStr::from_ptr(table).to_str() {
            observer.changed(name);
        }
    }));
}

unsafe extern "C" fn commit_hook<T: ChangeObserver>(arg: *mut c_void) -> c_int {
    // SAFETY: see update_hook. Returning 0 lets the commit proceed.
    let _ = catch_unwind(AssertUnwindSafe(|| unsafe { (*arg.cast::<T>()).committing() }));
    0
}

unsafe extern "C" fn rollback_hook<T: ChangeObserver>(arg: *mut c_void) {
    // SAFETY: see update_hook.
    let _ = catch_unwind(AssertUnwindSafe(|| unsafe { (*arg.cast::<T>()).rolled_back() }));
}
