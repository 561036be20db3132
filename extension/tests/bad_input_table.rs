//! The README's "Bad input" table, one test per row: every kind of bad
//! input, what oplite answers, and that nothing else changed (the internal
//! tables are as before the call and the sync iteration goes on, as the
//! reference 0.5.4's does) unless the row says the input is accepted.
mod common;

use common::diff::rows;
use common::error_code;
use rusqlite::ffi;
use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;
use serde_json::json;

const TABLES: &[&str] = &["ps_buckets", "ps_oplog", "ps_updated_rows", "ps_untyped", "ps_sync_state", "ps_kv", "ps_crud"];

fn snapshot(db: &Connection) -> Vec<Vec<String>> {
    TABLES.iter().map(|t| rows(db, &format!("SELECT * FROM {t} ORDER BY 1, 2"))).collect()
}

fn control(db: &Connection, op: &str, payload: SqlValue) -> rusqlite::Result<String> {
    db.execute_batch("BEGIN").unwrap();
    let out = db.query_row("SELECT powersync_control(?1, ?2)", (op, payload), |r| r.get::<_, Option<String>>(0));
    db.execute_batch(if out.is_ok() { "COMMIT" } else { "ROLLBACK" }).unwrap();
    out.map(Option::unwrap_or_default)
}

fn text(s: &str) -> SqlValue {
    SqlValue::Text(s.to_owned())
}

fn bson(value: serde_json::Value) -> SqlValue {
    SqlValue::Blob(bson::serialize_to_vec(&value).unwrap())
}

