//! oplite for the web: SQLite and the oplite extension in one wasm-bindgen
//! module, for browsers (dedicated Workers) and Node.
//!
//! SQLite comes from `sqlite-wasm-rs` (its C compiled with clang for
//! wasm32-unknown-unknown) and rusqlite runs on top of it; oplite is linked in
//! as a static extension and registered with `sqlite3_auto_extension`, so
//! every connection has the PowerSync SQL surface.
//!
//! Storage, chosen per database when it is opened:
//!
//! | `vfs` | where the file lives | durability |
//! |---|---|---|
//! | `memory` | wasm memory ([`sqlite_wasm_rs`]'s `memvfs`) | none; gone at close |
//! | `opfs` | OPFS sync access handles (`sqlite-wasm-vfs` `sahpool`, one pool directory per database); dedicated Worker only | every commit, as SQLite's default `synchronous=FULL` asks |
//! | `idb` | [`mirror`]: the file in wasm memory, every committed transaction copied to IndexedDB by the JS layer | every committed transaction, once `flush()` resolves |
//!
//! Every VFS is wrapped by [`vfs_wrapper`], which locks main database files
//! across this module's connections, serves readers their snapshots, and
//! counts the bytes SQLite writes to temporary files, journals and the
//! database itself; `stats()` reports them, and the tests check that a sync
//! writes no temporary-file pages.
//!
//! The JS API (`js/oplite.js`, typed in `js/oplite.d.ts`) wraps the
//! [`database::Database`] class exported here: it loads the module, holds
//! the cross-tab lock, persists IndexedDB batches and serialises calls.
//!
//! Panics abort (wasm32-unknown-unknown has no unwinding here); the JS side
//! sees a `RuntimeError: unreachable` and must reopen the module.
//!
//! Everything but [`snapshot`] (pure bookkeeping, unit-tested natively) is
//! for wasm32-unknown-unknown only, so workspace-wide commands still work.

#[cfg(all(target_family = "wasm", target_os = "unknown"))]
mod alloc;
#[cfg(all(target_family = "wasm", target_os = "unknown"))]
pub mod cipher;
#[cfg(all(target_family = "wasm", target_os = "unknown"))]
pub mod database;
#[cfg(all(target_family = "wasm", target_os = "unknown"))]
mod errors;
#[cfg(all(target_family = "wasm", target_os = "unknown"))]
pub mod io_time;
#[cfg(all(target_family = "wasm", target_os = "unknown"))]
pub mod mirror;
pub mod snapshot;
#[cfg(all(target_family = "wasm", target_os = "unknown"))]
pub mod transfer;
#[cfg(all(target_family = "wasm", target_os = "unknown"))]
pub mod values;
#[cfg(all(target_family = "wasm", target_os = "unknown"))]
pub mod vfs_wrapper;
