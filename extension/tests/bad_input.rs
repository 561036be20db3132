//! Bad input never corrupts state: every malformed or out-of-place line
//! gets an error (or a LogLine) naming the problem, and the internal tables
//! are exactly as they were before the line. Since core 0.5.4 (PR #218) a
//! line that fails leaves the sync iteration running as it was, as an
//! argument refused before the event reaches the iteration (a payload of
//! the wrong type, an unknown operation) always did: the next lines go on.
mod common;

use common::diff::rows;
use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;

const TABLES: &[&str] = &["ps_buckets", "ps_oplog", "ps_updated_rows", "ps_untyped", "ps_sync_state", "ps_kv", "ps_crud"];

fn snapshot(db: &Connection) -> Vec<Vec<String>> {
    TABLES.iter().map(|t| rows(db, &format!("SELECT * FROM {t} ORDER BY 1, 2"))).collect()
}

fn control(db: &Connection, op: &str, payload: SqlValue) -> rusqlite::Result<String> {
    db.execute_batch("BEGIN").unwrap();
    let out = db.query_row("SELECT powersync_control(?1, ?2)", (op, payload), |r| r.get(0));
    db.execute_batch(if out.is_ok() { "COMMIT" } else { "ROLLBACK" }).unwrap();
    out
}

fn text(s: &str) -> SqlValue {
    SqlValue::Text(s.to_owned())
}

