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
            "client id when missing",
            without_id.query_row("SELECT powersync_client_id()", [], |_| Ok(())).map_err(|e| error_code(&e)),
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

/// A schema with one table, named `name` or with the view `name`.
fn schema_named(name: &str, as_view: bool, columns: &[&str]) -> Value {
    let columns: Vec<Value> = columns.iter().map(|c| json!({"name": c, "type": "text"})).collect();
    let table = if as_view {
        json!({"name": "t", "view_name": name, "columns": columns})
    } else {
        json!({"name": name, "view_name": "v", "columns": columns})
    };
    json!({"tables": [table]})
}

fn replace_sql(schema: &Value) -> String {
    format!("SELECT powersync_replace_schema('{}')", schema.to_string().replace('\'', "''"))
}

/// View names the reference refuses: internal tables and indexes (its
/// CREATE VIEW or DROP VIEW fails), names reserved by SQLite, and names of
/// virtual tables SQLite resolves without a CREATE (json_each, pragma_*,
/// the upload queue's powersync_crud modules), whose view would hide them
/// from every statement. oplite refuses the same, with the same code, and
/// leaves the database as it was.
#[test]
fn view_names_the_reference_refuses_are_refused() {
    let names = [
        "json_each", "JSON_EACH", "json_tree", "pragma_table_info", "pragma_index_list", "powersync_crud",
        "powersync_crud_", "powersync_internal_close", "ps_crud", "ps_oplog", "ps_buckets", "ps_kv", "ps_untyped",
        "ps_updated_rows", "ps_tx", "ps_sync_state", "ps_stream_subscriptions", "ps_migration", "ps_oplog_row",
        "ps_data__t", "sqlite_master", "sqlite_x",
    ];
    for name in names {
        let pair = Pair::new();
        let sql = replace_sql(&schema_named(name, true, &["a"]));
        let ours = in_transaction(&pair.ours, &sql);
        let theirs = in_transaction(&pair.theirs, &sql);
        assert!(theirs.is_err(), "{name:?}: the reference now accepts it");
        assert_eq!(ours, theirs, "{name:?}: codes (oplite, reference)");
        pair.assert_same_tables();
        let objects = "SELECT count(*) FROM sqlite_master WHERE name = 't' OR name LIKE 'ps_data__t%'";
        assert_eq!(pair.ours.query_row(objects, [], |r| r.get::<_, i64>(0)).unwrap(), 0, "{name:?}");
    }
}

