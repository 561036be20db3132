//! Differential tests of raw tables against the reference core: raw tables
//! given in `powersync_control('start')`'s schema (explicit and inferred
//! put / delete statements, how synced values are bound, the errors for bad
//! definitions), `powersync_create_raw_table_crud_trigger` (the trigger SQL
//! and the ps_crud entries it queues) and `powersync_json_merge`.
mod common;

use common::diff::{Arg, Pair};
use serde_json::{json, Value};

const TABLE: &str = "CREATE TABLE things(id TEXT PRIMARY KEY NOT NULL, a, b INTEGER, c TEXT, rest TEXT);";

fn pair() -> Pair {
    let mut pair = Pair::new();
    pair.execute(TABLE);
    pair.extra_queries.push(("things".into(), "SELECT id, a, typeof(a), b, typeof(b), c, rest FROM things ORDER BY id".into()));
    pair
}

/// One PUT (with data) or REMOVE (without) of a `things` row. Data given
/// as a JSON string is sent verbatim (keys in the order written).
fn op(op_id: u32, id: &str, data: Option<Value>) -> Value {
    let mut entry = json!({"op_id": op_id.to_string(), "object_type": "things", "object_id": id, "checksum": op_id});
    match data {
        Some(d) => {
            entry["op"] = "PUT".into();
            entry["data"] = match d {
                Value::String(verbatim) => verbatim.into(),
                d => d.to_string().into(),
            };
        }
        None => entry["op"] = "REMOVE".into(),
    }
    entry
}

/// Sends a checkpoint with `ops` (in bucket `b`, after `done` earlier ops)
/// and completes it; `complete_fails` expects the apply to fail.
fn sync(pair: &mut Pair, first: u32, ops: Vec<Value>, complete_fails: bool) {
    let last = first + ops.len() as u32 - 1;
    let checksum: u32 = (1..=last).sum();
    let checkpoint = json!({"checkpoint": {"last_op_id": last.to_string(), "buckets": [{"bucket": "b", "checksum": checksum, "priority": 3}]}});
    pair.control("line_text", Arg::Text(&checkpoint.to_string()));
    pair.control("line_text", Arg::Text(&json!({"data": {"bucket": "b", "data": ops}}).to_string()));
    let complete = json!({"checkpoint_complete": {"last_op_id": last.to_string()}}).to_string();
    if complete_fails {
        let (ours, theirs) = pair.control_error_codes("line_text", Arg::Text(&complete));
        assert_eq!(ours, theirs, "error codes (oplite, reference) of the failed apply");
    } else {
        let answer = pair.control("line_text", Arg::Text(&complete));
        assert!(matches!(answer, common::diff::Answer::Json(_)), "the apply failed alike: {answer:?}");
    }
}

fn start(pair: &mut Pair, raw_tables: Value) {
    pair.control("start", Arg::Text(&json!({"schema": {"tables": [], "raw_tables": raw_tables}}).to_string()));
}

