//! The key-value tables and every key in them: `ps_kv`, the reference
//! core's table, which the SDKs read and apps and tools list, so it holds
//! only the keys the reference writes; and `ps_oplite_kv` (internal schema
//! version 4), oplite's own state. Keeping the names and accessors here
//! means no module imports a key from the one that happens to use it most.

use rusqlite::{params, Connection, OptionalExtension, ToSql};

use crate::error::{Result, SqliteResultExt};

/// `ps_kv`: this database's client id, a random UUID (`client_id.rs`).
pub const CLIENT_ID: &str = "client_id";
/// `ps_kv`: the write checkpoint the client waits for (i64::MAX while
/// uploads are pending and the host has not set one). The upload queue's
/// triggers write it too (`schema/crud.rs`, as SQL text).
pub const TARGET: &str = "target_checkpoint_request_id";
/// `ps_kv`: the write checkpoint of the last validated checkpoint.
pub const LAST_SEEN: &str = "last_seen_checkpoint_request_id";
/// `ps_kv`: the write checkpoint of the last applied checkpoint.
pub const LAST_APPLIED: &str = "last_applied_checkpoint_request_id";
/// `ps_kv`: the last checkpoint request id allocated or seeded
/// (`sync/requests.rs`).
pub const LAST_REQUESTED: &str = "last_requested_checkpoint_request_id";

/// `ps_oplite_kv`: `<token>/<calls>` of the sync iteration allowed to write
/// sync state (why: `OWNER_KEY` in `sync/client.rs`).
pub const SYNC_ITERATION: &str = "sync_iteration";

/// Reads a `ps_kv` value as an integer.
pub fn int(db: &Connection, key: &str) -> Result<Option<i64>> {
    db.prepare_cached("SELECT CAST(value AS INTEGER) FROM ps_kv WHERE key = ?1").and_then(|mut s| s.query_row([key], |r| r.get(0)))
        .optional()
        .context("reading ps_kv")
}

/// Reads a `ps_kv` value as text.
pub fn text(db: &Connection, key: &str) -> Result<Option<String>> {
    db.prepare_cached("SELECT CAST(value AS TEXT) FROM ps_kv WHERE key = ?1").and_then(|mut s| s.query_row([key], |r| r.get(0)))
        .optional()
        .context("reading ps_kv")
}

/// Writes a `ps_kv` value (text or integer, stored as given).
pub fn set(db: &Connection, key: &str, value: impl ToSql) -> Result<()> {
    db.prepare_cached("INSERT OR REPLACE INTO ps_kv(key, value) VALUES (?1, ?2)").and_then(|mut s| s.execute(params![key, value]))
        .context("writing ps_kv")?;
    Ok(())
}

/// Deletes a `ps_kv` row.
pub fn delete(db: &Connection, key: &str) -> Result<()> {
    db.prepare_cached("DELETE FROM ps_kv WHERE key = ?1").and_then(|mut s| s.execute([key])).context("writing ps_kv")?;
    Ok(())
}

/// Reads one of oplite's own values.
pub fn own(db: &Connection, key: &str) -> Result<Option<String>> {
    db.prepare_cached("SELECT value FROM ps_oplite_kv WHERE key = ?1").and_then(|mut s| s.query_row([key], |r| r.get(0)))
        .optional()
        .context("reading ps_oplite_kv")
}

/// Writes one of oplite's own values.
pub fn set_own(db: &Connection, key: &str, value: &str) -> Result<()> {
    db.prepare_cached("INSERT OR REPLACE INTO ps_oplite_kv(key, value) VALUES (?1, ?2)").and_then(|mut s| s.execute(params![key, value]))
        .context("writing ps_oplite_kv")?;
    Ok(())
}