/// Names the reference accepts as view names, and names of virtual tables
/// and internal tables as table names (their data table is ps_data__<name>):
/// oplite accepts them too, and a sync apply, local writes, a schema change
/// and powersync_clear then work alike in both.
#[test]
fn names_the_reference_accepts_work_in_oplite() {
    let cases = [
        ("pragma_foo", true), ("json_foo", true), ("oplite_field", true), ("json_object", true), ("main", true),
        ("temp", true), ("SELECT", true), ("x\"y", true), ("powersync_views", true), ("json_each", false),
        ("pragma_table_info", false), ("oplite_row", false), ("powersync_crud", false), ("powersync_crud_", false),
        ("ps_crud", false), ("ps_kv", false), ("sqlite_master", false), ("sqlite_x", false),
    ];
    for (name, as_view) in cases {
        let mut pair = Pair::new();
        let (row_type, view) = if as_view { ("t", name) } else { (name, "v") };
        let view = format!("\"{}\"", view.replace('"', "\"\""));
        let schema = schema_named(name, as_view, &["a"]);
        for db in [&pair.ours, &pair.theirs] {
            assert_eq!(in_transaction(db, &replace_sql(&schema)), Ok(()), "{name:?}");
        }
        pair.extra_queries.push(("view".into(), format!("SELECT * FROM {view} ORDER BY id")));
        let answer = sync_rows(&mut pair, row_type, &[("s1".into(), r#"{"a":"s","b":"t"}"#.into())]);
        assert!(format!("{answer:?}").contains("DidCompleteSync"), "{name:?}: {answer:?}");
        pair.execute(&format!(
            "BEGIN; INSERT INTO {view}(id, a) VALUES ('1', 'x'), ('2', 'y'); UPDATE {view} SET a = 'z' WHERE id = '1';
             DELETE FROM {view} WHERE id = '2'; UPDATE {view} SET a = 'local' WHERE id = 's1'; COMMIT;"
        ));
        pair.assert_same_tables();
        let changed = schema_named(name, as_view, &["a", "b"]);
        for db in [&pair.ours, &pair.theirs] {
            assert_eq!(in_transaction(db, &replace_sql(&changed)), Ok(()), "{name:?}: adding a column");
        }
        pair.assert_same_tables();
        for db in [&pair.ours, &pair.theirs] {
            assert_eq!(in_transaction(db, "SELECT powersync_clear(0)"), Ok(()), "{name:?}: clearing");
        }
        pair.assert_same_tables();
    }
}

/// View names the reference accepts and oplite refuses, on purpose
/// (docs/differences.md): oplite's own virtual table and internal table,
/// and the data tables' prefixes.
#[test]
fn view_names_only_oplite_refuses() {
    for name in ["oplite_row", "ps_oplite_raw_tables", "ps_data_local__t"] {
        let pair = Pair::new();
        let sql = replace_sql(&schema_named(name, true, &["a"]));
        assert_eq!(in_transaction(&pair.theirs, &sql), Ok(()), "{name:?}: the reference refuses it now");
        let err = in_transaction(&pair.ours, &sql).unwrap_err();
        assert_eq!(err, rusqlite::ffi::SQLITE_ERROR, "{name:?}");
    }
}

/// Runs `setup`, then `sql` (in a transaction when `in_tx`): the extended
/// error code, or None when it succeeds.
fn code_of(db: &Connection, setup: &str, sql: &str, in_tx: bool) -> Option<i32> {
    db.execute_batch(setup).unwrap();
    if in_tx {
        db.execute_batch("BEGIN").unwrap();
    }
    let result = match db.query_row(sql, [], |_| Ok(())) {
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(()),
        other => other,
    };
    if in_tx {
        db.execute_batch("ROLLBACK").unwrap();
    }
    result.err().map(|e| error_code(&e))
}

const START: &str = "BEGIN; SELECT powersync_control('start', NULL); COMMIT;";

/// Failing calls, as (setup, statement, in a transaction): those of the
/// reference's dart/test/error_test.dart and the refused arguments of
/// every function, state errors, protocol errors and schema conflicts.
const FAILING_CALLS: &[(&str, &str, bool)] = &[
    // error_test.dart: outside a transaction, missing client id, an
    // invalid line.
    ("", "SELECT powersync_init()", false),
    ("", "SELECT powersync_control('stop', NULL)", false),
    ("", r#"SELECT powersync_replace_schema('{}')"#, false),
    ("", "SELECT powersync_clear(0)", false),
    ("", "SELECT powersync_trigger_resync(TRUE)", false),
    ("DELETE FROM ps_kv", "SELECT powersync_client_id()", false),
    (START, "SELECT powersync_control('line_text', 'invalid sync line')", true),
    // Refused arguments of powersync_control.
    ("", "SELECT powersync_control('bogus', NULL)", true),
    ("", "SELECT powersync_control(NULL, NULL)", true),
    ("", "SELECT powersync_control(123, NULL)", true),
    ("", "SELECT powersync_control(x'00', NULL)", true),
    ("", "SELECT powersync_control('start', 'not json')", true),
    ("", r#"SELECT powersync_control('start', '{"parameters": 5}')"#, true),
    ("", r#"SELECT powersync_control('start', '{"parameters": [1]}')"#, true),
    (START, r#"SELECT powersync_control('line_binary', '{"token_expires_in": 60}')"#, true),
    (START, "SELECT powersync_control('line_text', 5)", true),
    (START, "SELECT powersync_control('line_text', NULL)", true),
    (START, "SELECT powersync_control('seed_checkpoint_request_id', 0)", true),
    (START, "SELECT powersync_control('seed_checkpoint_request_id', 'x')", true),
    (START, "SELECT powersync_control('target_checkpoint_request_id', -1)", true),
    (START, "SELECT powersync_control('target_checkpoint_request_id', 'x')", true),
    ("", "SELECT powersync_control('subscriptions', 'bad')", true),
    ("", r#"SELECT powersync_control('subscriptions', '{"subscribe":{"stream":{"name":"a"},"priority":-1}}')"#, true),
    ("", "SELECT powersync_control('subscriptions', NULL)", true),
    (START, "SELECT powersync_control('update_subscriptions', 'bad')", true),
    (START, "SELECT powersync_control('connection', 'bad')", true),
    (START, "SELECT powersync_control('connection', 5)", true),
    // State and protocol errors.
    ("", "SELECT powersync_control('line_text', '{}')", true),
    (START, r#"SELECT powersync_control('line_text', '{"checkpoint": 5}')"#, true),
    (START, "SELECT powersync_control('line_binary', x'00')", true),
    (START, "SELECT powersync_trigger_resync(1)", true),
    ("", "SELECT powersync_update_hooks('bogus')", false),
    ("", "SELECT powersync_update_hooks(5)", false),
    ("", "SELECT powersync_update_hooks(NULL)", false),
    // Schemas that do not decode, and schema conflicts.
    ("", "SELECT powersync_replace_schema('not json')", true),
    ("", "SELECT powersync_replace_schema('{}')", true),
    ("", "SELECT powersync_replace_schema(5)", true),
    ("", "SELECT powersync_replace_schema(NULL)", true),
    ("", "SELECT powersync_replace_schema(x'00')", true),
    ("", r#"SELECT powersync_replace_schema('{"tables":[{"name":"t","columns":[{"name":"a","type":"text"}],"include_old":5}]}')"#, true),
    ("", r#"SELECT powersync_replace_schema('{"tables":[{"name":"t","columns":[]}],"raw_tables":[{"name":"r","put":{"sql":"x","params":["Bogus"]}}]}')"#, true),
    ("", r#"SELECT powersync_replace_schema('{"tables":[{"name":"t","columns":[]},{"name":"t","columns":[]}]}')"#, true),
    ("", r#"SELECT powersync_replace_schema('{"tables":[{"name":"x","columns":[]}]}')"#, true),
    // Helper functions.
    ("", "SELECT powersync_diff('x', 'y')", false),
    ("", "SELECT powersync_diff('[]', '{}')", false),
    ("", "SELECT powersync_diff(x'00', '{}')", false),
    ("", "SELECT powersync_diff(5, '{}')", false),
    ("", "SELECT powersync_json_merge('x', '{}')", false),
    ("", "SELECT powersync_remove_duplicate_key_encoding(5)", false),
    ("", "SELECT powersync_remove_duplicate_key_encoding(x'00')", false),
    ("", "SELECT powersync_create_raw_table_crud_trigger('bad', 't', 'INSERT')", true),
    ("", r#"SELECT powersync_create_raw_table_crud_trigger('{"name":"r"}', 't', 'INSERT')"#, true),
    ("", r#"SELECT powersync_create_raw_table_crud_trigger('{"name":"r","table_name":"x"}', 't', 'BOGUS')"#, true),
    ("", r#"SELECT powersync_create_raw_table_crud_trigger('{"name":"r","table_name":"nope"}', 't', 'INSERT')"#, true),
    ("", r#"SELECT powersync_create_raw_table_crud_trigger('{"name":"r","table_name":"x"}', 't', 'INSERT')"#, false),
];

/// Both cores fail every call of [`FAILING_CALLS`] with the same extended
/// code (the messages differ by design).
#[test]
fn error_codes_match_the_reference() {
    let mut differing = Vec::new();
    for (setup, sql, in_tx) in FAILING_CALLS {
        let [ours, theirs] = [oplite(), reference()].map(|db| {
            init(&db);
            db.execute_batch("CREATE TABLE x(a)").unwrap();
            code_of(&db, setup, sql, *in_tx)
        });
        assert!(theirs.is_some(), "{sql}: the reference accepts it now");
        if ours != theirs {
            differing.push(format!("{sql}: oplite {ours:?}, reference {theirs:?}"));
        }
    }
    assert!(differing.is_empty(), "codes differ:\n{}", differing.join("\n"));
    // Payloads both accept: `start` takes one that is not text as no options.
    for sql in ["SELECT powersync_control('start', x'00')", "SELECT powersync_control('start', 5)"] {
        let [ours, theirs] = [oplite(), reference()].map(|db| {
            init(&db);
            code_of(&db, "", sql, true)
        });
        assert_eq!((ours, theirs), (None, None), "{sql}");
    }
    // error_test.dart: a ps_migration table oplite and the reference cannot
    // read is SQLite's error.
    let [ours, theirs] = [oplite(), reference()].map(|db| {
        code_of(&db, "CREATE TABLE ps_migration(foo TEXT)", "SELECT powersync_init()", true)
    });
    assert_eq!(ours, theirs);
    assert_eq!(theirs, Some(rusqlite::ffi::SQLITE_ERROR));
}

fn op(op_id: u32, table: &str, id: &str, data: Option<&str>) -> Value {
    match data {
        Some(data) => json!({"op_id": op_id.to_string(), "op": "PUT", "object_type": table, "object_id": id,
            "checksum": 0, "data": data}),
        None => json!({"op_id": op_id.to_string(), "op": "REMOVE", "object_type": table, "object_id": id, "checksum": 0}),
    }
}

fn data_line(bucket: &str, ops: Vec<Value>) -> String {
    json!({"data": {"bucket": bucket, "has_more": false, "after": null, "next_after": null, "data": ops}}).to_string()
}

/// `"diagnostics": {}` in `start`: both cores emit the same
/// HandleDiagnostics instructions (bucket progress after checkpoints and
/// data lines, column types of synced rows), in the same place among the
/// other instructions (`Pair::control` compares the whole answers).
#[test]
fn diagnostics_match_the_reference() {
    let mut pair = Pair::new();
    pair.replace_schema(&json!({"tables": [{"name": "t", "columns": [{"name": "a", "type": "text"}]}]}));
    for iteration in 0..2 {
        let answer = pair.control("start", Arg::Text(r#"{"diagnostics": {}}"#));
        assert!(!format!("{answer:?}").contains("HandleDiagnostics"), "start reports nothing");
        let checkpoint = json!({"checkpoint": {"last_op_id": "6", "write_checkpoint": null, "buckets": [
            {"bucket": "b2", "checksum": 0, "priority": 1, "count": 4},
            {"bucket": "b1", "checksum": 0, "priority": 3, "count": 2},
            {"bucket": "b0", "checksum": 0}]}});
        let answer = pair.control("line_text", Arg::Text(&checkpoint.to_string()));
        assert!(format!("{answer:?}").contains("BucketStateChange"), "{answer:?}");
        pair.control("line_text", Arg::Text(&data_line("b1", vec![
            op(1, "t", "1", Some(r#"{"id":"1","a":1,"b":null,"c":"x","n":{"x":1},"after":1}"#)),
            op(2, "t", "2", Some(r#"{"a":1.5,"c":2,"d":true,"e":1}"#)),
        ])));
        pair.control("line_text", Arg::Text(&data_line("b2", vec![
            op(3, "t", "3", Some(r#"{"a":"text","e":2.5,"f":[1]}"#)),
            op(4, "u", "1", Some(r#"{"a":3,"z":-1,"big":18446744073709551615,"huge":1e400}"#)),
            op(5, "t", "2", None),
            op(6, "u", "2", Some("not json")),
        ])));
        // A bucket the checkpoint does not name: types only (as BSON).
        let line: Value = serde_json::from_str(&data_line("other", vec![op(7, "v", "1", Some(r#"{"q":1,"r":"s"}"#))])).unwrap();
        pair.control("line_binary", Arg::Blob(&bson::serialize_to_vec(&line).unwrap()));
        let diff = json!({"checkpoint_diff": {"last_op_id": "8", "write_checkpoint": null,
            "updated_buckets": [{"bucket": "b3", "checksum": 0, "priority": 2, "count": 1}], "removed_buckets": ["b0", "other"]}});
        pair.control("line_text", Arg::Text(&diff.to_string()));
        pair.control("line_text", Arg::Text(&data_line("b3", vec![op(8, "t", "4", Some(r#"{"a":1}"#))])));
        let partial = json!({"partial_checkpoint_complete": {"last_op_id": "8", "priority": 1}});
        pair.control("line_text", Arg::Text(&partial.to_string()));
        pair.control("line_text", Arg::Text(&data_line("b1", vec![op(9, "t", "5", Some(r#"{"g":1}"#))])));
        let done = pair.control("line_text", Arg::Text(&json!({"checkpoint_complete": {"last_op_id": "8"}}).to_string()));
        assert!(format!("{done:?}").contains("DidCompleteSync"), "iteration {iteration}: {done:?}");
        // After the checkpoint: no download in progress, types only.
        pair.control("line_text", Arg::Text(&data_line("b1", vec![op(10, "t", "6", Some(r#"{"h":1}"#))])));
        pair.control("stop", Arg::Null);
    }
    // Without the option, nothing.
    let answer = pair.control("start", Arg::Null);
    let checkpoint = json!({"checkpoint": {"last_op_id": "1", "write_checkpoint": null, "buckets": [{"bucket": "b9", "checksum": 0}]}});
    let answer2 = pair.control("line_text", Arg::Text(&checkpoint.to_string()));
    assert!(!format!("{answer:?}{answer2:?}").contains("HandleDiagnostics"));
    pair.control("stop", Arg::Null);
    // Options that are not an object are refused alike.
    for options in [r#"{"diagnostics": true}"#, r#"{"diagnostics": 1}"#] {
        let (ours, theirs) = pair.control_error_codes("start", Arg::Text(options));
        assert_eq!(ours, theirs, "{options}");
    }
    pair.control("start", Arg::Text(r#"{"diagnostics": null}"#));
}

/// Data lines outside the checkpoint being downloaded: for a bucket no
/// checkpoint named (a later checkpoint, full or diff, deletes it), and
/// after the checkpoint was applied (no download progress is reported
/// until the next checkpoint). Found while comparing diagnostics.
#[test]
fn data_lines_outside_the_checkpoint_match_the_reference() {
    for removal in ["diff", "full"] {
        let mut pair = Pair::new();
        pair.replace_schema(&json!({"tables": [{"name": "t", "columns": [{"name": "a", "type": "text"}]}]}));
        pair.control("start", Arg::Null);
        let checkpoint = json!({"checkpoint": {"last_op_id": "1", "write_checkpoint": null,
            "buckets": [{"bucket": "b1", "checksum": 0, "priority": 3, "count": 1}]}});
        pair.control("line_text", Arg::Text(&checkpoint.to_string()));
        pair.control("line_text", Arg::Text(&data_line("other", vec![op(2, "t", "2", Some(r#"{"a":"o"}"#))])));
        pair.control("line_text", Arg::Text(&data_line("b1", vec![op(1, "t", "1", Some(r#"{"a":"x"}"#))])));
        pair.control("line_text", Arg::Text(&json!({"checkpoint_complete": {"last_op_id": "1"}}).to_string()));
        // After the apply: counted, but no progress until a checkpoint.
        pair.control("line_text", Arg::Text(&data_line("b1", vec![op(3, "t", "3", Some(r#"{"a":"y"}"#))])));
        let next = if removal == "diff" {
            json!({"checkpoint_diff": {"last_op_id": "3", "write_checkpoint": null,
                "updated_buckets": [{"bucket": "b1", "checksum": 0, "priority": 3, "count": 2}], "removed_buckets": ["other"]}})
        } else {
            json!({"checkpoint": {"last_op_id": "3", "write_checkpoint": null,
                "buckets": [{"bucket": "b1", "checksum": 0, "priority": 3, "count": 2}]}})
        };
        pair.control("line_text", Arg::Text(&next.to_string()));
        pair.control("line_text", Arg::Text(&json!({"checkpoint_complete": {"last_op_id": "3"}}).to_string()));
        pair.control("stop", Arg::Null);
    }
}
