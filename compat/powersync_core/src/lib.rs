//! oplite in the place of `powersync_core` 0.5.4, the PowerSync core that the
//! Rust SDK links: the same two public functions, backed by oplite's static
//! library, which the build script compiles (see `build.rs`). The SDK calls
//! [`powersync_init_static`] before it opens connections; from then on every
//! connection the process opens has oplite's SQL functions, exactly as it
//! would have the original's. Nothing else of the original is public, so an
//! app that switches with `[patch.crates-io]` compiles unchanged.
//! docs/rust-sdk.md in oplite's repository is the guide.

use core::ffi::{c_char, c_int};

use powersync_sqlite_nostd as sqlite;

mod ffi {
    use core::ffi::{c_char, c_int};

    use super::sqlite;

    extern "C" {
        /// oplite's `sqlite3_auto_extension` registration (include/oplite.h).
        pub fn oplite_auto_extension() -> c_int;
        /// oplite's entry point under the name SQLite derives from the
        /// original's library file name.
        pub fn sqlite3_powersync_init(
            db: *mut sqlite::sqlite3,
            err_msg: *mut *mut c_char,
            api: *mut sqlite::api_routines,
        ) -> c_int;
    }
}

/// The extension's entry point, as in the original: registers oplite on one
/// connection `db`. `api` may be null, since the library calls the SQLite the
/// program links. On failure, returns SQLite's error code and, when
/// `err_msg` is not null, stores there a message allocated with
/// `sqlite3_malloc`. Not `unsafe`, as in the original: `db` must be an open
/// connection of the SQLite this program links, and `err_msg` null or valid
/// for a write.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub extern "C" fn sqlite3_powersync_init(
    db: *mut sqlite::sqlite3,
    err_msg: *mut *mut c_char,
    api: *mut sqlite::api_routines,
) -> c_int {
    // SAFETY: the pointers are the caller's, as documented above.
    unsafe { ffi::sqlite3_powersync_init(db, err_msg, api) }
}

/// Registers oplite with `sqlite3_auto_extension`, so that every connection
/// opened from now on has it. Returns `SQLITE_OK` (0) or SQLite's error code
/// (`SQLITE_NOMEM`). Calling it again is harmless.
#[cfg(feature = "static")]
#[no_mangle]
pub extern "C" fn powersync_init_static() -> c_int {
    // SAFETY: oplite_auto_extension takes no arguments and only registers a
    // function pointer with SQLite.
    unsafe { ffi::oplite_auto_extension() }
}
