//! Fuzz target bodies, shared by the libFuzzer binaries (fuzz_targets/)
//! and the seeded-mutation test (extension/tests/fuzz.rs, which includes
//! this file as a module).
//!
//! Each body panics on a finding: a panic in the decoders, an
//! `SQLITE_INTERNAL` from `powersync_control` (oplite turns its own panics
//! into that code at the FFI boundary), a broken round trip, or a database
//! that fails `PRAGMA integrity_check`.

use rusqlite::types::Value;
use rusqlite::{ffi, Connection};

/// JSON sync lines: never a panic; whatever oplite accepts is valid JSON
/// (by the grammar: numbers out of f64's range are valid JSON).
pub fn parse_text(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        if oplite::sync::line::parse_text(text).is_ok() {
            assert!(serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok(), "accepted invalid JSON: {text:?}");
        }
    }
}

/// BSON sync lines: never a panic.
pub fn parse_binary(data: &[u8]) {
    let _ = oplite::sync::line::parse_binary(data);
}

/// The BSON decoder into a generic value: never a panic, and what decodes
/// re-encodes (with the `bson` crate, an encoder independent of oplite) to
/// bytes that decode to the same value. (A BSON timestamp decodes to an
/// unsigned 64-bit integer, which the `bson` crate, writing integers as
/// int64, refuses above i64::MAX.)
pub fn bson(data: &[u8]) {
    if let Ok(value) = oplite::bson::from_slice::<serde_json::Value>(data) {
        match bson::serialize_to_vec(&value) {
            Ok(bytes) => {
                let again: serde_json::Value = oplite::bson::from_slice(&bytes).expect("re-encoded document does not decode");
                assert_eq!(again, value, "BSON round trip changed the value");
            }
            Err(e) => assert!(
                matches!(e.kind, bson::error::ErrorKind::TooLargeUnsignedInteger { .. }),
                "decoded {value} but cannot encode it: {e}"
            ),
        }
    }
}

/// The events `control` can send, chosen by the low four bits of an
/// event's first byte.
pub const OPS: &[&str] = &[
    "start",
    "stop",
    "line_text",
    "line_binary",
    "completed_upload",
    "connection",
    "refreshed_token",
    "target_checkpoint_request_id",
    "update_subscriptions",
    "subscriptions",
    // Not an event: a local write in SQL (an upload entry, the target
    // write checkpoint at i64::MAX, the row marked and written).
    "local_write",
    // Not an event: an unknown operation.
    "bogus",
    // Checkpoint requests (after the others, so that the seed corpus keeps
    // its meaning).
    "seed_checkpoint_request_id",
    "next_checkpoint_request_id",
    "current_checkpoint_request_id",
];

/// Payload kinds, chosen by the high three bits of an event's first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayloadKind {
    /// NULL.
    Null,
    /// Text (lossy if the bytes are not UTF-8).
    Text,
    /// The raw bytes cast to TEXT (possibly invalid UTF-8).
    RawText,
    /// A blob.
    Blob,
    /// An integer from the first eight bytes.
    Integer,
}

/// The payload kind of selector byte `sel`.
pub fn payload_kind(sel: u8) -> PayloadKind {
    match sel >> 5 {
        0 => PayloadKind::Null,
        1..=3 => PayloadKind::Text,
        4 => PayloadKind::RawText,
        5 | 6 => PayloadKind::Blob,
        _ => PayloadKind::Integer,
    }
}

/// The selector byte for `op` with payload `kind`.
pub fn selector(op: &str, kind: PayloadKind) -> u8 {
    let index = OPS.iter().position(|o| *o == op).expect("known op") as u8;
    let high = match kind {
        PayloadKind::Null => 0,
        PayloadKind::Text => 1,
        PayloadKind::RawText => 4,
        PayloadKind::Blob => 5,
        PayloadKind::Integer => 7,
    };
    (high << 5) | index
}

/// Appends one event (selector, little-endian u16 length, payload).
pub fn encode_event(out: &mut Vec<u8>, op: &str, kind: PayloadKind, payload: &[u8]) {
    out.push(selector(op, kind));
    out.extend_from_slice(&(payload.len().min(u16::MAX as usize) as u16).to_le_bytes());
    out.extend_from_slice(&payload[..payload.len().min(u16::MAX as usize)]);
}

/// Runs `SQL` in its own transaction, as a host does; returns the error.
fn host(db: &Connection, run: impl FnOnce(&Connection) -> rusqlite::Result<()>) -> Option<rusqlite::Error> {
    db.execute_batch("BEGIN IMMEDIATE").unwrap();
    match run(db) {
        Ok(()) => {
            db.execute_batch("COMMIT").unwrap();
            None
        }
        Err(e) => {
            if !db.is_autocommit() {
                db.execute_batch("ROLLBACK").unwrap();
            }
            Some(e)
        }
    }
}