/// A session with one bucket partly downloaded and its checkpoint pending.
fn mid_download() -> Connection {
    let db = common::oplite_initialised();
    control(&db, "start", SqlValue::Null).unwrap();
    control(&db, "line_text", text(r#"{"checkpoint":{"last_op_id":"2","buckets":[{"bucket":"b","checksum":3}]}}"#)).unwrap();
    control(
        &db,
        "line_text",
        text(r#"{"data":{"bucket":"b","data":[{"op_id":"1","op":"PUT","object_type":"t","object_id":"a","checksum":1,"data":"{}"}]}}"#),
    )
    .unwrap();
    db
}

/// After bad input the session goes on: the rest of the download completes.
fn finish(db: &Connection) {
    control(
        db,
        "line_text",
        text(r#"{"data":{"bucket":"b","data":[{"op_id":"2","op":"PUT","object_type":"t","object_id":"b","checksum":2,"data":"{}"}]}}"#),
    )
    .unwrap();
    let out = control(db, "line_text", text(r#"{"checkpoint_complete":{"last_op_id":"2"}}"#)).unwrap();
    assert!(out.contains("DidCompleteSync"), "{out}");
    let n: i64 = db.query_row("SELECT count(*) FROM ps_untyped", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 2);
}

#[test]
fn malformed_lines_change_nothing_and_name_the_problem() {
    // (op, payload, what the error names); the last four are refused
    // before the event reaches the iteration.
    let cases: Vec<(&str, SqlValue, &str)> = vec![
        ("line_text", text(r#"{"checkpoint":"#), "EOF while parsing"),
        ("line_text", text("[]"), "sync line"),
        ("line_text", text("{}"), "empty object"),
        ("line_text", text("null"), "sync line"),
        ("line_text", text(""), "EOF"),
        ("line_text", text(r#"{"data":{"bucket":"b","data":[{"op_id":"3","op":"EXPLODE","checksum":1}]}}"#), "EXPLODE"),
        ("line_text", text(r#"{"data":{"bucket":"b"}}"#), "missing field `data`"),
        ("line_text", text(r#"{"data":{"bucket":"b","data":[{"op_id":"x","op":"PUT","checksum":1}]}}"#), "op id \"x\""),
        ("line_text", text(r#"{"data":{"bucket":"b","data":[{"op_id":"3","op":"PUT","checksum":4294967296}]}}"#), "32 bits"),
        ("line_text", text(r#"{"data":{"bucket":7,"data":[]}}"#), "invalid type"),
        ("line_text", text(r#"{"checkpoint":{"last_op_id":"99999999999999999999","buckets":[]}}"#), "64-bit"),
        ("line_text", text(r#"{"token_expires_in":"soon"}"#), "invalid type"),
        // A valid line with a bad one after it in the same text.
        ("line_text", text(r#"{"token_expires_in":60} {"x":1}"#), "trailing characters"),
        ("line_binary", SqlValue::Blob(vec![5, 0, 0, 0, 0]), "invalid binary line. cause: empty object"),
        ("line_binary", SqlValue::Blob(vec![0xff; 3]), "BSON"),
        ("line_binary", SqlValue::Blob(bson::serialize_to_vec(&serde_json::json!({"data": {"bucket": "b"}})).unwrap()), "data"),
        ("line_text", SqlValue::Integer(5), "text payload"),
        ("bogus_op", SqlValue::Null, "unknown operation \"bogus_op\""),
        ("connection", text("sideways"), "unknown connection event"),
        ("target_checkpoint_request_id", text("soon"), "must be an integer"),
    ];
    for (op, payload, needle) in cases {
        let db = mid_download();
        let before = snapshot(&db);
        let err = control(&db, op, payload.clone()).expect_err(&format!("{op} {payload:?} should fail"));
        assert!(err.to_string().contains(needle), "{op} {payload:?}: {err} (wanted {needle:?})");
        assert_eq!(snapshot(&db), before, "{op} {payload:?} changed the tables");
        // The same iteration goes on.
        finish(&db);
    }
}

#[test]
fn a_diff_without_a_checkpoint_is_a_protocol_error_that_changes_nothing() {
    let db = common::oplite_initialised();
    control(&db, "start", SqlValue::Null).unwrap();
    let before = snapshot(&db);
    let err = control(&db, "line_text", text(r#"{"checkpoint_diff":{"last_op_id":"1","updated_buckets":[],"removed_buckets":[]}}"#))
        .unwrap_err();
    assert_eq!(common::error_code(&err), rusqlite::ffi::SQLITE_ABORT);
    assert!(err.to_string().contains("checkpoint_diff without previous checkpoint"), "{err}");
    assert_eq!(snapshot(&db), before);
    let stopped = control(&db, "stop", SqlValue::Null).unwrap();
    assert!(stopped.ends_with(r#"{"CloseSyncStream":{"hide_disconnect":false}}]"#), "the iteration went on: {stopped}");
    control(&db, "start", SqlValue::Null).unwrap();
    let err = control(&db, "line_text", text(r#"{"checkpoint_complete":{"last_op_id":"1"}}"#)).unwrap_err();
    assert!(err.to_string().contains("checkpoint complete without previous checkpoint"), "{err}");
}

#[test]
fn lines_without_an_iteration_are_misuse() {
    let db = common::oplite_initialised();
    for op in ["line_text", "line_binary", "completed_upload", "refreshed_token"] {
        let err = control(&db, op, text("{}")).unwrap_err();
        assert_eq!(common::error_code(&err), rusqlite::ffi::SQLITE_MISUSE, "{op}: {err}");
        assert!(err.to_string().contains("No iteration is active"), "{op}: {err}");
    }
    // stop without an iteration is harmless.
    assert_eq!(control(&db, "stop", SqlValue::Null).unwrap(), "[]");
}

#[test]
fn unknown_line_kinds_are_logged_and_ignored() {
    let db = mid_download();
    let before = snapshot(&db);
    let out = control(&db, "line_text", text(r#"{"future":{"x":[1,2]}}"#)).unwrap();
    assert!(out.contains(r#""line":"Unknown sync line""#), "{out}");
    assert_eq!(snapshot(&db), before);
    finish(&db);
}

#[test]
fn control_needs_a_transaction() {
    let db = common::oplite_initialised();
    let err = db.query_row("SELECT powersync_control('start', NULL)", [], |r| r.get::<_, String>(0)).unwrap_err();
    assert_eq!(common::error_code(&err), rusqlite::ffi::SQLITE_MISUSE);
}
