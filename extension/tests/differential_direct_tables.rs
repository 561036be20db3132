//! Direct tables (core 0.5.4's `"direct": true`), compared with the
//! reference core 0.5.4: the DDL apps and SDKs read from `sqlite_master`
//! and `pragma_table_list`, the upload triggers and the ps_crud entries of
//! every table option, indexes, the custom-view-name error, and
//! `powersync_clear`.

mod common;

use common::diff::Pair;
use common::schema::texts;
use rusqlite::Connection;
use serde_json::{json, Value};

/// Every object of the schema's tables in `sqlite_master`, sorted.
fn objects(db: &Connection, tables: &[&str]) -> Vec<String> {
    let list = tables.iter().map(|t| format!("'{t}'")).collect::<Vec<_>>().join(", ");
    texts(
        db,
        &format!(
            "SELECT type || ' ' || name || ' ON ' || tbl_name || ': ' || ifnull(sql, '') FROM sqlite_master
             WHERE tbl_name IN ({list}) OR name IN ({list}) ORDER BY type, name"
        ),
    )
}

/// Asserts two lists agree, showing only the entries that differ.
fn assert_same(ours: Vec<String>, theirs: Vec<String>) {
    let only_ours: Vec<&String> = ours.iter().filter(|o| !theirs.contains(o)).collect();
    let only_theirs: Vec<&String> = theirs.iter().filter(|t| !ours.contains(t)).collect();
    assert!(only_ours.is_empty() && only_theirs.is_empty(), "only oplite: {only_ours:#?}\nonly the reference: {only_theirs:#?}");
    assert_eq!(ours, theirs);
}

fn table_list(db: &Connection, tables: &[&str]) -> Vec<String> {
    let list = tables.iter().map(|t| format!("'{t}'")).collect::<Vec<_>>().join(", ");
    texts(
        db,
        &format!(
            "SELECT name || ' ' || type || ' ' || ncol || ' ' || strict FROM pragma_table_list WHERE name IN ({list}) ORDER BY name"
        ),
    )
}

fn crud_rows(db: &Connection) -> Vec<String> {
    texts(db, "SELECT id || ' ' || tx_id || ' ' || data FROM ps_crud ORDER BY id")
}

fn every_option() -> Value {
    json!({"tables": [
        {"name": "users", "direct": true, "columns": [{"name": "name", "type": "text"}, {"name": "age", "type": "integer"}],
         "indexes": [{"name": "ix", "columns": [{"name": "age", "ascending": false, "type": "integer"}, {"name": "name", "ascending": true, "type": "text"}]}]},
        {"name": "loc", "direct": true, "local_only": true, "columns": [{"name": "a", "type": "text"}],
         "indexes": [{"name": "li", "columns": [{"name": "a", "ascending": true, "type": "text"}]}]},
        {"name": "ins", "direct": true, "insert_only": true, "columns": [{"name": "a", "type": "text"}]},
        {"name": "old", "direct": true, "include_old": ["a"], "include_old_only_when_changed": true,
         "ignore_empty_update": true, "include_metadata": true,
         "columns": [{"name": "a", "type": "text"}, {"name": "b", "type": "text"}]},
        {"name": "all_old", "direct": true, "include_old": true, "columns": [{"name": "a", "type": "text"}, {"name": "we\"ird", "type": "real"}]},
        {"name": "bare", "direct": true, "columns": []},
        {"name": "json_table", "columns": [{"name": "a", "type": "text"}]}
    ]})
}

const TABLES: &[&str] = &["users", "loc", "ins", "old", "all_old", "bare", "json_table"];

#[test]
fn ddl_and_table_list_are_the_reference_text() {
    let mut pair = Pair::new();
    pair.replace_schema(&every_option());
    let direct: Vec<&str> = TABLES.iter().copied().filter(|t| *t != "json_table").collect();
    assert_same(objects(&pair.ours, &direct), objects(&pair.theirs, &direct));
    assert_eq!(table_list(&pair.ours, TABLES), table_list(&pair.theirs, TABLES));
    let kinds = table_list(&pair.ours, &["users", "loc", "json_table"]);
    assert_eq!(kinds, vec!["json_table view 2 0", "loc table 2 1", "users table 3 1"]);
    // No data table for a direct table.
    let data_tables = texts(&pair.ours, "SELECT name FROM sqlite_master WHERE name IN ('ps_data__users', 'ps_data_local__loc')");
    assert!(data_tables.is_empty(), "{data_tables:?}");
    // The same schema again changes nothing.
    let version = |db: &Connection| db.query_row("PRAGMA schema_version", [], |r| r.get::<_, i64>(0)).unwrap();
    let before = version(&pair.ours);
    pair.replace_schema(&every_option());
    assert_eq!(version(&pair.ours), before);
}

