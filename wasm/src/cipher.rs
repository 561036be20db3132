//! Encrypted files: this module's SQLite is SQLite3MultipleCiphers, built
//! by `sqlite-wasm-rs` (its feature `sqlite3mc`), whose default cipher,
//! ChaCha20, is the one `@powersync/web`'s encrypted database uses.
//!
//! A connection to an encrypted file goes through the cipher VFS that
//! SQLite3MultipleCiphers makes on first use over the VFS it names
//! (`multipleciphers-<name>`), here over the counting wrapper, so the
//! wrapper, its snapshots and the storage below it only ever see encrypted
//! pages: OPFS and IndexedDB hold no plaintext. The key is the
//! connection's first statement, and the first read of the file checks it,
//! so a wrong key fails when the database is opened, before anything is
//! written.

use rusqlite::Connection;
use wasm_bindgen::JsValue;

use crate::errors::{sqlite_error, usage_error};

/// The VFS a connection to a file with `key` (or without one) opens on.
pub fn vfs_for(vfs: &str, key: Option<&str>) -> String {
    match key {
        Some(_) => format!("multipleciphers-{vfs}"),
        None => vfs.to_owned(),
    }
}

/// Gives a new connection its key, if any, and reads the file's schema:
/// a wrong key, no key for an encrypted file, or a key for a plain one
/// fails here with SQLITE_NOTADB and a message that says which.
pub fn unlock(conn: &Connection, name: &str, key: Option<&str>) -> Result<(), JsValue> {
    if let Some(key) = key {
        if key.is_empty() {
            return Err(usage_error(&format!("cannot open {name:?}: the key is empty (no key means no encryption)")));
        }
        let mut stmt = conn.prepare(&format!("PRAGMA key = '{}'", key.replace('\'', "''"))).map_err(|e| sqlite_error(&e))?;
        let mut rows = stmt.query([]).map_err(|e| sqlite_error(&e))?;
        while rows.next().map_err(|e| sqlite_error(&e))?.is_some() {}
    }
    match conn.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(())) {
        Ok(()) => Ok(()),
        Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) => {
            let why = if key.is_some() {
                "the key is wrong, or the file is not encrypted"
            } else {
                "the file is encrypted (open it with its key) or is not a database"
            };
            let error = sqlite_error(&e);
            let message = format!("cannot open {name:?}: {why} ({e})");
            let _ = js_sys::Reflect::set(&error, &"message".into(), &message.into());
            Err(error)
        }
        Err(e) => Err(sqlite_error(&e)),
    }
}
