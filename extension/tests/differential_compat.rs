//! Differential tests of cases found by running the reference core's own
//! test suite against oplite (issue 20): read-only connections, column
//! types, refused priorities and schema names, and error codes. Each test
//! makes the same calls to both cores and compares the results and the
//! extended error codes.
mod common;

use common::diff::{Answer, Arg, Pair};
use common::driver::TempDir;
use common::*;
use rusqlite::{Connection, OpenFlags};
use serde_json::{json, Value};

/// Opens `path` with one core registered, read-only or not.
fn open(path: &std::path::Path, read_only: bool, reference: bool) -> Connection {
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY
    } else {
        OpenFlags::default()
    };
    let db = Connection::open_with_flags(path, flags).unwrap();
    if reference {
        load(&db, &reference_so(), "sqlite3_powersync_init").unwrap();
    } else {
        oplite::register(&db).unwrap();
    }
    db
}

/// Runs `sql` in a transaction: Ok, or the extended error code (the
/// transaction is then rolled back).
fn in_transaction(db: &Connection, sql: &str) -> Result<(), i32> {
    db.execute_batch("BEGIN").unwrap();
    match db.query_row(sql, [], |_| Ok(())) {
        Ok(()) => {
            db.execute_batch("COMMIT").unwrap();
            Ok(())
        }
        Err(err) => {
            db.execute_batch("ROLLBACK").unwrap();
            Err(error_code(&err))
        }
    }
}

const SCHEMA: &str = r#"{"tables":[{"name":"items","columns":[{"name":"a","type":"text"}]}]}"#;
const OTHER_SCHEMA: &str =
    r#"{"tables":[{"name":"items","columns":[{"name":"b","type":"text"}]}]}"#;

/// What one core answers on read-only connections: to an initialised
/// database, to one whose client id was deleted, and to one never
/// initialised.
fn read_only_answers(dir: &TempDir, reference: bool) -> Vec<(&'static str, Result<(), i32>)> {
    let side = if reference { "reference" } else { "oplite" };
    let initialised = dir.join(&format!("{side}-initialised.db"));
    let without_id = dir.join(&format!("{side}-without-id.db"));
    let plain = dir.join(&format!("{side}-plain.db"));
    {
        let db = open(&initialised, false, reference);
        in_transaction(&db, "SELECT powersync_init()").unwrap();
        in_transaction(&db, &format!("SELECT powersync_replace_schema('{SCHEMA}')")).unwrap();
        let db = open(&without_id, false, reference);
        in_transaction(&db, "SELECT powersync_init()").unwrap();
        db.execute_batch("DELETE FROM ps_kv").unwrap();
        Connection::open(&plain)
            .unwrap()
            .execute_batch("CREATE TABLE app(x)")
            .unwrap();
    }
    let ro = open(&initialised, true, reference);
    let without_id = open(&without_id, true, reference);
    let plain = open(&plain, true, reference);
    let results = vec![
        ("init", in_transaction(&ro, "SELECT powersync_init()")),
        (
            "same schema",
            in_transaction(&ro, &format!("SELECT powersync_replace_schema('{SCHEMA}')")),
        ),
        (
            "other schema",
            in_transaction(
                &ro,
                &format!("SELECT powersync_replace_schema('{OTHER_SCHEMA}')"),
            ),
        ),
        (
            "client id",
            ro.query_row("SELECT powersync_client_id()", [], |_| Ok(()))
                .map_err(|e| error_code(&e)),
        ),
        (
            "init without id",
            in_transaction(&without_id, "SELECT powersync_init()"),
        ),
        (
            "init uninitialised",
            in_transaction(&plain, "SELECT powersync_init()"),
        ),
    ];
    println!("{side}: {results:?}");
    results
}

#[test]
fn init_on_a_read_only_connection_matches_the_reference() {
    let dir = TempDir::new("compat-read-only");
    let ours = read_only_answers(&dir, false);
    let theirs = read_only_answers(&dir, true);
    assert_eq!(
        ours, theirs,
        "oplite (left) and the reference (right) differ"
    );
    assert_eq!(ours[0], ("init", Ok(())));
}

/// Type names the reference core casts to as given (SQLite's affinity rules
/// decide what each does), in several spellings.
const TYPE_NAMES: &[&str] = &[
    "text", "TEXT", "Integer", "int", "REAL", "float", "double precision", "varchar(20)", "decimal(10, 5)",
    "unsigned big int", "numeric", "boolean", "datetime", "blob", "foo", "", "\"text\"",
];

