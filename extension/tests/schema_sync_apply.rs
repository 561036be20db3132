//! The interface the sync apply writes through: DataTables and RowWriter.
mod common;

use common::schema::*;
use common::*;
use oplite::schema::{DataTables, RawParam, RawStatement, RawTable, RowTypeKind};
use rusqlite::types::Value;

const SCHEMA: &str = r#"{"tables":[
  {"name":"items","columns":[{"name":"name","type":"text"},{"name":"n","type":"integer"}]},
  {"name":"docs","oplite_json_storage":true,"columns":[{"name":"title","type":"text"}]},
  {"name":"drafts","local_only":true,"columns":[{"name":"text","type":"text"}]}],
 "raw_tables":[{"name":"things","put":{"sql":"INSERT OR REPLACE INTO things(id, a, rest) VALUES (?, ?, ?)","params":["Id",{"Column":"a"},"Rest"]},
   "delete":{"sql":"DELETE FROM things WHERE id = ?","params":["Id"]},"clear":"DELETE FROM things"}]}"#;

fn setup() -> rusqlite::Connection {
    let db = oplite_initialised();
    db.execute_batch("CREATE TABLE things(id TEXT PRIMARY KEY, a, rest)").unwrap();
    replace_schema(&db, SCHEMA).unwrap();
    db
}

fn text(s: &str) -> Value {
    Value::Text(s.into())
}

