//! oplite: an offline-first client sync engine for SQLite.
//!
//! oplite is a SQLite extension. It keeps a local database in sync with a
//! server speaking the PowerSync protocol, and exposes the SQL surface of the
//! PowerSync core so the PowerSync SDKs can load it in its place. The
//! contract it implements is `docs/protocol.md`.
//!
//! # Layout
//!
//! - [`sqlite`]: the only module with `unsafe` code: entry points, function
//!   registration, values crossing the C boundary.
//! - [`error`]: the crate's error enum and its mapping to SQLite codes.
//! - [`migrations`]: the internal schema (`sql/migrations/*.sql`), and the
//!   adoption of a database the PowerSync core wrote.
//! - [`functions`]: the SQL functions, one module per concern, each with a
//!   `register` function called from [`register`]; `sql_args` holds the
//!   argument and transaction checks they all share.
//! - [`kv`]: `ps_kv` and oplite's own `ps_oplite_kv`, their keys and accessors.
//! - [`client_id`]: the client id and `powersync_init()`, which creates it;
//!   [`uuid`] makes random UUIDs.
//! - [`uninstall`]: `oplite_uninstall()`, the way back to the PowerSync
//!   core's layout.
//! - [`schema`]: the app's schema (views, triggers, typed data tables), the
//!   upload queue, and the interface the sync apply writes rows through.
//!
//! # Builds
//!
//! | feature | artefact | SQLite |
//! |---|---|---|
//! | `loadable` | `liboplite.so` for `load_extension`, built by the workspace `loadable/` | the host's, through its routine table |
//! | `static` | static library; `oplite_auto_extension()` | linked directly |
//! | `bundled` (default) | tests, benchmarks, the CLI | compiled in |
//!
//! `loadable` excludes the other two: rusqlite cannot call SQLite both
//! through a routine table and directly (the build script stops such a
//! build with a message that says so).
//!
//! # Panics
//!
//! Native builds unwind and catch every panic where SQLite calls into Rust
//! (see [`sqlite`]); a panic becomes an `SQLITE_INTERNAL` error. WASM builds
//! abort.

pub mod bson;
pub mod client_id;
pub mod error;
pub mod functions;
pub mod kv;
pub mod migrations;
pub mod schema;
mod sql_args;
pub mod sqlite;
pub mod sync;
pub mod sync_local;
pub mod uninstall;
pub mod uuid;

use rusqlite::Connection;

pub use error::{OpliteError, Result};

/// The oldest SQLite oplite runs on (3.44.0, as the reference core).
pub const MIN_SQLITE_VERSION: i32 = 3_044_000;

/// Registers everything oplite offers on a connection. Called by the entry
/// points; safe to call again (registrations are replaced).
pub fn register(db: &Connection) -> Result<()> {
    let version = sqlite::sqlite_version_number();
    if version < MIN_SQLITE_VERSION {
        return Err(OpliteError::Misuse {
            function: "sqlite3_oplite_init",
            reason: sqlite::too_old_message(version, MIN_SQLITE_VERSION, "the oldest oplite runs on"),
        });
    }
    functions::register(db)
}

/// Registers oplite for every connection opened from now on, in builds that
/// link SQLite directly. Returns an error if SQLite refuses.
#[cfg(not(feature = "loadable"))]
pub fn register_auto_extension() -> Result<()> {
    match sqlite::oplite_auto_extension() {
        rusqlite::ffi::SQLITE_OK => Ok(()),
        rc => Err(OpliteError::sqlite(
            "registering oplite with sqlite3_auto_extension",
            rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rc), None),
        )),
    }
}