#[test]
fn explicit_statements_bind_values_as_the_reference() {
    let mut pair = pair();
    start(
        &mut pair,
        json!([{"name": "things",
            "put": {"sql": "INSERT OR REPLACE INTO things(id, a, b, c, rest) VALUES (?, ?, ?, ?, ?)",
                    "params": ["Id", {"Column": "a"}, {"Column": "b"}, {"Column": "c"}, "Rest"]},
            "delete": {"sql": "DELETE FROM things WHERE id = ?", "params": ["Id"]}}]),
    );
    sync(
        &mut pair,
        1,
        vec![
            op(1, "t1", Some(json!({"a": 1, "b": 2, "c": "x", "z": [1, {"k": true}], "y": null}))),
            op(2, "t2", Some(json!({"a": true, "b": 2.5, "c": 3, "d": "only rest"}))),
            op(3, "t3", Some(json!({"a": "text", "b": 9007199254740993_i64, "c": {"o": 1}}))),
            op(4, "t4", Some(json!(r#"{"z": 1, "a": 1.5, "y": {"q": 1, "p": [2, {"s": 1, "r": 0}]}}"#))),
        ],
        false,
    );
    sync(&mut pair, 5, vec![op(5, "t1", None), op(6, "t2", Some(json!({"a": false})))], false);
    // Data serde_json cannot read fails the apply in both (SQLITE_CORRUPT).
    sync(&mut pair, 7, vec![op(7, "t5", Some(json!(r#"{"a": 1e400}"#)))], true);
}

#[test]
fn inferred_statements_from_the_local_table() {
    let mut pair = pair();
    start(&mut pair, json!([{"name": "things", "table_name": "things", "synced_columns": ["a", "b", "c"]}]));
    pair.execute("INSERT INTO things(id, rest) VALUES ('t1', 'local only')");
    sync(&mut pair, 1, vec![op(1, "t1", Some(json!({"a": 1, "b": "2", "c": "x", "rest": "ignored"}))), op(2, "t2", Some(json!({"a": null})))], false);
    sync(&mut pair, 3, vec![op(3, "t2", None)], false);
    // Without a filter every column is synced.
    let mut pair = self::pair();
    start(&mut pair, json!([{"name": "things", "table_name": "things"}]));
    sync(&mut pair, 1, vec![op(1, "t1", Some(json!({"a": 1, "rest": "r"})))], false);
}

#[test]
fn bad_definitions_fail_the_apply() {
    for raw in [
        json!([{"name": "things"}]),
        json!([{"name": "things", "table_name": "missing"}]),
        // Fewer SQL parameters than sources (oplite checks the count as the
        // reference's source does; both answer SQLITE_CONSTRAINT_DATATYPE).
        json!([{"name": "things", "put": {"sql": "INSERT INTO things(id) VALUES (?)", "params": ["Id", "Rest"]},
                "delete": {"sql": "DELETE FROM things WHERE id = ?", "params": ["Id"]}}]),
    ] {
        let mut pair = pair();
        start(&mut pair, raw);
        sync(&mut pair, 1, vec![op(1, "t1", Some(json!({"a": 1})))], true);
    }
    // A delete statement may only bind the id.
    let mut pair = pair();
    start(
        &mut pair,
        json!([{"name": "things", "table_name": "things",
                "delete": {"sql": "DELETE FROM things WHERE id = ? AND a = ?", "params": ["Id", {"Column": "a"}]}}]),
    );
    sync(&mut pair, 1, vec![op(1, "t1", Some(json!({"a": 1})))], false);
    sync(&mut pair, 2, vec![op(2, "t1", None)], true);
    // The table needs an id column.
    let mut pair = Pair::new();
    pair.execute("CREATE TABLE things(a, b);");
    start(&mut pair, json!([{"name": "things", "table_name": "things"}]));
    sync(&mut pair, 1, vec![op(1, "t1", Some(json!({"a": 1})))], true);
    // A malformed raw table fails the start.
    let mut pair = Pair::new();
    let (ours, theirs) =
        pair.control_error_codes("start", Arg::Text(r#"{"schema": {"tables": [], "raw_tables": [{"put": 1}]}}"#));
    assert_eq!(ours, theirs, "error codes (oplite, reference) of the refused start");
}

/// Creates the three triggers for `definition` on both cores and compares
/// the SQL they store.
fn create_triggers(pair: &mut Pair, definition: &Value) {
    for write in ["INSERT", "UPDATE", "DELETE"] {
        let sql = format!(
            "SELECT powersync_create_raw_table_crud_trigger('{}', 'things_{}', '{write}')",
            definition.to_string().replace('\'', "''"),
            write.to_lowercase()
        );
        pair.execute(&sql);
    }
    let query = "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name";
    assert_eq!(common::diff::rows(&pair.ours, query), common::diff::rows(&pair.theirs, query));
}

#[test]
fn crud_triggers_match_the_reference() {
    for definition in [
        json!({"name": "things", "table_name": "things"}),
        json!({"name": "things", "table_name": "things", "synced_columns": ["a", "c"], "include_old": ["a"],
               "include_old_only_when_changed": true, "ignore_empty_update": true}),
        json!({"name": "things", "table_name": "things", "include_old": true, "include_metadata": true}),
        json!({"name": "things", "table_name": "things", "insert_only": true}),
    ] {
        let mut pair = pair();
        create_triggers(&mut pair, &definition);
        let insert_only = definition.get("insert_only").is_some();
        pair.execute("BEGIN; INSERT INTO things(id, a, b, c) VALUES ('t1', 1, 2, json('{\"j\":1}')); COMMIT;");
        if !insert_only {
            pair.execute("BEGIN; UPDATE things SET a = 5, rest = 'r' WHERE id = 't1'; COMMIT;");
            pair.execute("BEGIN; UPDATE things SET rest = 's' WHERE id = 't1'; COMMIT;");
            pair.execute("BEGIN; UPDATE things SET a = a WHERE id = 't1'; COMMIT;");
            pair.execute("BEGIN; DELETE FROM things WHERE id = 't1'; COMMIT;");
        }
        pair.assert_same_tables();
    }
}

#[test]
fn crud_trigger_errors_match() {
    for (definition, write, message) in [
        (r#"{"name": "things"}"#, "INSERT", "Raw table things has no local name"),
        (r#"{"name": "things", "table_name": "missing"}"#, "INSERT", "Could not find missing in local schema."),
        (r#"{"name": "things", "table_name": "things"}"#, "UPSERT", "unexpected write type UPSERT"),
        ("not json", "INSERT", ""),
    ] {
        let pair = pair();
        let sql = format!("SELECT powersync_create_raw_table_crud_trigger('{definition}', 'tr', '{write}')");
        let ours = pair.ours.query_row(&sql, [], |_| Ok(())).unwrap_err().to_string();
        let theirs = pair.theirs.query_row(&sql, [], |_| Ok(())).unwrap_err().to_string();
        // The messages are framed differently by each core; the reason is the same.
        assert!(ours.contains(message) && theirs.contains(message), "ours: {ours}\ntheirs: {theirs}");
    }
}

#[test]
fn json_merge_matches_the_reference() {
    let pair = Pair::new();
    for args in [
        "",
        "'{}'",
        r#"'{"a":1}', '{"b":[2]}'"#,
        r#"'{"a":1}', '{}', '{"c":3}'"#,
        r#"'{}', '{"a":1}'"#,
        r#"json_object('a', 1), json_object('b', json_object('c', 2))"#,
    ] {
        for sql in [
            format!("SELECT powersync_json_merge({args})"),
            format!("SELECT json_object('x', powersync_json_merge({args}))"),
        ] {
            let ours: String = pair.ours.query_row(&sql, [], |r| r.get(0)).unwrap();
            let theirs: String = pair.theirs.query_row(&sql, [], |r| r.get(0)).unwrap();
            assert_eq!(ours, theirs, "{sql}");
        }
    }
    // NULL arguments are skipped since core 0.5.4 (differential_raw_054.rs).
    for args in ["'[]'", "''", "1", r#"'{"a":1}', 'x'"#] {
        let sql = format!("SELECT powersync_json_merge({args})");
        assert!(pair.ours.query_row(&sql, [], |_| Ok(())).is_err(), "{sql}");
        assert!(pair.theirs.query_row(&sql, [], |_| Ok(())).is_err(), "{sql}");
    }
}


#[test]
fn clearing_a_raw_table_queues_no_uploads() {
    // disconnectAndClear with a raw table whose crud triggers the app made:
    // the clear statement runs as a sync operation, so the triggers skip it.
    let mut pair = pair();
    let definition = json!({"name": "things", "table_name": "things", "clear": "DELETE FROM things"});
    pair.replace_schema(&json!({"tables": [], "raw_tables": [definition]}));
    create_triggers(&mut pair, &definition);
    pair.execute("BEGIN; INSERT INTO things(id, a) VALUES ('local', 1); COMMIT;");
    pair.assert_same_tables();
    assert_eq!(common::schema::texts(&pair.ours, "SELECT count(*) FROM ps_crud"), ["1"]);
    pair.execute("DELETE FROM ps_crud; BEGIN; SELECT powersync_clear(0); COMMIT;");
    pair.assert_same_tables();
    assert_eq!(common::schema::texts(&pair.ours, "SELECT count(*) FROM ps_crud"), ["0"]);
    assert_eq!(common::schema::texts(&pair.ours, "SELECT count(*) FROM things"), ["0"]);
}
