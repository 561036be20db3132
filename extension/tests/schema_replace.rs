//! powersync_replace_schema: diffs, typed storage, moves to and from
//! ps_untyped, local_only switching, indexes, bad input.
mod common;

use common::schema::*;
use common::*;
use rusqlite::types::Value;

const ITEMS: &str = r#"{"tables":[{"name":"items","columns":[{"name":"name","type":"text"},{"name":"n","type":"integer"}]}]}"#;

fn text(s: &str) -> Value {
    Value::Text(s.into())
}

#[test]
fn identical_schema_changes_nothing() {
    let db = oplite_initialised();
    replace_schema(&db, ITEMS).unwrap();
    let version = schema_version(&db);
    let dump = schema_dump(&db);
    replace_schema(&db, ITEMS).unwrap();
    assert_eq!(schema_version(&db), version);
    assert_eq!(schema_dump(&db), dump);
}

#[test]
fn typed_tables_keep_values_as_they_arrived() {
    let db = oplite_initialised();
    replace_schema(&db, ITEMS).unwrap();
    sync_rows(&db, &[("items", "a", Some(r#"{"name":"x","n":"12","extra":{"k":[1, 2]}}"#))]);
    // Stored as it came: the text "12" stays text, the undeclared field is
    // kept as it was written.
    assert_eq!(
        rows(&db, "SELECT id, name, n, typeof(n), ps_undeclared FROM ps_data__items"),
        vec![vec![text("a"), text("x"), text("12"), text("text"), text(r#"{"extra":{"k":[1, 2]}}"#)]]
    );
    // The view casts, as the reference's view does.
    assert_eq!(rows(&db, "SELECT id, name, n, typeof(n) FROM items"), vec![vec![text("a"), text("x"), Value::Integer(12), text("integer")]]);
    assert!(schema_dump(&db).iter().any(|s| s.contains(
        r#"CREATE TABLE "ps_data__items"(id TEXT PRIMARY KEY NOT NULL, "name", "n", ps_undeclared TEXT, data TEXT GENERATED ALWAYS AS ("#
    ) && s.ends_with(") VIRTUAL)")));
    // The reference's `data` column: declared columns, then the undeclared
    // fields as they came.
    assert_eq!(rows(&db, "SELECT data FROM ps_data__items"), vec![vec![text(r#"{"name":"x","n":"12","extra":{"k":[1, 2]}}"#)]]);
}

#[test]
fn adding_a_column_fills_it_from_undeclared_fields_and_removing_keeps_the_values() {
    let db = oplite_initialised();
    replace_schema(&db, ITEMS).unwrap();
    sync_rows(&db, &[("items", "a", Some(r#"{"name":"x","n":1,"color":"red","size":2.5}"#)), ("items", "b", Some(r#"{"name":"y"}"#))]);
    let with_color = r#"{"tables":[{"name":"items","columns":[{"name":"name","type":"text"},{"name":"n","type":"integer"},{"name":"color","type":"text"}]}]}"#;
    replace_schema(&db, with_color).unwrap();
    assert_eq!(
        rows(&db, "SELECT id, name, n, color FROM items ORDER BY id"),
        vec![vec![text("a"), text("x"), Value::Integer(1), text("red")], vec![text("b"), text("y"), Value::Null, Value::Null]]
    );
    assert_eq!(texts(&db, "SELECT ps_undeclared FROM ps_data__items ORDER BY id"), ["{\"size\":2.5}", "NULL"]);

    // Removing "n" moves its values back; adding it again restores them.
    let without_n = r#"{"tables":[{"name":"items","columns":[{"name":"name","type":"text"},{"name":"color","type":"text"}]}]}"#;
    replace_schema(&db, without_n).unwrap();
    assert_eq!(texts(&db, "SELECT name FROM pragma_table_info('ps_data__items')"), ["id", "name", "ps_undeclared", "color"]);
    replace_schema(&db, with_color).unwrap();
    assert_eq!(rows(&db, "SELECT id, n FROM items ORDER BY id"), vec![vec![text("a"), Value::Integer(1)], vec![text("b"), Value::Null]]);
}

#[test]
fn a_type_change_only_changes_the_view() {
    let db = oplite_initialised();
    replace_schema(&db, ITEMS).unwrap();
    sync_rows(&db, &[("items", "a", Some(r#"{"name":"x","n":"12.5"}"#))]);
    let as_real = ITEMS.replace(r#""n","type":"integer""#, r#""n","type":"real""#);
    replace_schema(&db, &as_real).unwrap();
    assert_eq!(rows(&db, "SELECT n FROM items"), vec![vec![Value::Real(12.5)]]);
    assert_eq!(rows(&db, "SELECT n FROM ps_data__items"), vec![vec![text("12.5")]]);
}

#[test]
fn dropped_tables_move_to_untyped_and_come_back() {
    let db = oplite_initialised();
    replace_schema(&db, ITEMS).unwrap();
    sync_rows(&db, &[("items", "a", Some(r#"{"name":"x","n":1,"other":true}"#)), ("items", "b", Some(r#"{"name":"y"}"#))]);
    replace_schema(&db, r#"{"tables":[]}"#).unwrap();
    assert_eq!(texts(&db, "SELECT count(*) FROM sqlite_master WHERE name LIKE '%items%'"), ["0"]);
    assert_eq!(
        rows(&db, "SELECT type, id FROM ps_untyped ORDER BY id"),
        vec![vec![text("items"), text("a")], vec![text("items"), text("b")]]
    );
    replace_schema(&db, ITEMS).unwrap();
    assert_eq!(texts(&db, "SELECT count(*) FROM ps_untyped"), ["0"]);
    assert_eq!(
        rows(&db, "SELECT id, name, n FROM items ORDER BY id"),
        vec![vec![text("a"), text("x"), Value::Integer(1)], vec![text("b"), text("y"), Value::Null]]
    );
    assert_eq!(texts(&db, "SELECT ps_undeclared FROM ps_data__items WHERE id = 'a'"), [r#"{"other":true}"#]);
}

#[test]
fn untyped_rows_synced_before_the_table_existed_appear_when_it_is_added() {
    let db = oplite_initialised();
    replace_schema(&db, r#"{"tables":[]}"#).unwrap();
    sync_rows(&db, &[("items", "a", Some(r#"{"name":"early"}"#)), ("items", "bad", Some("not json"))]);
    replace_schema(&db, ITEMS).unwrap();
    assert_eq!(rows(&db, "SELECT id, name FROM items ORDER BY id"), vec![vec![text("a"), text("early")], vec![text("bad"), Value::Null]]);
    // Data SQLite cannot read is kept as it came, and moves back unchanged.
    replace_schema(&db, r#"{"tables":[]}"#).unwrap();
    assert_eq!(texts(&db, "SELECT data FROM ps_untyped WHERE id = 'bad'"), ["not json"]);
}

#[test]
fn switching_local_only_behaves_like_the_reference() {
    let local = r#"{"tables":[{"name":"items","local_only":true,"columns":[{"name":"name","type":"text"}]}]}"#;
    let synced = r#"{"tables":[{"name":"items","columns":[{"name":"name","type":"text"}]}]}"#;
    let db = oplite_initialised();
    replace_schema(&db, synced).unwrap();
    sync_rows(&db, &[("items", "s", Some(r#"{"name":"synced"}"#))]);
    // Synced -> local: the synced rows wait in ps_untyped, the local table starts empty.
    replace_schema(&db, local).unwrap();
    assert_eq!(texts(&db, "SELECT count(*) FROM items"), ["0"]);
    assert_eq!(texts(&db, "SELECT id FROM ps_untyped"), ["s"]);
    db.execute_batch("INSERT INTO items(id, name) VALUES ('l', 'local')").unwrap();
    assert_eq!(texts(&db, "SELECT id FROM ps_data_local__items"), ["l"]);
    // Local -> synced: local rows are dropped, synced rows come back.
    replace_schema(&db, synced).unwrap();
    assert_eq!(texts(&db, "SELECT id FROM items"), ["s"]);
    assert_eq!(texts(&db, "SELECT count(*) FROM sqlite_master WHERE name = 'ps_data_local__items'"), ["0"]);
}

#[test]
fn view_name_changes_keep_the_rows() {
    let db = oplite_initialised();
    replace_schema(&db, ITEMS).unwrap();
    db.execute_batch("INSERT INTO items(id, name) VALUES ('a', 'x')").unwrap();
    let renamed = ITEMS.replace(r#""name":"items","#, r#""name":"items","view_name":"things","#);
    replace_schema(&db, &renamed).unwrap();
    assert_eq!(texts(&db, "SELECT name FROM things"), ["x"]);
    assert_eq!(texts(&db, "SELECT count(*) FROM sqlite_master WHERE name = 'items'"), ["0"]);
    assert_eq!(texts(&db, "SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name"), ["ps_view_delete_things", "ps_view_insert_things", "ps_view_update_things"]);
}

#[test]
fn indexes_are_used_through_the_view() {
    let schema = r#"{"tables":[{"name":"items","columns":[{"name":"name","type":"text"},{"name":"n","type":"integer"}],
        "indexes":[{"name":"by_n","columns":[{"name":"n","ascending":false,"type":"integer"},{"name":"name","ascending":true,"type":"text"}]}]}]}"#;
    let db = oplite_initialised();
    replace_schema(&db, schema).unwrap();
    assert_eq!(
        texts(&db, "SELECT sql FROM sqlite_master WHERE name = 'ps_data__items__by_n'"),
        [r#"CREATE INDEX "ps_data__items__by_n" ON "ps_data__items"(CAST("n" AS INTEGER) DESC, CAST("name" AS TEXT))"#]
    );
    for query in ["SELECT * FROM items WHERE n = 5", "SELECT name FROM items WHERE n > 5 ORDER BY n DESC", "SELECT sum(n) FROM items WHERE n BETWEEN 1 AND 9"] {
        let plan: String = rows(&db, &format!("EXPLAIN QUERY PLAN {query}")).iter().map(|r| format!("{:?}", r[3])).collect();
        assert!(plan.contains("ps_data__items__by_n"), "{query}: {plan}");
        assert!(!plan.contains("TEMP B-TREE"), "{query}: {plan}");
    }
    // Changing the index recreates only the index.
    let version = schema_version(&db);
    let asc = schema.replace(r#""ascending":false"#, r#""ascending":true"#);
    replace_schema(&db, &asc).unwrap();
    assert!(schema_version(&db) > version);
    assert_eq!(texts(&db, "SELECT count(*) FROM sqlite_master WHERE sql LIKE '%CAST(\"n\" AS INTEGER), %'"), ["1"]);
}

#[test]
fn json_storage_option_and_conversions_both_ways() {
    let json = ITEMS.replace(r#""name":"items","#, r#""name":"items","oplite_json_storage":true,"#);
    let db = oplite_initialised();
    replace_schema(&db, ITEMS).unwrap();
    sync_rows(&db, &[("items", "a", Some(r#"{"name":"x","n":3,"more":[1]}"#))]);
    db.execute_batch("INSERT INTO items(id, name, n) VALUES ('b', 'local', 4)").unwrap();
    replace_schema(&db, &json).unwrap();
    assert_eq!(texts(&db, "SELECT name FROM pragma_table_info('ps_data__items')"), ["id", "data"]);
    assert_eq!(texts(&db, "SELECT data FROM ps_data__items WHERE id = 'a'"), [r#"{"name":"x","n":3,"more":[1]}"#]);
    assert_eq!(rows(&db, "SELECT id, name, n FROM items ORDER BY id").len(), 2);
    assert_eq!(texts(&db, "SELECT n FROM items ORDER BY id"), ["3", "4"]);
    // Writes through the JSON-layout view keep working.
    db.execute_batch("UPDATE items SET n = 5 WHERE id = 'a'").unwrap();
    assert_eq!(texts(&db, "SELECT data FROM ps_data__items WHERE id = 'a'"), [r#"{"name":"x","n":5}"#]);
    // And back to typed storage.
    replace_schema(&db, ITEMS).unwrap();
    assert_eq!(texts(&db, "SELECT name FROM pragma_table_info('ps_data__items')"), ["id", "name", "n", "ps_undeclared"]);
    assert_eq!(rows(&db, "SELECT id, name, n FROM items ORDER BY id"), vec![
        vec![text("a"), text("x"), Value::Integer(5)],
        vec![text("b"), text("local"), Value::Integer(4)],
    ]);
}

#[test]
fn tables_in_the_reference_layout_are_converted() {
    // The data table, view and triggers the reference core generates, as it
    // stores them, recreated in an oplite database (with the reference's
    // triggers still writing through powersync_crud).
    let reference = reference();
    init(&reference);
    replace_schema(&reference, ITEMS).unwrap();
    let objects = texts(&reference, "SELECT sql FROM sqlite_master WHERE tbl_name LIKE '%items' AND sql IS NOT NULL ORDER BY rowid");
    let db = oplite_initialised();
    for sql in &objects {
        db.execute_batch(sql).unwrap();
    }
    db.execute_batch("INSERT INTO items(id, name, n) VALUES ('a', 'through the reference view', 7)").unwrap();
    assert_eq!(crud(&db), [r#"{"op":"PUT","id":"a","type":"items","data":{"n":7,"name":"through the reference view"}}"#]);
    db.execute_batch(r#"INSERT INTO ps_data__items(id, data) VALUES ('b', '{"name":"synced","n":"8","x":1}')"#).unwrap();
    replace_schema(&db, ITEMS).unwrap();
    assert_eq!(
        rows(&db, "SELECT id, name, n FROM items ORDER BY id"),
        vec![vec![text("a"), text("through the reference view"), Value::Integer(7)], vec![text("b"), text("synced"), Value::Integer(8)]]
    );
    assert_eq!(texts(&db, "SELECT name FROM pragma_table_info('ps_data__items')"), ["id", "name", "n", "ps_undeclared"]);
    assert_eq!(texts(&db, "SELECT ps_undeclared FROM ps_data__items ORDER BY id"), ["NULL", r#"{"x":1}"#]);
}

#[test]
fn names_are_quoted_everywhere() {
    let schema = r#"{"tables":[{"name":"we\"ird'name","view_name":"v.w \"x\"","columns":[{"name":"c\"ol'x","type":"text"},{"name":"a.b[0]","type":"integer"}],
        "indexes":[{"name":"i\"x","columns":[{"name":"c\"ol'x","ascending":true}]}]}]}"#;
    let db = oplite_initialised();
    replace_schema(&db, schema).unwrap();
    db.execute_batch(r#"INSERT INTO "v.w ""x"""(id, "c""ol'x", "a.b[0]") VALUES ('1', 'it''s', 5)"#).unwrap();
    assert_eq!(crud(&db), [r#"{"op":"PUT","id":"1","type":"we\"ird'name","data":{"a.b[0]":5,"c\"ol'x":"it's"}}"#]);
    sync_rows(&db, &[("we\"ird'name", "2", Some(r#"{"c\"ol'x":"synced","a.b[0]":6,"a":{"b":[7]}}"#))]);
    assert_eq!(
        rows(&db, r#"SELECT * FROM "v.w ""x""" ORDER BY id"#),
        vec![vec![text("1"), text("it's"), Value::Integer(5)], vec![text("2"), text("synced"), Value::Integer(6)]]
    );
    replace_schema(&db, schema).unwrap();
}

#[test]
fn bad_input_is_refused_and_leaves_the_previous_schema() {
    let db = oplite_initialised();
    replace_schema(&db, ITEMS).unwrap();
    db.execute_batch("INSERT INTO items(id, name) VALUES ('a', 'x')").unwrap();
    db.execute_batch("CREATE TABLE app_table(x); CREATE VIEW app_view AS SELECT 1;").unwrap();
    let before = schema_dump(&db);
    let cases = [
        ("not json", "malformed schema: expected ident at line 1 column 2"),
        ("{}", "missing field `tables`"),
        (r#"{"tables":[{"name":"t","columns":[{"name":"a","type":"text; x"}]}]}"#, r#"column "a" of table "t" has type "text; x", which is not a SQLite type name"#),
        (r#"{"tables":[{"name":"t","columns":[]},{"name":"t","columns":[]}]}"#, r#"duplicate table name "t""#),
        (r#"{"tables":[{"name":"t","columns":[{"name":"a","type":"text"}],"indexes":[{"name":"i","columns":[{"name":"b"}]}]}]}"#, r#"index "i" of table "t" refers to column "b""#),
        (r#"{"tables":[{"name":"","columns":[]}]}"#, "empty name"),
        (r#"{"tables":[{"name":"t","columns":[{"name":"id","type":"text"}]}]}"#, "every table has an id column already"),
        (r#"{"tables":[{"name":"app_table","columns":[]}]}"#, r#"needs a view named "app_table", but the database has a table of that name"#),
        (r#"{"tables":[{"name":"t","view_name":"app_view","columns":[]}]}"#, "a view of that name that oplite did not create"),
        (r#"{"tables":[{"name":"x","view_name":"ps_crud","columns":[]}]}"#, r#"needs a view named "ps_crud""#),
    ];
    for (schema, message) in cases {
        let err = replace_schema(&db, schema).unwrap_err();
        assert!(err.contains(message), "{schema}: {err}");
        assert_eq!(schema_dump(&db), before, "{schema} changed the schema");
    }
    assert_eq!(texts(&db, "SELECT name FROM items"), ["x"]);
}

#[test]
fn replace_schema_needs_a_transaction_and_initialises() {
    let db = oplite_initialised();
    let err = db.query_row("SELECT powersync_replace_schema(?1)", [ITEMS], |_| Ok(())).unwrap_err();
    assert_eq!(error_code(&err), rusqlite::ffi::SQLITE_MISUSE);
    // As the reference core does, and the Node SDK relies on: a new
    // database gets the internal schema and a client id first.
    let fresh = oplite();
    replace_schema(&fresh, ITEMS).unwrap();
    assert_eq!(texts(&fresh, "SELECT count(*) FROM ps_kv WHERE key = 'client_id'"), ["1"]);
    assert_eq!(texts(&fresh, "SELECT count(*) FROM items"), ["0"]);
    // A schema that fails leaves the new database uninitialised.
    let other = oplite();
    other.execute_batch("CREATE TABLE items(x)").unwrap();
    assert!(replace_schema(&other, ITEMS).unwrap_err().contains("items"));
    assert_eq!(texts(&other, "SELECT count(*) FROM sqlite_master WHERE name = 'ps_kv'"), ["0"]);
}

#[test]
fn raw_tables_are_recorded() {
    let db = oplite_initialised();
    let schema = r#"{"tables":[],"raw_tables":[{"name":"things","table_name":"things",
        "put":{"sql":"INSERT OR REPLACE INTO things(id, a, rest) VALUES (?, ?, ?)","params":["Id",{"Column":"a"},"Rest"]},
        "delete":{"sql":"DELETE FROM things WHERE id = ?","params":["Id"]},"clear":"DELETE FROM things"}]}"#;
    replace_schema(&db, schema).unwrap();
    assert_eq!(texts(&db, "SELECT name FROM ps_oplite_raw_tables"), ["things"]);
    let version = schema_version(&db);
    replace_schema(&db, schema).unwrap();
    assert_eq!(schema_version(&db), version);
    replace_schema(&db, r#"{"tables":[]}"#).unwrap();
    assert_eq!(texts(&db, "SELECT count(*) FROM ps_oplite_raw_tables"), ["0"]);
}