#[test]
fn rows_go_where_their_type_says() {
    let db = setup();
    let tables = DataTables::load(&db).unwrap();
    assert_eq!(tables.kind("items"), RowTypeKind::Table);
    assert_eq!(tables.kind("docs"), RowTypeKind::Table);
    assert_eq!(tables.kind("things"), RowTypeKind::RawTable);
    assert_eq!(tables.kind("drafts"), RowTypeKind::Untyped, "local-only tables are not sync targets");
    assert_eq!(tables.kind("unknown"), RowTypeKind::Untyped);
    sync_rows(
        &db,
        &[
            ("items", "a", Some(r#"{"name":"x","n":1,"z":[1, 2]}"#)),
            ("docs", "d", Some(r#"{"title":"t","other":2}"#)),
            ("things", "t", Some(r#"{"a":1,"b":"two","c":[1,2],"d":null}"#)),
            ("unknown", "u", Some(r#"{"x":1}"#)),
            ("drafts", "r", Some(r#"{"text":"synced"}"#)),
        ],
    );
    assert_eq!(rows(&db, "SELECT id, name, n FROM items"), vec![vec![text("a"), text("x"), Value::Integer(1)]]);
    assert_eq!(texts(&db, "SELECT data FROM ps_data__docs"), [r#"{"title":"t","other":2}"#]);
    // A column without affinity shows how raw tables are bound: a JSON
    // number that fits in 64 bits as an INTEGER, as core 0.5.4 binds them.
    assert_eq!(rows(&db, "SELECT * FROM things"), vec![vec![text("t"), Value::Integer(1), text(r#"{"b":"two","c":[1,2],"d":null}"#)]]);
    assert_eq!(texts(&db, "SELECT type || '/' || id FROM ps_untyped ORDER BY type"), ["drafts/r", "unknown/u"]);
    // Sync writes queue nothing.
    assert!(crud(&db).is_empty());
    assert!(texts(&db, "SELECT * FROM ps_updated_rows").is_empty());

    // A later put replaces the row, delete removes it everywhere.
    sync_rows(&db, &[("items", "a", Some(r#"{"name":"y"}"#))]);
    assert_eq!(rows(&db, "SELECT name, n FROM items"), vec![vec![text("y"), Value::Null]]);
    sync_rows(&db, &[("items", "a", None), ("docs", "d", None), ("things", "t", None), ("unknown", "u", None)]);
    for table in ["items", "docs", "things", "ps_untyped WHERE type = 'unknown'"] {
        assert_eq!(texts(&db, &format!("SELECT count(*) FROM {table}")), ["0"], "{table}");
    }
}

#[test]
fn unreadable_data_is_kept() {
    let db = setup();
    sync_rows(&db, &[("items", "bad", Some("not json"))]);
    assert_eq!(rows(&db, "SELECT id, name FROM items"), vec![vec![text("bad"), Value::Null]]);
    assert_eq!(texts(&db, "SELECT ps_undeclared FROM ps_data__items"), ["not json"]);
}

#[test]
fn set_wise_sql_matches_the_row_writer() {
    let db = setup();
    db.execute_batch(
        r#"CREATE TEMP TABLE source(id, data);
           INSERT INTO source VALUES ('a', '{"name":"x","n":"5","e":1}'), ('b', '{"n":2.5}'), ('c', '{}');"#,
    )
    .unwrap();
    let tables = DataTables::load(&db).unwrap();
    let sql = tables.upsert_from_select_sql("items", "SELECT id, data FROM source").unwrap();
    db.execute_batch(&sql).unwrap();
    db.execute_batch(&sql).unwrap(); // upserts: running twice changes nothing
    assert_eq!(
        rows(&db, "SELECT id, name, n, typeof(n), ps_undeclared FROM ps_data__items ORDER BY id"),
        vec![
            vec![text("a"), text("x"), text("5"), text("text"), text(r#"{"e":1}"#)],
            vec![text("b"), Value::Null, Value::Real(2.5), text("real"), Value::Null],
            vec![text("c"), Value::Null, Value::Null, text("null"), Value::Null],
        ]
    );
    assert!(tables.upsert_from_select_sql("things", "SELECT 1").is_none());
    assert!(tables.upsert_from_select_sql("unknown", "SELECT 1").is_none());
    let delete = tables.delete_from_select_sql("items", "SELECT id FROM source WHERE id != 'c'").unwrap();
    db.execute_batch(&delete).unwrap();
    assert_eq!(texts(&db, "SELECT id FROM items"), ["c"]);
    let docs = tables.upsert_from_select_sql("docs", "SELECT id, data FROM source").unwrap();
    db.execute_batch(&docs).unwrap();
    assert_eq!(texts(&db, "SELECT count(*) FROM docs"), ["3"]);
}

#[test]
fn the_writer_marks_a_sync_operation() {
    let db = setup();
    db.execute_batch(
        "CREATE TABLE log(id, in_sync);
         CREATE TRIGGER log_items AFTER INSERT ON ps_data__items BEGIN INSERT INTO log VALUES (NEW.id, powersync_in_sync_operation()); END;",
    )
    .unwrap();
    db.execute_batch("INSERT INTO items(id, name) VALUES ('local', 'x')").unwrap();
    sync_rows(&db, &[("items", "synced", Some("{}"))]);
    assert_eq!(rows(&db, "SELECT * FROM log ORDER BY id"), vec![
        vec![text("local"), Value::Integer(0)],
        vec![text("synced"), Value::Integer(1)]
    ]);
    assert_eq!(texts(&db, "SELECT powersync_in_sync_operation()"), ["0"]);
}

#[test]
fn raw_tables_from_the_stream_replace_the_recorded_ones() {
    let db = setup();
    db.execute_batch("CREATE TABLE other(id, b)").unwrap();
    let raw = RawTable {
        name: "others".into(),
        table_name: None,
        put: Some(RawStatement { sql: "INSERT INTO other(id, b) VALUES (?, ?)".into(), params: vec![RawParam::Id, RawParam::Column("b".into())] }),
        delete: Some(RawStatement { sql: "DELETE FROM other WHERE id = ?".into(), params: vec![RawParam::Id] }),
        synced_columns: None,
        options: Default::default(),
        clear: None,
    };
    let tables = DataTables::load(&db).unwrap().with_raw_tables(vec![raw]);
    assert_eq!(tables.kind("things"), RowTypeKind::Untyped);
    assert_eq!(tables.kind("others"), RowTypeKind::RawTable);
    db.execute_batch("BEGIN").unwrap();
    tables.writer(&db).unwrap().put("others", "o", r#"{"b":true}"#).unwrap();
    db.execute_batch("COMMIT").unwrap();
    assert_eq!(rows(&db, "SELECT * FROM other"), vec![vec![text("o"), Value::Integer(1)]]);
}
