//! Port of the reference core's `dart/test/crud_test.dart`: `powersync_diff`,
//! the upload queue written by views of regular, local-only and insert-only
//! tables (up to 1999 columns), the `powersync_crud` virtual table, old
//! values and metadata, raw-table crud triggers and transaction ids.
mod common;
mod upstream;

use rusqlite::Connection;
use serde_json::{json, Map, Value};
use upstream::{assert_fails_containing, exec, init, replace_schema, run, scalar, select, tx, Core};

fn diff(db: &Connection, old: &str, new: &str) -> Value {
    scalar(db, "SELECT powersync_diff(?, ?) AS diff", &[&old, &new])
}

fn diff_single_value(core: Core) {
    let db = core.open();
    for (old, new, want) in [
        ("{}", "{}", "{}"),
        ("{}", r#"{"test":1}"#, r#"{"test":1}"#),
        (r#"{"test":1}"#, r#"{"test":1}"#, "{}"),
        (r#"{"test":1}"#, "{}", r#"{"test":null}"#),
        (r#"{"test":1}"#, r#"{"test":null}"#, r#"{"test":null}"#),
        (r#"{"test":1}"#, r#"{"test":2}"#, r#"{"test":2}"#),
    ] {
        assert_eq!(diff(&db, old, new), want, "powersync_diff({old}, {new})");
    }
}

fn diff_multiple_values(core: Core) {
    let db = core.open();
    for (old, new, want) in [
        (r#"{"a":1,"b":"test"}"#, "{}", r#"{"a":null,"b":null}"#),
        ("{}", r#"{"a":1,"b":"test"}"#, r#"{"a":1,"b":"test"}"#),
        (r#"{"a":1,"b":"test"}"#, r#"{"a":1,"b":"test"}"#, "{}"),
        (r#"{"a":1}"#, r#"{"b":"test"}"#, r#"{"a":null,"b":"test"}"#),
        (r#"{"a":1}"#, r#"{"a":1,"b":"test"}"#, r#"{"b":"test"}"#),
    ] {
        assert_eq!(diff(&db, old, new), want, "powersync_diff({old}, {new})");
    }
}

/// The rows of `ps_crud` with `data` decoded.
fn crud_ops(db: &Connection) -> Vec<Value> {
    select(db, "SELECT * FROM ps_crud ORDER BY id", &[])
        .into_iter()
        .map(|mut row| {
            row["data"] = serde_json::from_str(row["data"].as_str().unwrap()).unwrap();
            row
        })
        .collect()
}

/// Installs `items` with `n` text columns `column0..` and the extra table
/// options, inserts one row whose values are the column names, and
/// returns that row's expected values.
fn items_with_columns(db: &Connection, n: usize, options: Value) -> Map<String, Value> {
    let columns: Vec<String> = (0..n).map(|i| format!("column{i}")).collect();
    let mut table = json!({"name": "items",
        "columns": columns.iter().map(|c| json!({"name": c, "type": "TEXT"})).collect::<Vec<_>>()});
    table.as_object_mut().unwrap().extend(options.as_object().unwrap().clone());
    init(db);
    replace_schema(db, &json!({"tables": [table]}));
    let values: Vec<String> = columns.iter().map(|c| format!("'{c}'")).collect();
    exec(db, &format!("INSERT INTO items(id, {}) VALUES ('test_id', {})", columns.join(", "), values.join(", ")), &[]);
    columns.iter().map(|c| (c.clone(), json!(c))).collect()
}

fn with_id(data: &Map<String, Value>) -> Value {
    let mut row = data.clone();
    row.insert("id".into(), json!("test_id"));
    Value::Object(row)
}

fn regular_table(core: Core, n: usize) {
    let db = core.open();
    let data = items_with_columns(&db, n, json!({}));
    assert_eq!(select(&db, "SELECT * FROM items", &[]), vec![with_id(&data)]);
    let ops = crud_ops(&db);
    assert_eq!(ops[0]["tx_id"], 1);
    assert_eq!(ops[0]["data"], json!({"op": "PUT", "type": "items", "id": "test_id", "data": data}));

    exec(&db, "UPDATE items SET column0 = ?", &[&"new_value"]);
    let mut updated = data.clone();
    updated.insert("column0".into(), json!("new_value"));
    assert_eq!(select(&db, "SELECT * FROM items", &[]), vec![with_id(&updated)]);
    let ops = crud_ops(&db);
    assert_eq!((&ops[1]["id"], &ops[1]["tx_id"]), (&json!(2), &json!(2)));
    assert_eq!(
        ops[1]["data"],
        json!({"op": "PATCH", "type": "items", "id": "test_id", "data": {"column0": "new_value"}})
    );

    exec(&db, "DELETE FROM items", &[]);
    assert!(select(&db, "SELECT * FROM items", &[]).is_empty());
    let ops = crud_ops(&db);
    assert_eq!((&ops[2]["id"], &ops[2]["tx_id"]), (&json!(3), &json!(3)));
    assert_eq!(ops[2]["data"], json!({"op": "DELETE", "type": "items", "id": "test_id"}));
}

fn local_only_table(core: Core, n: usize) {
    let db = core.open();
    let data = items_with_columns(&db, n, json!({"local_only": true}));
    assert_eq!(select(&db, "SELECT * FROM items", &[]), vec![with_id(&data)]);
    exec(&db, "UPDATE items SET column0 = ?", &[&"new_value"]);
    let mut updated = data.clone();
    updated.insert("column0".into(), json!("new_value"));
    assert_eq!(select(&db, "SELECT * FROM items", &[]), vec![with_id(&updated)]);
    exec(&db, "DELETE FROM items", &[]);
    assert!(select(&db, "SELECT * FROM items", &[]).is_empty());
}

fn insert_only_table(core: Core, n: usize) {
    let db = core.open();
    let data = items_with_columns(&db, n, json!({"insert_only": true}));
    assert!(select(&db, "SELECT * FROM items", &[]).is_empty());
    let ops = crud_ops(&db);
    assert_eq!(ops[0]["tx_id"], 1);
    assert_eq!(ops[0]["data"], json!({"op": "PUT", "type": "items", "id": "test_id", "data": data}));
}

/// Three tests (regular, local-only, insert-only) per column count.
macro_rules! by_column_count {
    ($($n:literal => $regular:ident, $local:ident, $insert:ident $(, oplite: #[$attr:meta])?;)*) => {
        $(
            fn $regular(core: Core) { regular_table(core, $n) }
            fn $local(core: Core) { local_only_table(core, $n) }
            fn $insert(core: Core) { insert_only_table(core, $n) }
            per_core! {
                $regular $(, oplite: #[$attr])?;
                $local $(, oplite: #[$attr])?;
                $insert $(, oplite: #[$attr])?;
            }
        )*
    };
}

by_column_count! {
    1 => columns_1, columns_1_local_only, columns_1_insert_only;
    49 => columns_49, columns_49_local_only, columns_49_insert_only;
    50 => columns_50, columns_50_local_only, columns_50_insert_only;
    51 => columns_51, columns_51_local_only, columns_51_insert_only;
    63 => columns_63, columns_63_local_only, columns_63_insert_only;
    64 => columns_64, columns_64_local_only, columns_64_insert_only;
    100 => columns_100, columns_100_local_only, columns_100_insert_only;
    1999 => columns_1999, columns_1999_local_only, columns_1999_insert_only;
}

const VTAB_INSERT: &str = "INSERT INTO powersync_crud (op, id, type, data) VALUES (?, ?, ?, ?)";
const VTAB_DELETE: &str = "INSERT INTO powersync_crud (op, id, type) VALUES (?, ?, ?)";

fn initialised(core: Core) -> Connection {
    let db = core.open();
    init(&db);
    db
}

fn vtab_can_insert(core: Core) {
    let db = initialised(core);
    exec(&db, VTAB_INSERT, &[&"PUT", &"foo", &"users", &r#"{"my":"value"}"#]);
    assert_eq!(
        select(&db, "SELECT * FROM ps_crud", &[]),
        vec![json!({"id": 1, "tx_id": 1, "data": r#"{"op":"PUT","id":"foo","type":"users","data":{"my":"value"}}"#})]
    );
}

fn vtab_updates_target_and_updated_rows(core: Core) {
    let db = initialised(core);
    exec(
        &db,
        "INSERT INTO ps_kv(key, value) VALUES ('last_seen_checkpoint_request_id', 6), ('last_applied_checkpoint_request_id', 5)",
        &[],
    );
    exec(&db, VTAB_INSERT, &[&"PUT", &"foo", &"users", &r#"{"my":"value"}"#]);
    assert_eq!(select(&db, "SELECT * FROM ps_updated_rows", &[]), vec![json!({"row_type": "users", "row_id": "foo"})]);
    assert!(select(&db, "SELECT * FROM ps_buckets WHERE name = '$local'", &[]).is_empty());
    assert_eq!(
        select(&db, "SELECT key, value FROM ps_kv WHERE key LIKE '%checkpoint_request_id'", &[]),
        vec![json!({"key": "target_checkpoint_request_id", "value": i64::MAX})]
    );
}

fn vtab_does_not_require_data(core: Core) {
    let db = initialised(core);
    exec(&db, VTAB_DELETE, &[&"DELETE", &"foo", &"users"]);
    assert_eq!(
        select(&db, "SELECT * FROM ps_crud", &[]),
        vec![json!({"id": 1, "tx_id": 1, "data": r#"{"op":"DELETE","id":"foo","type":"users"}"#})]
    );
}

fn vtab_can_insert_metadata(core: Core) {
    let db = initialised(core);
    exec(
        &db,
        "INSERT INTO powersync_crud (op, id, type, metadata) VALUES (?, ?, ?, ?)",
        &[&"DELETE", &"foo", &"users", &"my metadata"],
    );
    assert_eq!(
        select(&db, "SELECT * FROM ps_crud", &[]),
        vec![json!({"id": 1, "tx_id": 1, "data": r#"{"op":"DELETE","id":"foo","type":"users","metadata":"my metadata"}"#})]
    );
}

fn vtab_can_insert_old_data(core: Core) {
    let db = initialised(core);
    exec(
        &db,
        "INSERT INTO powersync_crud (op, id, type, data, old_values) VALUES (?, ?, ?, ?, ?)",
        &[&"PUT", &"foo", &"users", &r#"{"my":"value"}"#, &r#"{"previous":"value"}"#],
    );
    assert_eq!(
        select(&db, "SELECT * FROM ps_crud", &[]),
        vec![json!({"id": 1, "tx_id": 1,
            "data": r#"{"op":"PUT","id":"foo","type":"users","data":{"my":"value"},"old":{"previous":"value"}}"#})]
    );
}

fn vtab_resets_after_commit(core: Core) {
    let db = initialised(core);
    exec(&db, "BEGIN", &[]);
    exec(&db, VTAB_DELETE, &[&"DELETE", &"foo", &"users"]);
    exec(&db, "COMMIT", &[]);
    exec(&db, VTAB_DELETE, &[&"DELETE", &"foo", &"users"]);
    let tx_ids: Vec<Value> = select(&db, "SELECT * FROM ps_crud", &[]).iter().map(|r| r["tx_id"].clone()).collect();
    assert_eq!(tx_ids, vec![json!(1), json!(2)]);
}

fn vtab_resets_after_rollback(core: Core) {
    let db = initialised(core);
    exec(&db, "BEGIN", &[]);
    exec(&db, VTAB_DELETE, &[&"DELETE", &"foo", &"users"]);
    exec(&db, "ROLLBACK", &[]);
    exec(&db, VTAB_DELETE, &[&"DELETE", &"foo2", &"users"]);
    assert_eq!(
        select(&db, "SELECT * FROM ps_crud", &[]),
        vec![json!({"id": 1, "tx_id": 1, "data": r#"{"op":"DELETE","id":"foo2","type":"users"}"#})]
    );
}

per_core! {
    diff_single_value;
    diff_multiple_values;
    vtab_can_insert;
    vtab_updates_target_and_updated_rows;
    vtab_does_not_require_data;
    vtab_can_insert_metadata;
    vtab_can_insert_old_data;
    vtab_resets_after_commit;
    vtab_resets_after_rollback;
}

/// `test(name, name2)` with the given table options, after init.
fn test_table(db: &Connection, options: Value, columns: &[&str]) {
    let mut table = json!({"name": "test",
        "columns": columns.iter().map(|c| json!({"name": c, "type": "text"})).collect::<Vec<_>>()});
    table.as_object_mut().unwrap().extend(options.as_object().unwrap().clone());
    init(db);
    replace_schema(db, &json!({"tables": [table]}));
}

/// The single queued operation after inserting a row into `test` and then
/// updating (or deleting) it.
fn old_values_op(core: Core, options: Value, delete: bool) -> Value {
    let db = core.open();
    test_table(&db, options, &["name", "name2"]);
    exec(&db, "INSERT INTO test (id, name, name2) VALUES (?, ?, ?)", &[&"id", &"name", &"name2"]);
    exec(&db, "DELETE FROM ps_crud", &[]);
    if delete {
        exec(&db, "DELETE FROM test", &[]);
    } else {
        exec(&db, "UPDATE test SET name = name || ?", &[&"."]);
    }
    let ops = crud_ops(&db);
    assert_eq!(ops.len(), 1);
    ops[0]["data"].clone()
}

fn old_update_not_tracked_by_default(core: Core) {
    assert!(old_values_op(core, json!({}), false).get("old").is_none());
}

fn old_update_can_be_disabled(core: Core) {
    assert!(old_values_op(core, json!({"include_old": false}), false).get("old").is_none());
}

fn old_update_all_columns(core: Core) {
    let op = old_values_op(core, json!({"include_old": true}), false);
    assert_eq!((&op["data"], &op["old"]), (&json!({"name": "name."}), &json!({"name": "name", "name2": "name2"})));
}

fn old_update_some_columns(core: Core) {
    let op = old_values_op(core, json!({"include_old": ["name"]}), false);
    assert_eq!((&op["data"], &op["old"]), (&json!({"name": "name."}), &json!({"name": "name"})));
}

fn old_update_changed_only(core: Core) {
    let op = old_values_op(core, json!({"include_old": true, "include_old_only_when_changed": true}), false);
    assert_eq!((&op["data"], &op["old"]), (&json!({"name": "name."}), &json!({"name": "name"})));
}

fn old_update_filter_and_changed_only(core: Core) {
    let op = old_values_op(core, json!({"include_old": ["name2"], "include_old_only_when_changed": true}), false);
    assert_eq!((&op["data"], &op["old"]), (&json!({"name": "name."}), &json!({})));
}

fn old_delete_not_tracked_by_default(core: Core) {
    assert!(old_values_op(core, json!({}), true).get("old").is_none());
}

fn old_delete_can_be_disabled(core: Core) {
    assert!(old_values_op(core, json!({"include_old": false}), true).get("old").is_none());
}

fn old_delete_all_columns(core: Core) {
    let op = old_values_op(core, json!({"include_old": true}), true);
    assert_eq!(op.get("data"), None);
    assert_eq!(op["old"], json!({"name": "name", "name2": "name2"}));
}

fn old_delete_some_columns(core: Core) {
    let op = old_values_op(core, json!({"include_old": ["name"]}), true);
    assert_eq!(op.get("data"), None);
    assert_eq!(op["old"], json!({"name": "name"}));
}

per_core! {
    old_update_not_tracked_by_default;
    old_update_can_be_disabled;
    old_update_all_columns;
    old_update_some_columns;
    old_update_changed_only;
    old_update_filter_and_changed_only;
    old_delete_not_tracked_by_default;
    old_delete_can_be_disabled;
    old_delete_all_columns;
    old_delete_some_columns;
}

const INSERT_WITH_METADATA: &str = "INSERT INTO test (id, name, _metadata) VALUES (?, ?, ?)";

fn metadata_table(core: Core, options: Value) -> Connection {
    let db = core.open();
    test_table(&db, options, &["name"]);
    db
}

fn metadata_disabled_by_default(core: Core) {
    let db = metadata_table(core, json!({}));
    assert!(run(&db, INSERT_WITH_METADATA, &[&"id", &"name", &"test insert"]).is_err());
}

fn metadata_can_be_disabled(core: Core) {
    let db = metadata_table(core, json!({"include_metadata": false}));
    assert!(run(&db, INSERT_WITH_METADATA, &[&"id", &"name", &"test insert"]).is_err());
}

fn metadata_inserted(db: &Connection) {
    exec(db, INSERT_WITH_METADATA, &[&"id", &"name", &"test insert"]);
}

fn metadata_on_insert(core: Core) {
    let db = metadata_table(core, json!({"include_metadata": true}));
    metadata_inserted(&db);
    let op = &crud_ops(&db)[0]["data"];
    assert_eq!((&op["data"], &op["metadata"]), (&json!({"name": "name"}), &json!("test insert")));
}

fn metadata_on_update(core: Core) {
    let db = metadata_table(core, json!({"include_metadata": true}));
    metadata_inserted(&db);
    exec(&db, "DELETE FROM ps_crud", &[]);
    exec(&db, "UPDATE test SET name = name || ?, _metadata = ?", &[&".", &"update"]);
    let ops = crud_ops(&db);
    assert_eq!(ops.len(), 1);
    assert_eq!((&ops[0]["data"]["data"], &ops[0]["data"]["metadata"]), (&json!({"name": "name."}), &json!("update")));
}

fn metadata_regular_delete(core: Core) {
    let db = metadata_table(core, json!({"include_metadata": true}));
    metadata_inserted(&db);
    exec(&db, "DELETE FROM ps_crud", &[]);
    exec(&db, "DELETE FROM test", &[]);
    let ops = crud_ops(&db);
    assert_eq!(ops.len(), 1);
    assert_eq!(ops[0]["data"]["op"], "DELETE");
    assert_eq!(ops[0]["data"].get("metadata"), None);
}

fn metadata_delete_through_update(core: Core) {
    let db = metadata_table(core, json!({"include_metadata": true}));
    metadata_inserted(&db);
    exec(&db, "DELETE FROM ps_crud", &[]);
    exec(&db, "UPDATE test SET _deleted = TRUE, _metadata = ?", &[&"custom delete"]);
    assert!(select(&db, "SELECT * FROM test", &[]).is_empty());
    let ops = crud_ops(&db);
    assert_eq!(ops.len(), 1);
    assert_eq!((&ops[0]["data"]["op"], &ops[0]["data"]["metadata"]), (&json!("DELETE"), &json!("custom delete")));
}

per_core! {
    metadata_disabled_by_default;
    metadata_can_be_disabled;
    metadata_on_insert;
    metadata_on_update;
    metadata_regular_delete;
    metadata_delete_through_update;
}

fn items(options: Value, column_type: &str) -> Value {
    let mut table = json!({"name": "items", "columns": [{"name": "col", "type": column_type}]});
    table.as_object_mut().unwrap().extend(options.as_object().unwrap().clone());
    json!({"tables": [table]})
}

fn includes_empty_updates_by_default(core: Core) {
    let db = core.open();
    replace_schema(&db, &items(json!({}), "text"));
    exec(&db, "INSERT INTO items (id, col) VALUES (uuid(), ?)", &[&"new item"]);
    exec(&db, "UPDATE items SET col = LOWER(col)", &[]);
    assert_eq!(select(&db, "SELECT * FROM ps_crud", &[]).len(), 2);
}

fn can_ignore_empty_updates(core: Core) {
    let db = core.open();
    replace_schema(&db, &items(json!({"ignore_empty_update": true}), "text"));
    exec(&db, "INSERT INTO items (id, col) VALUES (uuid(), ?)", &[&"new item"]);
    exec(&db, "UPDATE items SET col = LOWER(col)", &[]);
    assert_eq!(select(&db, "SELECT * FROM ps_crud", &[]).len(), 1);
}

fn preserves_text_values(core: Core) {
    let db = core.open();
    replace_schema(&db, &items(json!({}), "text"));
    exec(&db, "INSERT INTO items (id, col) VALUES (uuid(), json_object())", &[]);
    assert_eq!(crud_ops(&db)[0]["data"]["data"], json!({"col": "{}"}));
    exec(&db, "DELETE FROM ps_crud", &[]);
    exec(&db, "UPDATE items SET col = NULL", &[]);
    assert_eq!(crud_ops(&db)[0]["data"]["data"], json!({"col": null}));
}

fn preserves_mismatched_type(core: Core) {
    let db = core.open();
    replace_schema(&db, &items(json!({}), "int"));
    exec(&db, "INSERT INTO items (id, col) VALUES (uuid(), json_object())", &[]);
    exec(&db, "INSERT INTO items (id, col) VALUES (uuid(), null)", &[]);
    exec(&db, "INSERT INTO items (id, col) VALUES (uuid(), ?)", &[&"not an integer"]);
    let data: Vec<Value> = crud_ops(&db).iter().map(|op| op["data"]["data"].clone()).collect();
    assert_eq!(data, vec![json!({"col": "{}"}), json!({}), json!({"col": "not an integer"})]);
}

fn insert_only_smoke(core: Core) {
    let db = core.open();
    replace_schema(&db, &items(json!({"insert_only": true}), "int"));
    exec(&db, "INSERT INTO items (id, col) VALUES (uuid(), 1)", &[]);
    assert_eq!(select(&db, "SELECT * FROM ps_crud", &[]).len(), 1);
    assert!(select(&db, "SELECT * FROM ps_buckets", &[]).is_empty(), "no $local bucket");
    assert!(run(&db, "UPDATE items SET col = col + 1", &[]).is_err());
    assert!(run(&db, "DELETE FROM items WHERE col = 1", &[]).is_err());
}

fn insert_only_ignored_for_local_only(core: Core) {
    let db = core.open();
    replace_schema(&db, &items(json!({"insert_only": true, "local_only": true}), "int"));
    exec(&db, "INSERT INTO items (id, col) VALUES (uuid(), 1)", &[]);
    assert_eq!(select(&db, "SELECT * FROM items", &[]).len(), 1);
    exec(&db, "UPDATE items SET col = col + 1", &[]);
    exec(&db, "DELETE FROM items WHERE col = 2", &[]);
    assert!(select(&db, "SELECT * FROM items", &[]).is_empty());
    assert!(select(&db, "SELECT * FROM ps_crud", &[]).is_empty());
}

per_core! {
    includes_empty_updates_by_default;
    can_ignore_empty_updates;
    preserves_text_values;
    preserves_mismatched_type;
    insert_only_smoke;
    insert_only_ignored_for_local_only;
}

fn raw_table(options: Value) -> Value {
    let mut table = json!({"name": "row_type", "put": {"sql": "", "params": []}, "delete": {"sql": "", "params": []}});
    table.as_object_mut().unwrap().extend(options.as_object().unwrap().clone());
    table
}

/// Initialises `db` and creates the raw table's three crud triggers.
fn raw_triggers(db: &Connection, table: &Value) -> rusqlite::Result<()> {
    upstream::execute_in_tx(db, "SELECT powersync_init()", &[])?;
    for (name, write) in [("test_trigger_insert", "INSERT"), ("test_trigger_update", "UPDATE"), ("test_trigger_delete", "DELETE")] {
        run(db, "SELECT powersync_create_raw_table_crud_trigger(?, ?, ?)", &[&table.to_string(), &name, &write])?;
    }
    Ok(())
}

fn raw_missing_id_column(core: Core) {
    let db = core.open();
    exec(&db, "CREATE TABLE users (name TEXT)", &[]);
    assert_fails_containing(raw_triggers(&db, &raw_table(json!({"table_name": "users"}))), 3091, "Table users has no id column");
}

fn raw_missing_local_name(core: Core) {
    let db = core.open();
    exec(&db, "CREATE TABLE users (name TEXT)", &[]);
    assert_fails_containing(raw_triggers(&db, &raw_table(json!({}))), 3091, "Raw table row_type has no local name");
}

fn raw_missing_local_table(core: Core) {
    let db = core.open();
    assert_fails_containing(
        raw_triggers(&db, &raw_table(json!({"table_name": "users"}))),
        3091,
        "Could not find users in local schema",
    );
}

fn raw_default_options(core: Core) {
    let db = core.open();
    exec(&db, "CREATE TABLE users (id TEXT, name TEXT) STRICT", &[]);
    raw_triggers(&db, &raw_table(json!({"table_name": "users"}))).unwrap();
    exec(&db, "INSERT INTO users (id, name) VALUES (?, ?)", &[&"id", &"name"]);
    exec(&db, "UPDATE users SET name = ?", &[&"new name"]);
    exec(&db, "DELETE FROM users WHERE id = ?", &[&"id"]);
    assert_eq!(
        select(&db, "SELECT * FROM ps_crud", &[]),
        vec![
            json!({"id": 1, "tx_id": 1, "data": r#"{"op":"PUT","id":"id","type":"row_type","data":{"name":"name"}}"#}),
            json!({"id": 2, "tx_id": 2, "data": r#"{"op":"PATCH","id":"id","type":"row_type","data":{"name":"new name"}}"#}),
            json!({"id": 3, "tx_id": 3, "data": r#"{"op":"DELETE","id":"id","type":"row_type"}"#}),
        ]
    );
}

fn raw_insert_only(core: Core) {
    let db = core.open();
    exec(&db, "CREATE TABLE users (id TEXT, name TEXT) STRICT", &[]);
    raw_triggers(&db, &raw_table(json!({"table_name": "users", "insert_only": true}))).unwrap();
    exec(&db, "INSERT INTO users (id, name) VALUES (?, ?)", &[&"id", &"name"]);
    assert_eq!(select(&db, "SELECT * FROM ps_crud", &[]).len(), 1);
    assert!(select(&db, "SELECT * FROM ps_buckets", &[]).is_empty());
    let refused = "Unexpected update on insert-only table";
    assert_fails_containing(run(&db, "UPDATE users SET name = ?", &[&"new name"]), 1811, refused);
    assert_fails_containing(run(&db, "DELETE FROM users WHERE id = ?", &[&"id"]), 1811, refused);
}

fn raw_tracking_old_values(core: Core) {
    let db = core.open();
    exec(&db, "CREATE TABLE users (id TEXT, name TEXT, email TEXT) STRICT", &[]);
    raw_triggers(
        &db,
        &raw_table(json!({"table_name": "users", "include_old": ["name"], "include_old_only_when_changed": true})),
    )
    .unwrap();
    exec(&db, "INSERT INTO users (id, name, email) VALUES (?, ?, ?)", &[&"id", &"name", &"test@example.org"]);
    exec(&db, "UPDATE users SET name = ?, email = ?", &[&"new name", &"newmail@example.org"]);
    exec(&db, "DELETE FROM users WHERE id = ?", &[&"id"]);
    assert_eq!(
        select(&db, "SELECT id, data->>'$.op' AS op, data->>'$.old' AS old FROM ps_crud", &[]),
        vec![
            json!({"id": 1, "op": "PUT", "old": null}),
            json!({"id": 2, "op": "PATCH", "old": r#"{"name":"name"}"#}),
            json!({"id": 3, "op": "DELETE", "old": r#"{"name":"new name"}"#}),
        ]
    );
}

fn raw_skipping_empty_updates(core: Core) {
    let db = core.open();
    exec(&db, "CREATE TABLE users (id TEXT, name TEXT) STRICT", &[]);
    raw_triggers(&db, &raw_table(json!({"table_name": "users", "ignore_empty_update": true}))).unwrap();
    exec(&db, "INSERT INTO users (id, name) VALUES (?, ?)", &[&"id", &"name"]);
    assert_eq!(select(&db, "SELECT * FROM ps_crud", &[]).len(), 1);
    exec(&db, "UPDATE users SET name = ?", &[&"name"]);
    assert_eq!(select(&db, "SELECT * FROM ps_crud", &[]).len(), 1);
}

fn raw_clear_queues_nothing(core: Core) {
    let db = core.open();
    exec(&db, "CREATE TABLE users (id TEXT, name TEXT) STRICT", &[]);
    exec(&db, "INSERT INTO users (id, name) VALUES (uuid(), ?)", &[&"test user"]);
    raw_triggers(&db, &raw_table(json!({"table_name": "users", "ignore_empty_update": true}))).unwrap();
    replace_schema(&db, &json!({"tables": [], "raw_tables": [raw_table(json!({"clear": "DELETE FROM users"}))]}));
    tx(&db, "SELECT powersync_clear(2)", &[]);
    assert!(select(&db, "SELECT * FROM ps_crud", &[]).is_empty());
}

per_core! {
    raw_missing_id_column;
    raw_missing_local_name;
    raw_missing_local_table;
    raw_default_options;
    raw_insert_only;
    raw_tracking_old_values;
    raw_skipping_empty_updates;
    raw_clear_queues_nothing;
}

fn tx_tables(core: Core) -> Connection {
    let db = core.open();
    replace_schema(
        &db,
        &json!({"tables": [
            {"name": "regular", "columns": [{"name": "a", "type": "integer"}]},
            {"name": "insertonly", "insert_only": true, "columns": [{"name": "a", "type": "integer"}]},
        ]}),
    );
    db
}

fn queued_in_tx(db: &Connection, tx_id: i64) -> usize {
    select(db, "SELECT * FROM ps_crud WHERE tx_id = ?", &[&tx_id]).len()
}

/// Transactions 1..9 each write `2 * tx` rows, through `tables` in turn.
fn transaction_ids(core: Core, tables: [&str; 2]) {
    let db = tx_tables(core);
    for tx_id in 1..10i64 {
        exec(&db, "BEGIN", &[]);
        for i in 0..tx_id * 2 {
            let table = tables[(i % 2) as usize];
            exec(&db, &format!("INSERT INTO {table} (id, a) VALUES (uuid(), 1234)"), &[]);
        }
        exec(&db, "COMMIT", &[]);
        assert_eq!(queued_in_tx(&db, tx_id), (tx_id * 2) as usize, "transaction {tx_id}");
    }
}

fn tx_ids_regular(core: Core) {
    transaction_ids(core, ["regular", "regular"]);
}

fn tx_ids_insert_only(core: Core) {
    transaction_ids(core, ["insertonly", "insertonly"]);
}

fn tx_ids_regular_then_insert_only(core: Core) {
    transaction_ids(core, ["regular", "insertonly"]);
}

fn tx_ids_insert_only_then_regular(core: Core) {
    transaction_ids(core, ["insertonly", "regular"]);
}

per_core! {
    tx_ids_regular;
    tx_ids_insert_only;
    tx_ids_regular_then_insert_only;
    tx_ids_insert_only_then_regular;
}