/// Values of every storage class, in the forms SQLite converts differently.
const LOCAL_VALUES: &[&str] = &["'12'", "12", "1.5", "'abc'", "NULL", "'1e3'", "' 7 '", "'-0'", "9223372036854775807", "'0x10'"];
const SYNCED_VALUES: &[&str] = &["\"12\"", "12", "1.5", "\"abc\"", "null", "\"1e3\"", "true", "false", "-0.0", "1e300"];

/// Starts an iteration and applies one checkpoint whose bucket puts `rows`
/// (id, data JSON) of type `table`.
fn sync_rows(pair: &mut Pair, table: &str, rows: &[(String, String)]) -> Answer {
    pair.control("start", Arg::Null);
    let last = rows.len().to_string();
    let checkpoint = json!({"checkpoint": {"last_op_id": last, "write_checkpoint": null,
        "buckets": [{"bucket": "b", "checksum": 0, "priority": 3, "count": rows.len()}]}});
    pair.control("line_text", Arg::Text(&checkpoint.to_string()));
    let ops: Vec<Value> = rows
        .iter()
        .enumerate()
        .map(|(i, (id, data))| {
            json!({"op_id": (i + 1).to_string(), "op": "PUT", "object_type": table, "object_id": id, "checksum": 0, "data": data})
        })
        .collect();
    let data = json!({"data": {"bucket": "b", "has_more": false, "after": null, "next_after": null, "data": ops}});
    pair.control("line_text", Arg::Text(&data.to_string()));
    let done = json!({"checkpoint_complete": {"last_op_id": last}});
    let answer = pair.control("line_text", Arg::Text(&done.to_string()));
    pair.control("stop", Arg::Null);
    answer
}

#[test]
fn column_types_are_cast_as_the_reference_casts_them() {
    let mut pair = Pair::new();
    let columns: Vec<Value> = TYPE_NAMES.iter().enumerate().map(|(i, t)| json!({"name": format!("c{i}"), "type": t})).collect();
    let names: Vec<String> = (0..TYPE_NAMES.len()).map(|i| format!("c{i}")).collect();
    let index = json!([{"name": "by_int", "columns": [{"name": "c3", "ascending": true, "type": "int"}]},
        {"name": "by_varchar", "columns": [{"name": "c7", "ascending": false, "type": "varchar(20)"}]}]);
    pair.replace_schema(&json!({"tables": [
        {"name": "typed", "columns": columns, "indexes": index},
        {"name": "as_json", "oplite_json_storage": true, "columns": columns, "indexes": index},
        {"name": "local", "local_only": true, "columns": columns},
    ]}));
    // The view's columns, values and storage classes (the pair compares
    // `SELECT *` of every view after each call; typeof is asked here).
    let classes = names.iter().map(|n| format!("typeof({n})")).collect::<Vec<_>>().join(", ");
    for view in ["typed", "as_json", "local"] {
        pair.extra_queries.push((format!("{view} classes"), format!("SELECT id, {classes} FROM {view} ORDER BY id")));
    }
    for (i, value) in LOCAL_VALUES.iter().enumerate() {
        let values = vec![*value; names.len()].join(", ");
        pair.execute(&format!(
            "BEGIN; INSERT INTO typed(id, {0}) VALUES ('l{i}', {values}); INSERT INTO as_json(id, {0}) VALUES ('l{i}', {values});
             INSERT INTO local(id, {0}) VALUES ('l{i}', {values}); COMMIT;",
            names.join(", ")
        ));
        pair.assert_same_tables();
    }
    // A query through an index gives the same rows.
    pair.extra_queries.push(("by index".into(), "SELECT id FROM typed WHERE c3 = 12 ORDER BY c7 DESC, id".into()));
    pair.execute("DELETE FROM ps_crud");
    for table in ["typed", "as_json"] {
        let rows: Vec<(String, String)> = SYNCED_VALUES
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let fields: Vec<String> = names.iter().map(|n| format!("\"{n}\": {v}")).collect();
                (format!("s{i}"), format!("{{{}}}", fields.join(", ")))
            })
            .collect();
        sync_rows(&mut pair, table, &rows);
    }
    for (ours, theirs) in [(&pair.ours, &pair.theirs)] {
        let sql = "SELECT count(*) FROM typed WHERE c3 = 12";
        let n: i64 = ours.query_row(sql, [], |r| r.get(0)).unwrap();
        assert_eq!(n, theirs.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap());
        assert!(n >= 2, "rows with 12 in an int column: {n}");
    }
}

