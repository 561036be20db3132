//! Differential tests of what core 0.5.4 changed for raw tables and
//! `powersync_json_merge` (issue 50, points 8 and 9), against the 0.5.4
//! reference: the `Row` parameter (in puts, and where it does not belong),
//! numbers bound as INTEGER when they fit an i64, the inferred put of a
//! table with only `id`, `RAISE(ABORT)` in the raw-table triggers (the
//! rejected write is undone), `local_only` raw tables queueing nothing, and
//! NULL arguments skipped by `powersync_json_merge`. Every step compares the
//! internal tables and the app's tables; failures compare the SQLite code
//! and the reason in the message, and that nothing changed.
mod common;

use common::diff::{rows, Answer, Arg, Pair};
use rusqlite::Connection;
use serde_json::{json, Value};

/// One PUT (with data, sent verbatim) or REMOVE (without) of a row of
/// `object_type`.
fn op(op_id: u32, object_type: &str, id: &str, data: Option<&str>) -> Value {
    let mut entry = json!({"op_id": op_id.to_string(), "object_type": object_type, "object_id": id, "checksum": op_id});
    match data {
        Some(d) => {
            entry["op"] = "PUT".into();
            entry["data"] = d.into();
        }
        None => entry["op"] = "REMOVE".into(),
    }
    entry
}

/// A `powersync_control` call both cores must answer alike, and without
/// an error.
fn accepted(pair: &mut Pair, op: &str, arg: Arg<'_>) {
    let answer = pair.control(op, arg);
    assert!(matches!(answer, Answer::Json(_)), "{op} failed alike: {answer:?}\n{:?}", pair.trace.last());
}

/// Sends a checkpoint holding ops `first..` (bucket `b`) and the ops.
fn send(pair: &mut Pair, first: u32, ops: Vec<Value>) -> String {
    let last = first + ops.len() as u32 - 1;
    let checksum: u32 = (1..=last).sum();
    let checkpoint = json!({"checkpoint": {"last_op_id": last.to_string(), "buckets": [{"bucket": "b", "checksum": checksum, "priority": 3}]}});
    accepted(pair, "line_text", Arg::Text(&checkpoint.to_string()));
    accepted(pair, "line_text", Arg::Text(&json!({"data": {"bucket": "b", "data": ops}}).to_string()));
    json!({"checkpoint_complete": {"last_op_id": last.to_string()}}).to_string()
}

/// Sends and completes a checkpoint that applies.
fn sync(pair: &mut Pair, first: u32, ops: Vec<Value>) {
    let complete = send(pair, first, ops);
    accepted(pair, "line_text", Arg::Text(&complete));
}

