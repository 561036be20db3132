//! oplite as a run-time loadable SQLite extension: `liboplite.so`, for
//! `load_extension` with the entry point `sqlite3_oplite_init`, or
//! `sqlite3_powersync_init` as the PowerSync SDKs call it.
//!
//! The code is all in the extension crate, built here with its feature
//! `loadable`; this crate only links it into a cdylib, which exports the
//! crate's two `#[no_mangle]` entry points and nothing else.

pub use oplite::sqlite::{sqlite3_oplite_init, sqlite3_powersync_init};