#[test]
fn local_writes_queue_the_reference_entries() {
    let mut pair = Pair::new();
    pair.replace_schema(&every_option());
    pair.execute(
        "BEGIN;
         INSERT INTO users(id, name, age) VALUES ('1', 'a', 3);
         UPDATE users SET age = 4 WHERE id = '1';
         UPDATE users SET age = 4 WHERE id = '1';
         INSERT INTO users(id, name, age) VALUES ('j', json('{\"x\":1}'), 2.5);
         DELETE FROM users WHERE id = '1';
         COMMIT;
         BEGIN;
         INSERT INTO old(id, a, b) VALUES ('2', 'x', 'y');
         UPDATE old SET b = 'z';
         UPDATE old SET a = 'q';
         UPDATE old SET a = 'q';
         DELETE FROM old;
         INSERT INTO all_old(id, a, \"we\"\"ird\") VALUES ('3', 'p', 1.5);
         UPDATE all_old SET a = 'r';
         DELETE FROM all_old;
         INSERT INTO bare(id) VALUES ('4');
         UPDATE bare SET id = id;
         DELETE FROM bare;
         COMMIT;
         INSERT INTO ins(id, a) VALUES ('5', 'k');
         INSERT INTO loc(id, a) VALUES ('6', 'l');
         UPDATE loc SET a = 'm';
         DELETE FROM loc;",
    );
    assert_eq!(crud_rows(&pair.ours), crud_rows(&pair.theirs));
    assert!(crud_rows(&pair.ours).len() >= 12);
    for table in TABLES {
        let sql = format!("SELECT * FROM \"{table}\" ORDER BY id");
        assert_eq!(common::schema::rows(&pair.ours, &sql), common::schema::rows(&pair.theirs, &sql), "{table}");
    }
    pair.assert_same_tables();
}

#[test]
fn rejected_writes_fail_alike_and_are_undone() {
    let mut pair = Pair::new();
    pair.replace_schema(&every_option());
    pair.execute("INSERT INTO ins(id, a) VALUES ('1', 'a'); INSERT INTO users(id, name) VALUES ('u', 'n');");
    for sql in [
        "UPDATE ins SET a = 'b'",
        "DELETE FROM ins",
        "UPDATE users SET id = 'v' WHERE id = 'u'",
        "INSERT INTO users(id, name) VALUES (NULL, 'x')",
        "INSERT INTO users(id, name) VALUES (5, 'x')",
        "INSERT INTO users(id, nope) VALUES ('x', 1)",
    ] {
        let ours = pair.ours.execute_batch(sql).map_err(|e| (common::error_code(&e), e.to_string()));
        let theirs = pair.theirs.execute_batch(sql).map_err(|e| (common::error_code(&e), e.to_string()));
        assert_eq!(ours, theirs, "{sql}");
        // A STRICT table converts an integer id to text.
        assert!(ours.is_err() || sql.contains("(5,"), "{sql}");
    }
    assert_eq!(crud_rows(&pair.ours), crud_rows(&pair.theirs));
    pair.assert_same_tables();
}

#[test]
fn a_custom_view_name_is_refused_with_the_reference_code() {
    let schema = r#"{"tables":[{"name":"x","view_name":"y","direct":true,"columns":[]}]}"#;
    let pair = Pair::new();
    let mut codes = Vec::new();
    for db in [&pair.ours, &pair.theirs] {
        db.execute_batch("BEGIN").unwrap();
        let err = db.query_row("SELECT powersync_replace_schema(?1)", [schema], |_| Ok(())).unwrap_err();
        assert!(err.to_string().contains("Direct tables can't have custom view names"), "{err}");
        codes.push(common::error_code(&err));
        db.execute_batch("ROLLBACK").unwrap();
        assert!(texts(db, "SELECT name FROM sqlite_master WHERE name IN ('x', 'y')").is_empty());
    }
    assert_eq!(codes[0], codes[1]);
    // A view name equal to null is no custom name.
    let mut pair = Pair::new();
    pair.replace_schema(&json!({"tables": [{"name": "x", "view_name": null, "direct": true, "columns": []}]}));
    assert_eq!(table_list(&pair.ours, &["x"]), table_list(&pair.theirs, &["x"]));
}

#[test]
fn changed_indexes_and_options_are_replaced_alike() {
    let mut pair = Pair::new();
    pair.replace_schema(&every_option());
    let mut changed = every_option();
    changed["tables"][0]["indexes"] = json!([{"name": "by_name", "columns": [{"name": "name", "ascending": true, "type": "text"}]}]);
    changed["tables"][0]["include_old"] = json!(true);
    changed["tables"][1]["indexes"] = json!([]);
    pair.replace_schema(&changed);
    let direct: Vec<&str> = TABLES.iter().copied().filter(|t| *t != "json_table").collect();
    assert_same(objects(&pair.ours, &direct), objects(&pair.theirs, &direct));
    pair.execute("INSERT INTO users(id, name) VALUES ('1', 'a'); UPDATE users SET name = 'b'; DELETE FROM users;");
    assert_eq!(crud_rows(&pair.ours), crud_rows(&pair.theirs));
}

#[test]
fn clear_empties_direct_tables_without_queueing() {
    for flags in [0, 1, 2, 3] {
        let mut pair = Pair::new();
        pair.replace_schema(&every_option());
        pair.execute(
            "INSERT INTO users(id, name) VALUES ('1', 'a'); INSERT INTO loc(id, a) VALUES ('2', 'b');
             INSERT INTO old(id, a) VALUES ('3', 'c');",
        );
        pair.execute(&format!("BEGIN; SELECT powersync_clear({flags}); COMMIT;"));
        assert_eq!(crud_rows(&pair.ours), crud_rows(&pair.theirs), "flags {flags}");
        assert!(crud_rows(&pair.ours).is_empty());
        for table in ["users", "loc", "old"] {
            let sql = format!("SELECT * FROM {table} ORDER BY id");
            assert_eq!(common::schema::rows(&pair.ours, &sql), common::schema::rows(&pair.theirs, &sql), "{table}, flags {flags}");
        }
    }
}