/// `powersync_control` with arbitrary event sequences: events are
/// `[selector][u16 length][payload]`, at most 64 of them; the database
/// starts initialised and empty. No call may fail with SQLITE_INTERNAL and
/// the database must stay sound.
pub fn control(data: &[u8]) {
    let db = Connection::open_in_memory().unwrap();
    oplite::register(&db).unwrap();
    db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
    let mut rest = data;
    let mut writes = 0i64;
    for _ in 0..64 {
        if rest.len() < 3 {
            break;
        }
        let sel = rest[0];
        let len = (u16::from_le_bytes([rest[1], rest[2]]) as usize).min(rest.len() - 3);
        let payload = &rest[3..3 + len];
        rest = &rest[3 + len..];
        let op = OPS[(sel & 0x0f) as usize % OPS.len()];
        let error = if op == "local_write" {
            writes += 1;
            let id = String::from_utf8_lossy(payload).into_owned();
            host(&db, |db| {
                db.execute("INSERT INTO ps_crud(data, tx_id) VALUES(json_object('op', 'PUT', 'id', ?1, 'type', 'items'), ?2)", (&id, writes))?;
                db.execute_batch("INSERT OR REPLACE INTO ps_kv(key, value) VALUES('target_checkpoint_request_id', 9223372036854775807)")?;
                db.execute("INSERT OR IGNORE INTO ps_updated_rows(row_type, row_id) VALUES('items', ?1)", [&id])?;
                db.execute("INSERT OR REPLACE INTO ps_untyped(type, id, data) VALUES('items', ?1, '{}')", [&id])?;
                Ok(())
            })
        } else {
            let sql_value = match payload_kind(sel) {
                PayloadKind::Null => Value::Null,
                PayloadKind::Text => Value::Text(String::from_utf8_lossy(payload).into_owned()),
                PayloadKind::RawText | PayloadKind::Blob => Value::Blob(payload.to_vec()),
                PayloadKind::Integer => {
                    let mut bytes = [0u8; 8];
                    bytes[..payload.len().min(8)].copy_from_slice(&payload[..payload.len().min(8)]);
                    Value::Integer(i64::from_le_bytes(bytes))
                }
            };
            let sql = if payload_kind(sel) == PayloadKind::RawText {
                "SELECT powersync_control(?1, CAST(?2 AS TEXT))"
            } else {
                "SELECT powersync_control(?1, ?2)"
            };
            host(&db, |db| db.query_row(sql, (op, &sql_value), |_| Ok(())))
        };
        if let Some(rusqlite::Error::SqliteFailure(e, message)) = &error {
            assert_ne!(e.extended_code & 0xff, ffi::SQLITE_INTERNAL, "{op}: internal error (a panic?): {message:?}");
        }
    }
    let integrity: String = db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(integrity, "ok");
    // Nothing oplite keeps may hold the connection open.
    if let Err((_, e)) = db.close() {
        panic!("sqlite3_close failed: {e}");
    }
}

/// `powersync_replace_schema` with arbitrary text (usually a mutated
/// schema): no SQLITE_INTERNAL; an accepted schema can be replaced by
/// itself without changing `PRAGMA schema_version`, every view it made
/// takes an insert, an update and a delete (or refuses them with an error),
/// and the database stays sound.
pub fn schema(data: &[u8]) {
    let db = Connection::open_in_memory().unwrap();
    oplite::register(&db).unwrap();
    db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
    let text = String::from_utf8_lossy(data).into_owned();
    let replace = |db: &Connection| host(db, |db| db.query_row("SELECT powersync_replace_schema(?1)", [&text], |_| Ok(())));
    let internal = |error: &Option<rusqlite::Error>, what: &str| {
        if let Some(rusqlite::Error::SqliteFailure(e, message)) = error {
            assert_ne!(e.extended_code & 0xff, ffi::SQLITE_INTERNAL, "{what}: internal error (a panic?): {message:?}");
        }
    };
    let error = replace(&db);
    internal(&error, "replace_schema");
    if error.is_none() {
        let version: i64 = db.query_row("PRAGMA schema_version", [], |r| r.get(0)).unwrap();
        let again = replace(&db);
        assert!(again.is_none(), "the same schema failed the second time: {again:?}");
        let after: i64 = db.query_row("PRAGMA schema_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, after, "replacing a schema with itself changed the database schema");
        let views: Vec<String> = {
            let mut stmt = db.prepare("SELECT name FROM sqlite_master WHERE type = 'view'").unwrap();
            stmt.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect()
        };
        for view in views {
            let quoted = format!("\"{}\"", view.replace('"', "\"\""));
            for sql in [
                format!("INSERT INTO {quoted}(id) VALUES ('fuzz')"),
                format!("UPDATE {quoted} SET id = id WHERE id = 'fuzz'"),
                format!("DELETE FROM {quoted} WHERE id = 'fuzz'"),
            ] {
                let error = host(&db, |db| db.execute_batch(&sql));
                internal(&error, &sql);
            }
        }
    }
    let integrity: String = db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(integrity, "ok");
    // Nothing oplite keeps may hold the connection open.
    if let Err((_, e)) = db.close() {
        panic!("sqlite3_close failed: {e}");
    }
}