/// Every row of every app table and the internal tables of `db`, to show a
/// failed call changed nothing.
fn state(db: &Connection) -> Vec<String> {
    let tables: Vec<String> = rows(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .into_iter()
        .map(|r| r.trim_start_matches("Text(\"").trim_end_matches("\")").to_owned())
        .collect();
    tables.iter().flat_map(|t| rows(db, &format!("SELECT '{t}', * FROM \"{t}\""))).collect()
}

/// Runs `sql` in its own transaction on `db` (rolled back when it fails):
/// the extended code and message of the failure, if any.
fn fallible(db: &Connection, sql: &str) -> Option<(i32, String)> {
    db.execute_batch("BEGIN").unwrap();
    match db.execute_batch(sql) {
        Ok(()) => {
            db.execute_batch("COMMIT").unwrap();
            None
        }
        Err(e) => {
            db.execute_batch("ROLLBACK").unwrap();
            Some((common::error_code(&e), e.to_string()))
        }
    }
}

/// Expects `sql` to fail on both cores with the same extended code and a
/// message holding `reason`, and to leave both databases as they were.
fn fails_alike(pair: &Pair, sql: &str, reason: &str) {
    let before = (state(&pair.ours), state(&pair.theirs));
    let ours = fallible(&pair.ours, sql).unwrap_or_else(|| panic!("oplite accepted {sql}"));
    let theirs = fallible(&pair.theirs, sql).unwrap_or_else(|| panic!("the reference accepted {sql}"));
    assert_eq!(ours.0, theirs.0, "error codes (oplite, reference) of {sql}: {ours:?} / {theirs:?}");
    assert!(ours.1.contains(reason) && theirs.1.contains(reason), "{sql}\n ours:   {}\n theirs: {}", ours.1, theirs.1);
    assert_eq!(before, (state(&pair.ours), state(&pair.theirs)), "{sql} changed the data");
    pair.assert_same_tables();
}

/// Completes a checkpoint whose apply fails on both alike (code and
/// reason), leaving both databases as they were.
fn apply_fails_alike(pair: &mut Pair, complete: &str, reason: &str) {
    let sql = format!("SELECT powersync_control('line_text', '{}')", complete.replace('\'', "''"));
    fails_alike(pair, &sql, reason);
}

fn start(pair: &mut Pair, raw_tables: Value) {
    accepted(pair, "start", Arg::Text(&json!({"schema": {"tables": [], "raw_tables": raw_tables}}).to_string()));
}

/// A pair with `sql` run on both and `query` compared after every step.
fn pair_with(sql: &str, table: &str, query: &str) -> Pair {
    let mut pair = Pair::new();
    pair.execute(sql);
    pair.extra_queries.push((table.into(), query.into()));
    pair
}

const ROWS: &str = "CREATE TABLE rows(id TEXT PRIMARY KEY NOT NULL, whole TEXT, a, rest TEXT);";
const ROWS_QUERY: &str = "SELECT id, whole, typeof(whole), a, typeof(a), rest FROM rows ORDER BY id";

#[test]
fn row_parameter_binds_the_data_as_received() {
    let mut pair = pair_with(ROWS, "rows", ROWS_QUERY);
    start(
        &mut pair,
        json!([{"name": "rows",
            "put": {"sql": "INSERT OR REPLACE INTO rows(id, whole, a, rest) VALUES (?, ?, ?, ?)",
                    "params": ["Id", "Row", {"Column": "a"}, "Rest"]},
            "delete": {"sql": "DELETE FROM rows WHERE id = ?", "params": ["Id"]}}]),
    );
    // Row is the text as sent (spacing, key order, escapes); it does not
    // take fields from Rest.
    sync(
        &mut pair,
        1,
        vec![
            op(1, "rows", "r1", Some(r#"{ "z": 1,  "a": 2, "b": {"x": [1, 2.50]}, "s": "\u00e9" }"#)),
            op(2, "rows", "r2", Some(r#"{"a": "only a"}"#)),
            op(3, "rows", "r3", Some("{}")),
        ],
    );
    sync(&mut pair, 4, vec![op(4, "rows", "r2", None), op(5, "rows", "r3", Some(r#"{"a": true, "id": "x"}"#))]);
}

#[test]
fn row_parameter_on_bson_lines() {
    // The data line in BSON: Row is the data string as the line holds it.
    let mut pair = pair_with(ROWS, "rows", ROWS_QUERY);
    start(
        &mut pair,
        json!([{"name": "rows",
            "put": {"sql": "INSERT OR REPLACE INTO rows(id, whole, a, rest) VALUES (?, ?, ?, ?)",
                    "params": ["Id", "Row", {"Column": "a"}, "Rest"]},
            "delete": {"sql": "DELETE FROM rows WHERE id = ?", "params": ["Id"]}}]),
    );
    let checkpoint = json!({"checkpoint": {"last_op_id": "2", "buckets": [{"bucket": "b", "checksum": 3, "priority": 3}]}});
    let data = json!({"data": {"bucket": "b", "data": [
        op(1, "rows", "r1", Some(r#"{"b": [1, 2.0], "a": 3 }"#)),
        op(2, "rows", "r2", Some(r#"{"a": 9223372036854775807, "z": "\u0041"}"#)),
    ]}});
    let complete = json!({"checkpoint_complete": {"last_op_id": "2"}});
    for line in [checkpoint, data, complete] {
        accepted(&mut pair, "line_binary", Arg::Blob(&bson::serialize_to_vec(&line).unwrap()));
    }
    assert_eq!(common::schema::texts(&pair.ours, "SELECT count(*) FROM rows"), ["2"]);
}

#[test]
fn a_row_only_statement_takes_any_data() {
    // With only Id and Row the data is never parsed: text that is not an
    // object, or that serde_json cannot read, is bound as it is.
    let mut pair = pair_with(ROWS, "rows", ROWS_QUERY);
    start(
        &mut pair,
        json!([{"name": "rows",
            "put": {"sql": "INSERT OR REPLACE INTO rows(whole, id) VALUES (?, ?)", "params": ["Row", "Id"]},
            "delete": {"sql": "DELETE FROM rows WHERE id = ?", "params": ["Id"]}}]),
    );
    sync(
        &mut pair,
        1,
        vec![
            op(1, "rows", "r1", Some("[1, 2]")),
            op(2, "rows", "r2", Some(r#"{"a": 1e400}"#)),
            op(3, "rows", "r3", Some("not json")),
            op(4, "rows", "r4", Some("")),
        ],
    );
    // The same data with a Column parameter fails the apply: not an
    // object, and a number beyond a double.
    for data in ["[1, 2]", r#"{"a": 1e400}"#] {
        let mut pair = pair_with(ROWS, "rows", ROWS_QUERY);
        start(
            &mut pair,
            json!([{"name": "rows",
                "put": {"sql": "INSERT OR REPLACE INTO rows(id, whole, a) VALUES (?, ?, ?)", "params": ["Id", "Row", {"Column": "a"}]},
                "delete": {"sql": "DELETE FROM rows WHERE id = ?", "params": ["Id"]}}]),
        );
        let complete = send(&mut pair, 1, vec![op(1, "rows", "r1", Some(data))]);
        let reason = if data.starts_with('[') { "expected oplog data to be an object" } else { "" };
        apply_fails_alike(&mut pair, &complete, reason);
    }
}

#[test]
fn row_parameter_in_a_delete_statement_fails_the_delete() {
    for params in [json!(["Row"]), json!(["Id", "Row"])] {
        let mut pair = pair_with(ROWS, "rows", ROWS_QUERY);
        start(
            &mut pair,
            json!([{"name": "rows",
                "put": {"sql": "INSERT OR REPLACE INTO rows(id, whole) VALUES (?, ?)", "params": ["Id", "Row"]},
                "delete": {"sql": format!("DELETE FROM rows WHERE {}", if params.as_array().unwrap().len() == 1 { "whole = ?" } else { "id = ? AND whole = ?" }),
                           "params": params}}]),
        );
        // Puts are fine: the delete statement is only checked when a row
        // is removed.
        sync(&mut pair, 1, vec![op(1, "rows", "r1", Some(r#"{"a": 1}"#))]);
        let complete = send(&mut pair, 2, vec![op(2, "rows", "r1", None)]);
        apply_fails_alike(&mut pair, &complete, "Raw delete statement parameters must only reference id");
    }
}

#[test]
fn row_parameter_spellings_parse_alike() {
    // The accepted forms of the parameter, and the misspelt ones the start
    // refuses; both cores agree on each (and on the error's code).
    for row in [json!("Row"), json!({"Row": null}), json!("row"), json!({"Row": 1}), json!({"Row": "whole"}), json!(["Row"])] {
        let mut pair = pair_with(ROWS, "rows", ROWS_QUERY);
        let schema = json!({"schema": {"tables": [], "raw_tables": [{"name": "rows",
            "put": {"sql": "INSERT OR REPLACE INTO rows(id, whole) VALUES (?, ?)", "params": ["Id", row]},
            "delete": {"sql": "DELETE FROM rows WHERE id = ?", "params": ["Id"]}}]}});
        let sql = format!("SELECT powersync_control('start', '{}')", schema.to_string().replace('\'', "''"));
        let (ours, theirs) = (fallible(&pair.ours, &sql), fallible(&pair.theirs, &sql));
        assert_eq!(ours.as_ref().map(|e| e.0), theirs.as_ref().map(|e| e.0), "{row}: {ours:?} / {theirs:?}");
        pair.assert_same_tables();
        if ours.is_none() {
            sync(&mut pair, 1, vec![op(1, "rows", "r1", Some(r#"{"a": 1}"#))]);
        }
    }
}

#[test]
fn powersync_create_raw_table_crud_trigger_accepts_row_parameters() {
    // A definition with Row in its statements is a valid raw table for the
    // trigger function too.
    let mut pair = pair_with(ROWS, "rows", ROWS_QUERY);
    let definition = json!({"name": "rows", "table_name": "rows",
        "put": {"sql": "INSERT OR REPLACE INTO rows(id, whole) VALUES (?, ?)", "params": ["Id", "Row"]}});
    create_triggers(&mut pair, &definition, "rows");
    pair.execute("BEGIN; INSERT INTO rows(id, whole, a) VALUES ('r1', 'w', 1); COMMIT;");
    pair.assert_same_tables();
}

const NUMBERS: &str = "CREATE TABLE numbers(id TEXT PRIMARY KEY NOT NULL, v, r REAL, t TEXT, i INTEGER);";
const NUMBERS_QUERY: &str = "SELECT id, v, typeof(v), r, typeof(r), t, typeof(t), i, typeof(i) FROM numbers ORDER BY id";

/// The values whose binding is compared: integers at and beyond the i64
/// range, floats (integral ones too), negative zero, booleans, strings,
/// null, arrays and objects.
const VALUES: &[&str] = &[
    "0",
    "-1",
    "42",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "123456789012345678901234567890",
    "1.0",
    "1e2",
    "1E+2",
    "-0",
    "-0.0",
    "0.1",
    "2.5",
    "1.5e300",
    "5e-324",
    "9007199254740993",
    "true",
    "false",
    "\"12\"",
    "null",
    "[1]",
    "{\"o\": 1}",
];

fn number_ops() -> Vec<Value> {
    VALUES
        .iter()
        .enumerate()
        .map(|(i, v)| op(i as u32 + 1, "numbers", &format!("n{i:02}"), Some(&format!(r#"{{"v": {v}, "r": {v}, "t": {v}, "i": {v}}}"#))))
        .collect()
}

#[test]
fn numbers_that_fit_an_i64_bind_as_integer() {
    // Explicit statement.
    let mut pair = pair_with(NUMBERS, "numbers", NUMBERS_QUERY);
    start(
        &mut pair,
        json!([{"name": "numbers",
            "put": {"sql": "INSERT OR REPLACE INTO numbers(id, v, r, t, i) VALUES (?, ?, ?, ?, ?)",
                    "params": ["Id", {"Column": "v"}, {"Column": "r"}, {"Column": "t"}, {"Column": "i"}]},
            "delete": {"sql": "DELETE FROM numbers WHERE id = ?", "params": ["Id"]}}]),
    );
    sync(&mut pair, 1, number_ops());
    // Inferred statement.
    let mut pair = pair_with(NUMBERS, "numbers", NUMBERS_QUERY);
    start(&mut pair, json!([{"name": "numbers", "table_name": "numbers"}]));
    sync(&mut pair, 1, number_ops());
    // The same values inside Rest (rendered by serde_json in both) and Row.
    let mut pair = pair_with(ROWS, "rows", ROWS_QUERY);
    start(
        &mut pair,
        json!([{"name": "rows",
            "put": {"sql": "INSERT OR REPLACE INTO rows(id, whole, rest) VALUES (?, ?, ?)", "params": ["Id", "Row", "Rest"]},
            "delete": {"sql": "DELETE FROM rows WHERE id = ?", "params": ["Id"]}}]),
    );
    let fields: Vec<String> = VALUES.iter().enumerate().map(|(i, v)| format!(r#""f{i:02}": {v}"#)).collect();
    sync(&mut pair, 1, vec![op(1, "rows", "all", Some(&format!("{{{}, \"id\": \"ignored\"}}", fields.join(", "))))]);

    // An integer bound where SQL compares it: `WHERE v = ?` finds an
    // INTEGER 1 (a REAL 1.0 would find it too, but typeof tells).
    let mut pair = pair_with(NUMBERS, "numbers", NUMBERS_QUERY);
    pair.execute("INSERT INTO numbers(id, v) VALUES ('n', 'seed')");
    start(
        &mut pair,
        json!([{"name": "numbers",
            "put": {"sql": "UPDATE numbers SET t = typeof(?2), i = ?2 WHERE id = ?1", "params": ["Id", {"Column": "v"}]},
            "delete": {"sql": "DELETE FROM numbers WHERE id = ?", "params": ["Id"]}}]),
    );
    sync(&mut pair, 1, vec![op(1, "numbers", "n", Some(r#"{"v": 7}"#))]);
    sync(&mut pair, 2, vec![op(2, "numbers", "n", Some(r#"{"v": 7.0}"#))]);
}

#[test]
fn a_table_with_only_id_gets_do_nothing() {
    let mut pair = pair_with("CREATE TABLE only_ids(id TEXT PRIMARY KEY NOT NULL);", "only_ids", "SELECT id FROM only_ids ORDER BY id");
    start(&mut pair, json!([{"name": "only_ids", "table_name": "only_ids"}]));
    sync(&mut pair, 1, vec![op(1, "only_ids", "a", Some(r#"{"x": 1}"#)), op(2, "only_ids", "b", Some("{}"))]);
    // A second put of a stored id conflicts and does nothing.
    sync(&mut pair, 3, vec![op(3, "only_ids", "a", Some(r#"{"x": 2}"#))]);
    sync(&mut pair, 4, vec![op(4, "only_ids", "a", None)]);

    // synced_columns that match no column: the same DO NOTHING, and the
    // local columns stay as the app wrote them.
    let mut pair = pair_with(
        "CREATE TABLE notes(id TEXT PRIMARY KEY NOT NULL, local TEXT);",
        "notes",
        "SELECT id, local FROM notes ORDER BY id",
    );
    pair.execute("INSERT INTO notes VALUES ('a', 'mine')");
    start(&mut pair, json!([{"name": "notes", "table_name": "notes", "synced_columns": ["missing"]}]));
    sync(&mut pair, 1, vec![op(1, "notes", "a", Some(r#"{"local": "theirs"}"#)), op(2, "notes", "b", Some(r#"{"local": "x"}"#))]);

    // The upload triggers of an id-only table queue the id alone.
    let mut pair = pair_with("CREATE TABLE only_ids(id TEXT PRIMARY KEY NOT NULL);", "only_ids", "SELECT id FROM only_ids ORDER BY id");
    create_triggers(&mut pair, &json!({"name": "only_ids", "table_name": "only_ids"}), "only_ids");
    pair.execute("BEGIN; INSERT INTO only_ids VALUES ('a'); UPDATE only_ids SET id = id; DELETE FROM only_ids; COMMIT;");
    pair.assert_same_tables();
}

#[test]
fn inferred_statements_follow_the_local_table() {
    // A column the app adds between two checkpoints is synced from the
    // next one on (the inferred statement is read again).
    let mut pair = pair_with(THINGS, "things", "SELECT * FROM things ORDER BY id");
    start(&mut pair, json!([{"name": "things", "table_name": "things"}]));
    sync(&mut pair, 1, vec![op(1, "things", "t1", Some(r#"{"a": 1, "b": 2, "c": 3}"#))]);
    pair.execute("ALTER TABLE things ADD COLUMN c");
    sync(&mut pair, 2, vec![op(2, "things", "t2", Some(r#"{"a": 1, "b": 2, "c": 3}"#))]);
    pair.execute("ALTER TABLE things DROP COLUMN b");
    sync(&mut pair, 3, vec![op(3, "things", "t1", Some(r#"{"a": 5, "b": 6, "c": 7}"#))]);

    // A row the inferred put cannot store fails the apply alike (code,
    // and nothing stored).
    let mut pair = pair_with(
        "CREATE TABLE strict_things(id TEXT PRIMARY KEY NOT NULL, a INTEGER NOT NULL, b TEXT) STRICT;",
        "strict_things",
        "SELECT * FROM strict_things ORDER BY id",
    );
    start(&mut pair, json!([{"name": "strict_things", "table_name": "strict_things"}]));
    sync(&mut pair, 1, vec![op(1, "strict_things", "s1", Some(r#"{"a": 1, "b": "x"}"#))]);
    for (i, data) in [r#"{"b": "no a"}"#, r#"{"a": "text", "b": "x"}"#, r#"{"a": 1.5}"#].into_iter().enumerate() {
        let mut pair = pair_with(
            "CREATE TABLE strict_things(id TEXT PRIMARY KEY NOT NULL, a INTEGER NOT NULL, b TEXT) STRICT;",
            "strict_things",
            "SELECT * FROM strict_things ORDER BY id",
        );
        start(&mut pair, json!([{"name": "strict_things", "table_name": "strict_things"}]));
        let complete = send(&mut pair, 1, vec![op(1, "strict_things", &format!("s{i}"), Some(data))]);
        apply_fails_alike(&mut pair, &complete, "");
    }
}

/// Creates the three triggers for `definition` on both cores and compares
/// the triggers they store (the names and SQL; none when a core creates
/// none).
fn create_triggers(pair: &mut Pair, definition: &Value, table: &str) {
    for write in ["INSERT", "UPDATE", "DELETE"] {
        let sql = format!(
            "SELECT powersync_create_raw_table_crud_trigger('{}', '{table}_{}', '{write}')",
            definition.to_string().replace('\'', "''"),
            write.to_lowercase()
        );
        pair.execute(&sql);
    }
    let query = "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name";
    assert_eq!(rows(&pair.ours, query), rows(&pair.theirs, query));
}

const THINGS: &str = "CREATE TABLE things(id TEXT PRIMARY KEY NOT NULL, a, b);";
const THINGS_QUERY: &str = "SELECT id, a, b FROM things ORDER BY id";

#[test]
fn rejected_writes_are_rolled_back() {
    // insert_only: updates and deletes are refused, and undone (ABORT),
    // in autocommit and inside a transaction, for one row and for several.
    let mut pair = pair_with(THINGS, "things", THINGS_QUERY);
    create_triggers(&mut pair, &json!({"name": "things", "table_name": "things", "insert_only": true}), "things");
    pair.execute("INSERT INTO things VALUES ('t1', 1, 1), ('t2', 2, 2);");
    pair.assert_same_tables();
    for sql in [
        "UPDATE things SET a = 10 WHERE id = 't1'",
        "UPDATE things SET a = a + 10",
        "DELETE FROM things WHERE id = 't2'",
        "DELETE FROM things",
        "UPDATE things SET id = 'x' WHERE id = 't1'",
        "INSERT INTO things VALUES ('t1', 9, 9) ON CONFLICT (id) DO UPDATE SET a = 9",
    ] {
        fails_alike(&pair, sql, "Unexpected update on insert-only table");
        // The same statement as its own, in autocommit.
        let ours = pair.ours.execute_batch(sql).unwrap_err();
        let theirs = pair.theirs.execute_batch(sql).unwrap_err();
        assert_eq!(common::error_code(&ours), common::error_code(&theirs), "{sql}");
        assert!(ours.to_string().contains("Unexpected update on insert-only table"), "{ours}");
        pair.assert_same_tables();
    }
    // REPLACE removes the old row without a DELETE trigger: accepted, and
    // queued as a PUT, alike.
    pair.execute("INSERT OR REPLACE INTO things VALUES ('t1', 5, 5)");
    pair.assert_same_tables();
    // Inside a transaction the statement is undone, the transaction and
    // its earlier writes stay.
    for db in [&pair.ours, &pair.theirs] {
        db.execute_batch("BEGIN; INSERT INTO things VALUES ('t3', 3, 3);").unwrap();
        db.execute_batch("UPDATE things SET b = 0").unwrap_err();
        db.execute_batch("COMMIT").unwrap();
    }
    pair.assert_same_tables();

    // A changed id is refused and undone (the PATCH is not queued).
    let mut pair = pair_with(THINGS, "things", THINGS_QUERY);
    create_triggers(&mut pair, &json!({"name": "things", "table_name": "things"}), "things");
    pair.execute("INSERT INTO things VALUES ('t1', 1, 1), ('t2', 2, 2);");
    for sql in ["UPDATE things SET id = 'x' WHERE id = 't1'", "UPDATE things SET id = id || '_', a = 0"] {
        let ours = pair.ours.execute_batch(sql).unwrap_err();
        let theirs = pair.theirs.execute_batch(sql).unwrap_err();
        assert_eq!(common::error_code(&ours), common::error_code(&theirs), "{sql}");
        assert!(ours.to_string().contains("Cannot update id") && theirs.to_string().contains("Cannot update id"));
        pair.assert_same_tables();
        assert_eq!(rows(&pair.ours, "SELECT id FROM things ORDER BY id"), ["Text(\"t1\")", "Text(\"t2\")"]);
    }
}

#[test]
fn local_only_raw_tables_queue_nothing() {
    for definition in [
        json!({"name": "things", "table_name": "things", "local_only": true}),
        // insert_only is ignored on a local-only table.
        json!({"name": "things", "table_name": "things", "local_only": true, "insert_only": true}),
        json!({"name": "things", "table_name": "things", "local_only": true, "include_old": true,
               "include_metadata": true, "synced_columns": ["a"]}),
    ] {
        let mut pair = pair_with(THINGS, "things", THINGS_QUERY);
        // Only the UPDATE trigger exists (compared by create_triggers).
        create_triggers(&mut pair, &definition, "things");
        pair.execute(
            "BEGIN; INSERT INTO things VALUES ('t1', 1, 1), ('t2', 2, 2);
             UPDATE things SET a = 5, b = 5 WHERE id = 't1'; DELETE FROM things WHERE id = 't2'; COMMIT;",
        );
        pair.assert_same_tables();
        assert_eq!(common::schema::texts(&pair.ours, "SELECT count(*) FROM ps_crud"), ["0"], "{definition}");
        // An update of the id is still refused, and undone (it changes a
        // synced column too, for the trigger limited to those).
        let sql = "UPDATE things SET id = 'x', a = 99";
        let ours = pair.ours.execute_batch(sql).unwrap_err();
        let theirs = pair.theirs.execute_batch(sql).unwrap_err();
        assert_eq!(common::error_code(&ours), common::error_code(&theirs));
        assert!(ours.to_string().contains("Cannot update id"), "{ours}");
        pair.assert_same_tables();
    }
    // local_only changes nothing for the sync apply and for clearing:
    // synced rows are stored, and powersync_clear runs the clear statement.
    let mut pair = pair_with(THINGS, "things", THINGS_QUERY);
    let definition = json!({"name": "things", "table_name": "things", "local_only": true, "clear": "DELETE FROM things"});
    pair.replace_schema(&json!({"tables": [], "raw_tables": [definition]}));
    create_triggers(&mut pair, &definition, "things");
    start(&mut pair, json!([definition]));
    sync(&mut pair, 1, vec![op(1, "things", "t1", Some(r#"{"a": 1, "b": 2}"#))]);
    pair.execute("BEGIN; INSERT INTO things VALUES ('local', 3, 3); COMMIT;");
    pair.control("stop", Arg::Null);
    pair.execute("BEGIN; SELECT powersync_clear(0); COMMIT;");
    pair.assert_same_tables();
    assert_eq!(common::schema::texts(&pair.ours, "SELECT count(*) FROM things"), ["0"]);

    // local_only: false queues as before.
    let mut pair = pair_with(THINGS, "things", THINGS_QUERY);
    create_triggers(&mut pair, &json!({"name": "things", "table_name": "things", "local_only": false}), "things");
    pair.execute("BEGIN; INSERT INTO things VALUES ('t1', 1, 1); DELETE FROM things; COMMIT;");
    pair.assert_same_tables();
    assert_eq!(common::schema::texts(&pair.ours, "SELECT count(*) FROM ps_crud"), ["2"]);
}

#[test]
fn json_merge_skips_null_arguments() {
    let pair = Pair::new();
    for args in [
        "NULL",
        "NULL, NULL",
        r#"'{"a":1}', NULL, '{"b":2}'"#,
        r#"NULL, '{"a":1}'"#,
        r#"'{"a":1}', NULL"#,
        r#"NULL, '{}', '{"a":1}'"#,
        r#"'{"a":1}', NULL, '{}'"#,
        r#"CAST(NULL AS TEXT), json_object('a', NULL)"#,
    ] {
        for sql in [
            format!("SELECT powersync_json_merge({args})"),
            format!("SELECT json_object('x', powersync_json_merge({args}))"),
            format!("SELECT typeof(powersync_json_merge({args}))"),
        ] {
            let ours: String = pair.ours.query_row(&sql, [], |r| r.get(0)).unwrap_or_else(|e| panic!("{sql}: {e}"));
            let theirs: String = pair.theirs.query_row(&sql, [], |r| r.get(0)).unwrap();
            assert_eq!(ours, theirs, "{sql}");
        }
    }
    // Non-null arguments that are not objects still fail, NULLs or not.
    for args in ["''", "NULL, ''", "NULL, '[]'", r#"'{"a":1}', NULL, 'x'"#, "NULL, 1"] {
        fails_alike(&pair, &format!("SELECT powersync_json_merge({args})"), "Expected json object");
    }
}