/// A session with bucket `b` partly downloaded (op 1 of 2).
fn mid_download() -> Connection {
    let db = common::oplite_initialised();
    control(&db, "start", SqlValue::Null).unwrap();
    control(&db, "line_text", text(r#"{"checkpoint":{"last_op_id":"2","buckets":[{"bucket":"b","checksum":3}]}}"#)).unwrap();
    control(&db, "line_text", text(&data_line("b", &[op(1, "t", "a", 1)]))).unwrap();
    db
}

fn op(op_id: i64, t: &str, id: &str, checksum: u32) -> serde_json::Value {
    json!({"op_id": op_id.to_string(), "op": "PUT", "object_type": t, "object_id": id, "checksum": checksum, "data": "{}"})
}

fn data_line(bucket: &str, ops: &[serde_json::Value]) -> String {
    json!({"data": {"bucket": bucket, "data": ops}}).to_string()
}

/// The rest of the download: the checkpoint applies with both rows.
fn finish(db: &Connection) {
    control(db, "line_text", text(&data_line("b", &[op(2, "t", "b", 2)]))).unwrap();
    let out = control(db, "line_text", text(r#"{"checkpoint_complete":{"last_op_id":"2"}}"#)).unwrap();
    assert!(out.contains("DidCompleteSync"), "{out}");
    assert_eq!(rows(db, "SELECT id FROM ps_untyped ORDER BY id"), ["Text(\"a\")", "Text(\"b\")"]);
}

/// Each input fails with `code` and a message containing its needle,
/// changes nothing, and the session then completes.
fn rejected(cases: Vec<(&str, SqlValue, &str)>, code: i32) {
    for (op, payload, needle) in cases {
        let db = mid_download();
        let before = snapshot(&db);
        let shown: String = format!("{payload:?}").chars().take(120).collect();
        let err = control(&db, op, payload).expect_err(&format!("{op} {shown} should fail"));
        assert_eq!(error_code(&err), code, "{op} {shown}: {err}");
        assert!(err.to_string().contains(needle), "{op} {shown}: {err} (wanted {needle:?})");
        assert_eq!(snapshot(&db), before, "{op} {shown} changed the tables");
        // No failure ends the iteration (core 0.5.4): `stop` still has
        // one to tear down, and answers its closing instructions.
        let stopped = control(&db, "stop", SqlValue::Null).unwrap();
        assert!(stopped.contains("CloseSyncStream"), "{op} {shown}: the iteration ended: {stopped}");
        control(&db, "start", SqlValue::Null).unwrap();
        control(&db, "line_text", text(r#"{"checkpoint":{"last_op_id":"2","buckets":[{"bucket":"b","checksum":3}]}}"#)).unwrap();
        finish(&db);
    }
}

#[test]
fn malformed_json_is_a_protocol_error() {
    rejected(
        vec![
            ("line_text", text(r#"{"data":{"bucket":"b","data":[{"op_id":"3""#), "EOF while parsing"),
            ("line_text", text("not json"), "invalid text line. cause: "),
            ("line_text", text("42"), "a sync line"),
            ("line_text", text(r#"{"token_expires_in":60}garbage"#), "trailing characters"),
            ("line_text", text(r#"{"checkpoint":{"last_op_id":"1","buckets":[],}}"#), "trailing comma"),
        ],
        ffi::SQLITE_ABORT,
    );
}

#[test]
fn malformed_bson_is_a_protocol_error() {
    let valid = bson::serialize_to_vec(&json!({"token_expires_in": 60})).unwrap();
    let mut longer = valid.clone();
    longer[0] += 10;
    let mut shorter = valid.clone();
    shorter[0] -= 2;
    let mut bad_type = valid.clone();
    bad_type[4] = 0x7f;
    let unterminated = {
        let mut v = bson::serialize_to_vec(&json!({"x": "abc"})).unwrap();
        let end = v.len() - 2;
        v[end] = b'!'; // the string's NUL
        v
    };
    let negative_string = {
        let mut v = bson::serialize_to_vec(&json!({"x": "abc"})).unwrap();
        v[7..11].copy_from_slice(&(-5i32).to_le_bytes());
        v
    };
    rejected(
        vec![
            ("line_binary", SqlValue::Blob(longer), "invalid binary line"),
            ("line_binary", SqlValue::Blob(shorter), "invalid binary line"),
            ("line_binary", SqlValue::Blob(bad_type), "invalid binary line"),
            ("line_binary", SqlValue::Blob(unterminated), "invalid binary line"),
            ("line_binary", SqlValue::Blob(negative_string), "invalid binary line"),
            ("line_binary", SqlValue::Blob(vec![]), "invalid binary line"),
        ],
        ffi::SQLITE_ABORT,
    );
    // Text, even JSON, is not a binary line (as in the reference).
    rejected(vec![("line_binary", text("{\"token_expires_in\":60}"), "blob payload")], ffi::SQLITE_CONSTRAINT_DATATYPE);
}

#[test]
fn huge_lines_are_stored_or_rejected_whole() {
    // 20,000 ops in one line (about 2 MB) and a row of 8 MB: stored and
    // applied as they are.
    let db = common::oplite_initialised();
    control(&db, "start", SqlValue::Null).unwrap();
    let ops: Vec<_> = (1..=20_000).map(|i| op(i, "t", &format!("r{i}"), 1)).collect();
    let mut big = op(20_001, "t", "big", 1);
    let blob = format!("{{\"x\":\"{}\"}}", "y".repeat(8 << 20));
    big["data"] = json!(blob);
    control(&db, "line_text", text(&json!({"checkpoint": {"last_op_id": "20001", "buckets": [{"bucket": "b", "checksum": 20_001}]}}).to_string()))
        .unwrap();
    control(&db, "line_text", text(&data_line("b", &ops))).unwrap();
    control(&db, "line_binary", bson(json!({"data": {"bucket": "b", "data": [big]}}))).unwrap();
    let out = control(&db, "line_text", text(r#"{"checkpoint_complete":{"last_op_id":"20001"}}"#)).unwrap();
    assert!(out.contains("DidCompleteSync"), "{out}");
    let n: i64 = db.query_row("SELECT count(*) FROM ps_untyped", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 20_001);
    let stored: String = db.query_row("SELECT data FROM ps_untyped WHERE id = 'big'", [], |r| r.get(0)).unwrap();
    assert_eq!(stored, blob);

    // 16 MB that are not a line: rejected without changing anything.
    let mut garbage = "{\"data\":{\"bucket\":\"b\",\"data\":[".to_owned();
    garbage.push_str(&"x".repeat(16 << 20));
    rejected(vec![("line_text", text(&garbage), "expected value")], ffi::SQLITE_ABORT);
}

#[test]
fn deep_nesting_is_rejected_without_recursing() {
    let deep_json = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_object = format!("{}1{}", "{\"a\":".repeat(100_000), "}".repeat(100_000));
    let deep_data = format!(
        r#"{{"data":{{"bucket":"b","data":[{{"op_id":"3","op":"PUT","object_type":"t","object_id":"c","checksum":1,"data":{}1{}}}]}}}}"#,
        "{\"a\":".repeat(500),
        "}".repeat(500)
    );
    let mut nested = json!(1);
    for _ in 0..100 {
        nested = json!({"n": nested});
    }
    rejected(
        vec![
            ("line_text", text(&deep_json), "a sync line"),
            // Unknown fields are skipped without descending into them.
            ("line_text", text(&format!("{{\"data\":{deep_object}}}")), "missing field `bucket`"),
            ("line_text", text(&deep_data), "recursion limit exceeded"),
            ("line_binary", bson(json!({"data": {"bucket": "b", "data": [{"op_id": "3", "op": "PUT", "checksum": 1, "data": nested}]}})), "nested deeper than 64"),
        ],
        ffi::SQLITE_ABORT,
    );
    // An unknown line kind is skipped without descending into it, however
    // deep.
    let db = mid_download();
    let out = control(&db, "line_text", text(&deep_object)).unwrap();
    assert!(out.contains("Unknown sync line"), "{out}");
    finish(&db);
}

#[test]
fn wrong_types_name_the_field() {
    rejected(
        vec![
            ("line_text", text(r#"{"data":{"bucket":7,"data":[]}}"#), "invalid type: integer `7`"),
            ("line_text", text(r#"{"data":{"bucket":"b","data":{}}}"#), "invalid type: map"),
            ("line_text", text(r#"{"data":{"bucket":"b","has_more":"yes","data":[]}}"#), "expected a boolean"),
            ("line_text", text(&data_line("b", &[json!({"op_id": "3", "op": "PUT", "checksum": "1"})])), "expected a checksum"),
            ("line_text", text(&data_line("b", &[json!({"op_id": "3", "op": "PUT", "checksum": 1, "object_id": 5})])), "invalid type"),
            ("line_text", text(&data_line("b", &[json!({"op_id": "3", "op": "PUT", "checksum": 1, "data": 5})])), "invalid type"),
            ("line_text", text(&data_line("b", &[json!({"op_id": 1.5, "op": "PUT", "checksum": 1})])), "op id"),
            ("line_text", text(r#"{"checkpoint":{"last_op_id":"1","buckets":[{"bucket":"b","checksum":1,"priority":"high"}]}}"#), "expected i32"),
            ("line_text", text(r#"{"checkpoint":{"last_op_id":"1","buckets":[{"bucket":"b","checksum":1,"priority":99999999999}]}}"#), "expected i32"),
            ("line_text", text(r#"{"checkpoint":{"last_op_id":"1","buckets":{"b":1}}}"#), "invalid type: map"),
            ("line_text", text(r#"{"token_expires_in":"soon"}"#), "invalid type"),
            ("line_binary", bson(json!({"data": {"bucket": true, "data": []}})), "bucket"),
        ],
        ffi::SQLITE_ABORT,
    );
}

#[test]
fn wrong_payload_types_are_invalid_arguments() {
    rejected(
        vec![
            ("line_text", SqlValue::Integer(5), "text payload"),
            ("line_text", SqlValue::Real(1.5), "text payload"),
            ("start", text("[1,2"), "start payload is not valid JSON"),
            ("target_checkpoint_request_id", text("soon"), "must be an integer"),
            ("connection", SqlValue::Blob(vec![1]), "text payload"),
        ],
        ffi::SQLITE_CONSTRAINT_DATATYPE,
    );
}

#[test]
fn unknown_ops_fail_and_unknown_lines_and_fields_are_ignored() {
    rejected(
        vec![
            ("line_text", text(&data_line("b", &[json!({"op_id": "3", "op": "EXPLODE", "checksum": 1})])), "EXPLODE"),
            ("line_text", text(&data_line("b", &[json!({"op_id": "3", "op": "put", "checksum": 1})])), "put"),
        ],
        ffi::SQLITE_ABORT,
    );
    rejected(
        vec![("sync_everything", SqlValue::Null, "unknown operation \"sync_everything\"")],
        ffi::SQLITE_CONSTRAINT_DATATYPE,
    );

    // Unknown line kinds: logged and ignored.
    let db = mid_download();
    let before = snapshot(&db);
    let out = control(&db, "line_text", text(r#"{"stream_announcement":{"x":1}}"#)).unwrap();
    assert!(out.contains("Unknown sync line"), "{out}");
    assert_eq!(snapshot(&db), before);
    // Unknown fields inside known lines: ignored, the line is stored.
    let mut with_extra = op(2, "t", "b", 2);
    with_extra["future_field"] = json!({"nested": [1, 2]});
    control(&db, "line_text", text(&json!({"data": {"bucket": "b", "data": [with_extra], "future": true}}).to_string())).unwrap();
    let out = control(&db, "line_text", text(r#"{"checkpoint_complete":{"last_op_id":"2","extra":1}}"#)).unwrap();
    assert!(out.contains("DidCompleteSync"), "{out}");
}

#[test]
fn op_ids_and_checksums_out_of_range() {
    rejected(
        vec![
            ("line_text", text(&data_line("b", &[json!({"op_id": "9223372036854775808", "op": "PUT", "checksum": 1})])), "not a 64-bit integer"),
            ("line_text", text(&data_line("b", &[json!({"op_id": "-9223372036854775809", "op": "PUT", "checksum": 1})])), "not a 64-bit integer"),
            ("line_text", text(&data_line("b", &[json!({"op_id": 18446744073709551615u64, "op": "PUT", "checksum": 1})])), "not a 64-bit integer"),
            ("line_text", text(&data_line("b", &[json!({"op_id": "1e3", "op": "PUT", "checksum": 1})])), "not a 64-bit integer"),
            ("line_text", text(&data_line("b", &[json!({"op_id": "3", "op": "PUT", "checksum": 4294967296u64})])), "32 bits"),
            ("line_text", text(&data_line("b", &[json!({"op_id": "3", "op": "PUT", "checksum": -2147483649i64})])), "32 bits"),
            ("line_text", text(&data_line("b", &[json!({"op_id": "3", "op": "PUT", "checksum": 1.5})])), "integral"),
            ("line_text", text(r#"{"checkpoint_complete":{"last_op_id":"99999999999999999999"}}"#), "64-bit"),
        ],
        ffi::SQLITE_ABORT,
    );
    // Negative op ids are 64-bit integers like any other: stored, and the
    // bucket resumes from them. A checksum of -1 is 0xFFFFFFFF.
    let db = common::oplite_initialised();
    control(&db, "start", SqlValue::Null).unwrap();
    control(&db, "line_text", text(r#"{"checkpoint":{"last_op_id":"-2","buckets":[{"bucket":"b","checksum":-1}]}}"#)).unwrap();
    control(&db, "line_text", text(&data_line("b", &[json!({"op_id": "-5", "op": "PUT", "object_type": "t", "object_id": "n", "checksum": -1, "data": "{}"})])))
        .unwrap();
    let out = control(&db, "line_text", text(r#"{"checkpoint_complete":{"last_op_id":"-2"}}"#)).unwrap();
    assert!(out.contains("DidCompleteSync"), "{out}");
    assert_eq!(rows(&db, "SELECT last_op, op_checksum FROM ps_buckets"), ["Integer(-2)|Integer(4294967295)"]);
    let out = control(&db, "start", SqlValue::Null).unwrap();
    assert!(out.contains(r#""after":"-2""#), "{out}");
}

#[test]
fn duplicate_buckets_and_keys() {
    // A bucket named twice with different checksums: one entry cannot match,
    // so the checkpoint fails validation like any mismatch: nothing is
    // applied, the bucket is dropped and downloaded again next time.
    let db = mid_download();
    control(&db, "line_text", text(r#"{"checkpoint":{"last_op_id":"2","buckets":[{"bucket":"b","checksum":3},{"bucket":"b","checksum":4}]}}"#))
        .unwrap();
    control(&db, "line_text", text(&data_line("b", &[op(2, "t", "b", 2)]))).unwrap();
    let out = control(&db, "line_text", text(r#"{"checkpoint_complete":{"last_op_id":"2"}}"#)).unwrap();
    assert!(out.contains("Checksums didn't match") && out.contains("CloseSyncStream"), "{out}");
    assert!(rows(&db, "SELECT * FROM ps_untyped").is_empty());
    assert!(rows(&db, "SELECT * FROM ps_buckets").is_empty());
    let out = control(&db, "start", SqlValue::Null).unwrap();
    assert!(out.contains(r#""buckets":[]"#), "{out}");

    // The same entry twice: harmless.
    let db = mid_download();
    control(&db, "line_text", text(r#"{"checkpoint":{"last_op_id":"2","buckets":[{"bucket":"b","checksum":3},{"bucket":"b","checksum":3}]}}"#))
        .unwrap();
    finish(&db);

    // The same data line twice: the second PUTs replace the first, the
    // checksum counts each op once more (as the protocol says for any
    // re-sent op), so the checkpoint fails and is downloaded again.
    let db = mid_download();
    control(&db, "line_text", text(&data_line("b", &[op(1, "t", "a", 1)]))).unwrap();
    control(&db, "line_text", text(&data_line("b", &[op(2, "t", "b", 2)]))).unwrap();
    let out = control(&db, "line_text", text(r#"{"checkpoint_complete":{"last_op_id":"2"}}"#)).unwrap();
    assert!(out.contains("Checksums didn't match"), "{out}");

    // A duplicate field is an error; a line object with two kinds is read
    // by its first key (later keys are ignored, as unknown keys are).
    rejected(
        vec![("line_text", text(r#"{"checkpoint":{"last_op_id":"1","last_op_id":"2","buckets":[]}}"#), "duplicate field `last_op_id`")],
        ffi::SQLITE_ABORT,
    );
    let db = mid_download();
    let before = snapshot(&db);
    control(&db, "line_text", text(r#"{"token_expires_in":60,"data":{"bucket":"b","data":[]}}"#)).unwrap();
    assert_eq!(snapshot(&db), before);
    finish(&db);
}

#[test]
fn invalid_utf8_is_rejected() {
    let invalid = vec![b'{', b'"', 0xff, 0xfe, b'"', b':', b'1', b'}'];
    for db in [mid_download()] {
        let before = snapshot(&db);
        db.execute_batch("BEGIN").unwrap();
        let err = db
            .query_row("SELECT powersync_control('line_text', CAST(?1 AS TEXT))", [&invalid], |r| r.get::<_, String>(0))
            .unwrap_err();
        db.execute_batch("ROLLBACK").unwrap();
        assert_eq!(error_code(&err), ffi::SQLITE_CONSTRAINT_DATATYPE, "{err}");
        assert!(err.to_string().contains("not valid UTF-8"), "{err}");
        assert_eq!(snapshot(&db), before);
        finish(&db);
    }
    // A BSON string that is not UTF-8.
    let mut line = bson::serialize_to_vec(&json!({"data": {"bucket": "bb", "data": []}})).unwrap();
    let at = line.windows(2).position(|w| w == b"bb").unwrap();
    line[at] = 0xc3;
    line[at + 1] = 0x28;
    rejected(vec![("line_binary", SqlValue::Blob(line), "UTF-8")], ffi::SQLITE_ABORT);
}

/// Names from the server are bound as parameters or quoted as identifiers,
/// never spliced into SQL: hostile bucket names, types, ids and subkeys are
/// stored and applied verbatim and every table survives.
#[test]
fn sql_injection_through_names_is_inert() {
    let hostile = [
        "'; DROP TABLE ps_oplog; --",
        "\"; DROP TABLE ps_crud; --",
        "x') OR 1=1; --",
        "]; DELETE FROM ps_buckets; [",
        "`tick`",
    ];
    let db = common::oplite_initialised();
    // A typed table whose name needs quoting: applied rows of that type go there.
    db.execute_batch(r#"CREATE TABLE "ps_data__we""ird; DROP TABLE ps_kv; --"(id TEXT PRIMARY KEY, data TEXT)"#).unwrap();
    control(&db, "start", SqlValue::Null).unwrap();
    let mut buckets = Vec::new();
    let mut op_id = 0;
    for (i, name) in hostile.iter().enumerate() {
        let ops: Vec<_> = hostile
            .iter()
            .map(|id| {
                op_id += 1;
                json!({"op_id": op_id.to_string(), "op": "PUT", "object_type": name, "object_id": id, "subkey": name, "checksum": 1, "data": "{}"})
            })
            .collect();
        buckets.push(json!({"bucket": name, "checksum": ops.len(), "priority": i % 4}));
        control(&db, "line_text", text(&json!({"checkpoint": {"last_op_id": op_id.to_string(), "buckets": buckets}}).to_string())).unwrap();
        control(&db, "line_text", text(&data_line(name, &ops))).unwrap();
    }
    let typed = json!({"op_id": (op_id + 1).to_string(), "op": "PUT", "object_type": "we\"ird; DROP TABLE ps_kv; --", "object_id": "o'k", "checksum": 1, "data": "{\"v\":1}"});
    buckets.push(json!({"bucket": "typed", "checksum": 1}));
    control(&db, "line_text", text(&json!({"checkpoint": {"last_op_id": (op_id + 1).to_string(), "buckets": buckets}}).to_string())).unwrap();
    control(&db, "line_text", text(&data_line("typed", &[typed]))).unwrap();
    let out = control(&db, "line_text", text(&json!({"checkpoint_complete": {"last_op_id": (op_id + 1).to_string()}}).to_string())).unwrap();
    assert!(out.contains("DidCompleteSync"), "{out}");

    let names: Vec<String> = db
        .prepare("SELECT name FROM ps_buckets ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let mut expected: Vec<String> = hostile.iter().map(|s| s.to_string()).collect();
    expected.push("typed".into());
    assert_eq!(names, expected);
    let n: i64 = db.query_row("SELECT count(*) FROM ps_untyped", [], |r| r.get(0)).unwrap();
    assert_eq!(n, (hostile.len() * hostile.len()) as i64);
    for t in hostile {
        for id in hostile {
            let found: i64 =
                db.query_row("SELECT count(*) FROM ps_untyped WHERE type = ?1 AND id = ?2", [t, id], |r| r.get(0)).unwrap();
            assert_eq!(found, 1, "{t} / {id}");
        }
    }
    let typed_row: String =
        db.query_row(r#"SELECT data FROM "ps_data__we""ird; DROP TABLE ps_kv; --" WHERE id = 'o''k'"#, [], |r| r.get(0)).unwrap();
    assert_eq!(typed_row, "{\"v\":1}");
    for table in ["ps_oplog", "ps_crud", "ps_kv", "ps_buckets", "ps_untyped"] {
        let exists: bool = db
            .query_row("SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE name = ?1)", [table], |r| r.get(0))
            .unwrap();
        assert!(exists, "{table} was dropped");
    }
    let integrity: String = db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(integrity, "ok");
}

#[test]
fn ids_with_quotes_nul_and_unicode_round_trip() {
    let ids = ["a'b\"c", "x\u{0}y", "\\", "%_", "", " ", "日本語", "😀", "id\nwith\nnewlines"];
    let db = common::oplite_initialised();
    control(&db, "start", SqlValue::Null).unwrap();
    let ops: Vec<_> = ids.iter().enumerate().map(|(i, id)| op(i as i64 + 1, "t", id, 1)).collect();
    control(&db, "line_text", text(&json!({"checkpoint": {"last_op_id": ids.len().to_string(), "buckets": [{"bucket": "b", "checksum": ids.len()}]}}).to_string()))
        .unwrap();
    control(&db, "line_binary", bson(json!({"data": {"bucket": "b", "data": ops}}))).unwrap();
    let out = control(&db, "line_text", text(&json!({"checkpoint_complete": {"last_op_id": ids.len().to_string()}}).to_string())).unwrap();
    assert!(out.contains("DidCompleteSync"), "{out}");
    for id in ids {
        let found: i64 = db.query_row("SELECT count(*) FROM ps_untyped WHERE type = 't' AND id = ?1", [id], |r| r.get(0)).unwrap();
        assert_eq!(found, 1, "{id:?}");
    }
    let n: i64 = db.query_row("SELECT count(*) FROM ps_untyped", [], |r| r.get(0)).unwrap();
    assert_eq!(n, ids.len() as i64);
}

/// PUTs without a type or id are stored (their checksums count) and
/// skipped when applying: no row, no failing apply.
#[test]
fn ops_without_type_or_id_are_counted_and_not_applied() {
    let db = common::oplite_initialised();
    control(&db, "start", SqlValue::Null).unwrap();
    control(&db, "line_text", text(r#"{"checkpoint":{"last_op_id":"3","buckets":[{"bucket":"b","checksum":6}]}}"#)).unwrap();
    control(
        &db,
        "line_text",
        text(&data_line(
            "b",
            &[
                json!({"op_id": "1", "op": "PUT", "checksum": 1, "data": "{}"}),
                json!({"op_id": "2", "op": "PUT", "object_type": "t", "checksum": 2, "data": "{}"}),
                json!({"op_id": "3", "op": "PUT", "object_id": "i", "checksum": 3, "data": "{}"}),
            ],
        )),
    )
    .unwrap();
    let out = control(&db, "line_text", text(r#"{"checkpoint_complete":{"last_op_id":"3"}}"#)).unwrap();
    assert!(out.contains("DidCompleteSync"), "{out}");
    assert!(rows(&db, "SELECT * FROM ps_untyped").is_empty());
}

/// Table and column names in a schema are quoted identifiers: hostile
/// names make tables, views and triggers under exactly those names, local
/// writes through them are queued, and every internal table survives.
#[test]
fn sql_injection_through_schema_names_is_inert() {
    let db = common::oplite_initialised();
    let table = "we\"ird; DROP TABLE ps_kv; --";
    let column = "co'l\"umn]; DELETE FROM ps_crud; --";
    let schema = json!({"tables": [{"name": table, "columns": [{"name": column, "type": "text"}],
        "indexes": [{"name": "i\"x'; DROP TABLE ps_oplog; --", "columns": [{"name": column, "ascending": true, "type": "text"}]}]}]});
    db.execute_batch("BEGIN").unwrap();
    db.query_row("SELECT powersync_replace_schema(?1)", [schema.to_string()], |_| Ok(())).unwrap();
    db.execute_batch("COMMIT").unwrap();
    let quote = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
    db.execute_batch(&format!(
        "BEGIN; INSERT INTO {}(id, {}) VALUES ('a''b', 'v'); COMMIT;",
        quote(table),
        quote(column)
    ))
    .unwrap();
    let value: String = db
        .query_row(&format!("SELECT {} FROM {} WHERE id = 'a''b'", quote(column), quote(table)), [], |r| r.get(0))
        .unwrap();
    assert_eq!(value, "v");
    let entry: String = db.query_row("SELECT data FROM ps_crud", [], |r| r.get(0)).unwrap();
    let entry: serde_json::Value = serde_json::from_str(&entry).unwrap();
    assert_eq!(entry["type"], table);
    assert_eq!(entry["data"][column], "v");
    for internal in ["ps_oplog", "ps_crud", "ps_kv", "ps_buckets", "ps_untyped"] {
        let exists: bool = db
            .query_row("SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE name = ?1)", [internal], |r| r.get(0))
            .unwrap();
        assert!(exists, "{internal} was dropped");
    }
    // Synced rows of that type land in its table too.
    control(&db, "start", SqlValue::Null).unwrap();
    control(&db, "line_text", text(r#"{"checkpoint":{"last_op_id":"1","buckets":[{"bucket":"b","checksum":1}]}}"#)).unwrap();
    let data = json!({ column: "synced" }).to_string();
    control(&db, "line_text", text(&data_line("b", &[json!({"op_id": "1", "op": "PUT", "object_type": table, "object_id": "s'1", "checksum": 1, "data": data})])))
        .unwrap();
    // The local write is still queued: upload it first.
    db.execute_batch("BEGIN; DELETE FROM ps_crud; SELECT powersync_control('target_checkpoint_request_id', '1'); COMMIT;")
        .unwrap();
    control(&db, "line_text", text(r#"{"checkpoint":{"last_op_id":"1","write_checkpoint":"1","buckets":[{"bucket":"b","checksum":1}]}}"#)).unwrap();
    let out = control(&db, "line_text", text(r#"{"checkpoint_complete":{"last_op_id":"1"}}"#)).unwrap();
    assert!(out.contains("DidCompleteSync"), "{out}");
    let value: String = db
        .query_row(&format!("SELECT {} FROM {} WHERE id = 's''1'", quote(column), quote(table)), [], |r| r.get(0))
        .unwrap();
    assert_eq!(value, "synced");
    let integrity: String = db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(integrity, "ok");
}