/// Type names that cannot stand in a CAST: both cores refuse the schema,
/// with the same code. Two more the reference accepts, oplite refuses on
/// purpose (docs/differences.md): a type that closes the CAST and adds view
/// columns, and one with a comment.
#[test]
fn type_names_sqlite_cannot_cast_to_are_refused_by_both() {
    let refused_by_both = ["text; drop", "select", "x(1, 2, 3)", "text -- c", "a(b)", "t(1) x", "'", "text)"];
    let refused_by_oplite = ["text) AS x, (1", "text /* c */"];
    for type_name in refused_by_both.iter().chain(&refused_by_oplite) {
        let schema = json!({"tables": [{"name": "t", "columns": [{"name": "a", "type": type_name}]}]}).to_string();
        let sql = format!("SELECT powersync_replace_schema('{}')", schema.replace('\'', "''"));
        let pair = Pair::new();
        let ours = in_transaction(&pair.ours, &sql);
        let theirs = in_transaction(&pair.theirs, &sql);
        assert!(ours.is_err(), "{type_name:?}: oplite accepted it");
        if refused_by_both.contains(type_name) {
            assert_eq!(ours, theirs, "error codes for type {type_name:?}");
        } else {
            assert_eq!(theirs, Ok(()), "{type_name:?}: the reference now refuses it: update docs/differences.md");
        }
        let views = "SELECT count(*) FROM sqlite_master WHERE type = 'view'";
        assert_eq!(pair.ours.query_row(views, [], |r| r.get::<_, i64>(0)).unwrap(), 0);
    }
}

/// local_only with insert_only: the reference ignores insert_only, so the
/// table keeps its rows and queues nothing.
#[test]
fn local_only_wins_over_insert_only() {
    let mut pair = Pair::new();
    pair.replace_schema(&json!({"tables": [
        {"name": "drafts", "local_only": true, "insert_only": true, "columns": [{"name": "a", "type": "text"}]},
        {"name": "logs", "insert_only": true, "columns": [{"name": "a", "type": "text"}]},
    ]}));
    pair.execute("BEGIN; INSERT INTO drafts(id, a) VALUES ('1', 'x'), ('2', 'y'); INSERT INTO logs(id, a) VALUES ('1', 'x'); COMMIT;");
    pair.execute("BEGIN; UPDATE drafts SET a = 'z' WHERE id = '1'; DELETE FROM drafts WHERE id = '2'; COMMIT;");
    pair.assert_same_tables();
    let rows = common::diff::rows(&pair.ours, "SELECT id, a FROM drafts");
    assert_eq!(rows, vec![r#"Text("1")|Text("z")"#]);
    let queued = common::diff::rows(&pair.ours, "SELECT data FROM ps_crud");
    assert_eq!(queued.len(), 1, "only the insert_only table queues: {queued:?}");
}

/// A checkpoint with one bucket of `priority`.
fn checkpoint_with_priority(priority: Value) -> String {
    json!({"checkpoint": {"last_op_id": "1", "write_checkpoint": null,
        "buckets": [{"bucket": "b", "checksum": 0, "priority": priority, "count": 1}]}})
    .to_string()
}

/// Negative priorities (and i32::MAX, which the reference keeps for "every
/// priority") are refused in checkpoints and partial completions alike, and
/// nothing reaches ps_sync_state.
#[test]
fn bucket_priorities_below_zero_are_refused() {
    for priority in [json!(-1), json!(i32::MAX), json!(i64::from(i32::MAX) + 1), json!(-2147483648i64)] {
        let mut pair = Pair::new();
        pair.control("start", Arg::Null);
        let codes = pair.control_error_codes("line_text", Arg::Text(&checkpoint_with_priority(priority.clone())));
        println!("checkpoint with priority {priority}: {codes:?}");
        assert_eq!(codes.0, codes.1, "codes (oplite, reference) for a checkpoint with priority {priority}");
    }
    // The reference ends the iteration on a refused line (oplite keeps it,
    // docs/differences.md): one iteration per case.
    for priority in [-1, i32::MAX] {
        let mut pair = Pair::new();
        pair.control("start", Arg::Null);
        pair.control("line_text", Arg::Text(&checkpoint_with_priority(json!(1))));
        let partial = json!({"partial_checkpoint_complete": {"last_op_id": "1", "priority": priority}}).to_string();
        let codes = pair.control_error_codes("line_text", Arg::Text(&partial));
        println!("partial completion with priority {priority}: {codes:?}");
        assert_eq!(codes.0, codes.1, "codes (oplite, reference) for a partial completion with priority {priority}");
        let count = "SELECT count(*) FROM ps_sync_state";
        assert_eq!(pair.ours.query_row(count, [], |r| r.get::<_, i64>(0)).unwrap(), 0);
    }
}
