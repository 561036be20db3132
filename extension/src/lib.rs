//! oplite: an offline-first client sync engine for SQLite.
//!
//! oplite is a SQLite extension. It keeps a local database in sync with a
//! server speaking the PowerSync protocol, and exposes the SQL surface of the
//! PowerSync core (`powersync_init()`, `powersync_control()`,
//! `powersync_replace_schema()`, ...) so the PowerSync SDKs can load it in
//! its place. The contract it implements is `docs/protocol.md`, its SQL
//! functions are listed in `docs/sql.md`.
//!
//! # Loading it
//!
//! A host loads oplite in one of three ways; each registers the
//! same SQL functions:
//!
//! - **A Rust program using rusqlite** calls [`register`] on a connection,
//!   or [`register_auto_extension`] once, before opening any, so that every
//!   connection opened afterwards has oplite.
//! - **A program linking the static library** (Android, iOS) calls the C
//!   function [`oplite_auto_extension`] once, before opening connections;
//!   `include/oplite.h` declares it.
//! - **A host loading `liboplite.so` at run time** (a SQLite shell, Node,
//!   Python, the PowerSync SDKs) names the entry point
//!   [`sqlite3_oplite_init`], or [`sqlite3_powersync_init`], the name the
//!   SDKs look up.
//!
//! ```
//! let conn = rusqlite::Connection::open_in_memory()?;
//! oplite::register(&conn)?;
//! conn.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;")?;
//! let version: String = conn.query_row("SELECT oplite_version()", [], |row| row.get(0))?;
//! assert!(version.starts_with("oplite "));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Failures come back as [`OpliteError`], whose [`code`](OpliteError::code)
//! is the SQLite result code the PowerSync core reports for the same
//! failure.
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
//! build with a message that says so). [`register_auto_extension`] and
//! [`oplite_auto_extension`] exist only in the builds that link SQLite.
//!
//! # SQLite versions
//!
//! oplite refuses a SQLite older than [`MIN_SQLITE_VERSION`] (3.44.0). The
//! loadable build needs 3.45.3 or newer, the version its bindings were
//! generated for; an older host's `load_extension` fails with a message
//! saying so.
//!
//! # Panics
//!
//! Native builds unwind and catch every panic where SQLite calls into Rust;
//! a panic becomes an `SQLITE_INTERNAL` error ([`OpliteError::Internal`]).
//! WASM builds abort.
//!
//! # Internals
//!
//! Only what is documented here is an API. The crate also makes its
//! internal modules public, so that the workspace's integration tests, its
//! command-line host and its WASM crates can reach them; they are hidden
//! from this reference and may change in any release. In brief: `sqlite`
//! (the only module with `unsafe` code: entry points, function
//! registration, values crossing the C boundary), `migrations` (the internal
//! schema and the adoption of a database the PowerSync core wrote),
//! `functions` (the SQL functions' registration), `kv`, `client_id`,
//! `uuid`, `bson` (a BSON decoder for sync lines), `sync` (the protocol
//! engine behind `powersync_control`), `sync_local` (applying checkpoints),
//! `schema` (the app's views, triggers, data tables and upload queue) and
//! `uninstall` (`oplite_uninstall()`). `docs/architecture.md` describes
//! them.
#![warn(missing_docs)]

pub mod error;

// The modules below are public only for the workspace's tests and tools (the
// integration tests, benchmarks and fuzz targets, the CLI, the WASM crates,
// the loadable workspace), not an API: hidden from the reference.
#[doc(hidden)]
pub mod bson;
#[doc(hidden)]
pub mod client_id;
#[doc(hidden)]
pub mod functions;
#[doc(hidden)]
pub mod kv;
#[doc(hidden)]
pub mod migrations;
#[doc(hidden)]
pub mod schema;
mod sql_args;
#[doc(hidden)]
pub mod sqlite;
#[doc(hidden)]
pub mod sync;
#[doc(hidden)]
pub mod sync_local;
#[doc(hidden)]
pub mod uninstall;
#[doc(hidden)]
pub mod uuid;

use rusqlite::Connection;

pub use error::{OpliteError, Result};
#[cfg(not(feature = "loadable"))]
pub use sqlite::oplite_auto_extension;
pub use sqlite::{sqlite3_oplite_init, sqlite3_powersync_init};

/// The oldest SQLite oplite runs on, as SQLite numbers its versions
/// (`sqlite3_libversion_number()`): 3.44.0, the same as the PowerSync core.
///
/// [`register`] and the entry points refuse an older SQLite. The loadable
/// build has a higher floor of its own, 3.45.3 (see the crate
/// documentation).
pub const MIN_SQLITE_VERSION: i32 = 3_044_000;

/// Registers oplite's SQL functions and virtual tables on one connection.
///
/// This is what the entry points ([`sqlite3_oplite_init`],
/// [`oplite_auto_extension`]) run on each connection they are given. It
/// only registers: the database is not read or changed until the app calls
/// `powersync_init()` (or the SDKs' `powersync_replace_schema()`), which
/// creates or adopts the internal tables. The registrations last as long
/// as the connection. Calling it again on the same connection is safe: the
/// registrations are replaced.
///
/// `db` is a connection of rusqlite 0.43, the version oplite is built
/// with; a connection opened elsewhere can be wrapped with
/// `rusqlite::Connection::from_handle`.
///
/// # Errors
///
/// [`OpliteError::Misuse`] when the running SQLite is older than
/// [`MIN_SQLITE_VERSION`]; [`OpliteError::Sqlite`] when SQLite refuses a
/// registration (out of memory, for instance).
///
/// # Example
///
/// ```
/// let conn = rusqlite::Connection::open_in_memory()?;
/// oplite::register(&conn)?;
/// // The PowerSync core's surface, ready for an SDK or the app.
/// conn.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;")?;
/// let core: String = conn.query_row("SELECT powersync_rs_version()", [], |row| row.get(0))?;
/// assert!(core.starts_with("0.5."));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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

/// Registers oplite for every connection opened from now on in this
/// process, through `sqlite3_auto_extension`: the Rust form of
/// [`oplite_auto_extension`].
///
/// Call it once, before opening the connections; calling it again does
/// nothing more. Connections opened before the call do not get oplite
/// (use [`register`] on those). Only in builds that link SQLite directly
/// (features `bundled` or `static`), not in the `loadable` one.
///
/// # Errors
///
/// [`OpliteError::Sqlite`] with SQLite's result code when
/// `sqlite3_auto_extension` fails (out of memory). A failure of the
/// registration itself on a later connection, such as a SQLite older than
/// [`MIN_SQLITE_VERSION`], makes that connection's open fail instead.
///
/// # Example
///
/// ```
/// oplite::register_auto_extension()?;
/// let conn = rusqlite::Connection::open_in_memory()?;
/// conn.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;")?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
