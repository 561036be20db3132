//! Port of the raw-table tests of the reference core's
//! `dart/test/sync_test.dart` (JSON and BSON lines): synced rows put and
//! deleted through the app's own statements, inferred schemas, statement
//! errors, the rest column, the CRUD virtual table, clearing, foreign keys.
mod common;
mod upstream;

use serde_json::{json, Value};
use upstream::sync::{bucket, checkpoint_complete, Session};
use upstream::{exec, select, tx, Core};

const RAW_USERS_SQL: &str = "
CREATE TABLE users (id TEXT NOT NULL PRIMARY KEY, name TEXT NOT NULL) STRICT;
CREATE TRIGGER users_insert AFTER INSERT ON users FOR EACH ROW BEGIN
  INSERT INTO powersync_crud (op, id, type, data) VALUES ('PUT', NEW.id, 'users', json_object('name', NEW.name));
END;
CREATE TRIGGER users_update AFTER UPDATE ON users FOR EACH ROW BEGIN
  SELECT CASE WHEN (OLD.id != NEW.id) THEN RAISE (FAIL, 'Cannot update id') END;
  INSERT INTO powersync_crud (op, id, type, data) VALUES ('PATCH', NEW.id, 'users', json_object('name', NEW.name));
END;
CREATE TRIGGER users_delete AFTER DELETE ON users FOR EACH ROW BEGIN
  INSERT INTO powersync_crud (op, id, type) VALUES ('DELETE', OLD.id, 'users');
END;";

fn raw_users_table() -> Value {
    json!({"name": "users",
        "put": {"sql": "INSERT OR REPLACE INTO users (id, name) VALUES (?, ?);", "params": ["Id", {"Column": "name"}]},
        "delete": {"sql": "DELETE FROM users WHERE id = ?", "params": ["Id"]},
        "clear": "DELETE FROM users;"})
}

fn raw_schema(raw_tables: Vec<Value>) -> Value {
    json!({"raw_tables": raw_tables, "tables": []})
}

/// `users` with its crud triggers, and a start with the raw-table schema.
fn raw_users_session(core: Core, bson: bool) -> Session {
    let mut s = Session::new(core, bson);
    s.db.execute_batch(RAW_USERS_SQL).unwrap();
    s.control_json("start", &json!({"schema": raw_schema(vec![raw_users_table()])}));
    s
}

/// One operation on an object of `object_type` in bucket `a`, in a
/// checkpoint of its own, completed.
fn sync_one(s: &mut Session, op_id: &str, object_type: &str, id: &str, op: &str, data: Value) {
    s.push_checkpoint(1, vec![bucket("a", 3)]);
    s.line(&upstream::sync::data_line("a", op_id, id, op, data, 0, object_type));
    s.push_checkpoint_complete(None);
}

fn raw_smoke(core: Core, bson: bool) {
    let mut s = raw_users_session(core, bson);
    sync_one(&mut s, "1", "users", "my_user", "PUT", json!({"name": "First user"}));
    assert_eq!(select(&s.db, "SELECT * FROM users", &[]), vec![json!({"id": "my_user", "name": "First user"})]);
    sync_one(&mut s, "1", "users", "my_user", "REMOVE", Value::Null);
    assert!(select(&s.db, "SELECT * FROM users", &[]).is_empty());
}

fn raw_inferred_schema_smoke(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    exec(&s.db, "CREATE TABLE local_users (id TEXT NOT NULL PRIMARY KEY, name TEXT NOT NULL, local TEXT) STRICT", &[]);
    let table = json!({"name": "users", "table_name": "local_users", "synced_columns": ["name", "email"], "insert_only": true});
    s.control_json("start", &json!({"schema": raw_schema(vec![table])}));
    sync_one(&mut s, "1", "users", "my_user", "PUT", json!({"name": "First user", "local": "ignored because the column is local-only"}));
    assert_eq!(
        select(&s.db, "SELECT * FROM local_users", &[]),
        vec![json!({"id": "my_user", "name": "First user", "local": null})]
    );
    exec(&s.db, "ALTER TABLE local_users ADD COLUMN email TEXT", &[]);
    sync_one(
        &mut s,
        "2",
        "users",
        "my_user",
        "PUT",
        json!({"name": "First user", "email": "email@example.org", "local": "still ignored"}),
    );
    assert_eq!(
        select(&s.db, "SELECT * FROM local_users", &[]),
        vec![json!({"id": "my_user", "name": "First user", "email": "email@example.org", "local": null})]
    );
}

fn raw_inferred_schema_with_changes(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    exec(&s.db, "CREATE TABLE local_users (id TEXT NOT NULL PRIMARY KEY, name TEXT NOT NULL) STRICT", &[]);
    let table = json!({"name": "users", "table_name": "local_users", "insert_only": true});
    exec(
        &s.db,
        "SELECT powersync_create_raw_table_crud_trigger(?1, 'test_insert', 'INSERT'),
                powersync_create_raw_table_crud_trigger(?1, 'test_update', 'UPDATE'),
                powersync_create_raw_table_crud_trigger(?1, 'test_delete', 'DELETE')",
        &[&table.to_string()],
    );
    s.control_json("start", &json!({"schema": raw_schema(vec![table])}));
    sync_one(&mut s, "1", "users", "my_user", "PUT", json!({"name": "First user"}));
    assert_eq!(select(&s.db, "SELECT * FROM local_users", &[]), vec![json!({"id": "my_user", "name": "First user"})]);
    sync_one(&mut s, "1", "users", "my_user", "REMOVE", Value::Null);
    assert!(select(&s.db, "SELECT * FROM local_users", &[]).is_empty());
}

fn raw_reports_statement_errors(core: Core, bson: bool) {
    let mut s = raw_users_session(core, bson);
    s.push_checkpoint(1, vec![bucket("a", 3)]);
    s.line(&upstream::sync::data_line("a", "1", "my_user", "PUT", json!({}), 0, "users"));
    let (op, payload) = s.encode(&checkpoint_complete(None, "1"));
    upstream::assert_sqlite_error(
        s.try_control_raw(op, payload),
        1299,
        "powersync_control: statement INSERT OR REPLACE INTO users (id, name) VALUES (?, ?);: \
         internal SQLite call returned CONSTRAINT_NOTNULL: NOT NULL constraint failed: users.name \
         (context: replacing into users, id = my_user, data = {})",
    );
}

fn raw_rest_column(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    exec(&s.db, "CREATE TABLE users (id TEXT NOT NULL, name TEXT, _rest TEXT)", &[]);
    let table = json!({"name": "users",
        "put": {"sql": "INSERT OR REPLACE INTO users (id, name, _rest) VALUES (?, ?, ?);", "params": ["Id", {"Column": "name"}, "Rest"]},
        "delete": {"sql": "DELETE FROM users WHERE id = ?", "params": ["Id"]},
        "clear": "DELETE FROM users;"});
    s.control_json("start", &json!({"schema": {"tables": [], "raw_tables": [table]}}));
    s.push_checkpoint(1, vec![bucket("a", 3)]);
    s.line(&upstream::sync::data_line("a", "1", "user1", "PUT", json!({"name": "First user"}), 0, "users"));
    s.line(&upstream::sync::data_line("a", "2", "user2", "PUT", json!({"name": "Second user", "foo": "bar", "another": 3}), 0, "users"));
    s.push_checkpoint_complete(None);
    assert_eq!(
        select(&s.db, "SELECT * FROM users", &[]),
        vec![
            json!({"id": "user1", "name": "First user", "_rest": null}),
            json!({"id": "user2", "name": "Second user", "_rest": r#"{"another":3,"foo":"bar"}"#}),
        ]
    );
}

fn raw_crud_vtab(core: Core, bson: bool) {
    let s = Session::new(core, bson);
    s.db.execute_batch(RAW_USERS_SQL).unwrap();
    s.db.execute_batch(
        "BEGIN; INSERT INTO users (id, name) VALUES ('test-id', 'test user');
         UPDATE users SET name = name || '2'; DELETE FROM users; END;",
    )
    .unwrap();
    assert_eq!(
        select(&s.db, "SELECT * FROM ps_crud", &[]),
        vec![
            json!({"id": 1, "tx_id": 1, "data": r#"{"op":"PUT","id":"test-id","type":"users","data":{"name":"test user"}}"#}),
            json!({"id": 2, "tx_id": 1, "data": r#"{"op":"PATCH","id":"test-id","type":"users","data":{"name":"test user2"}}"#}),
            json!({"id": 3, "tx_id": 1, "data": r#"{"op":"DELETE","id":"test-id","type":"users"}"#}),
        ]
    );
}

fn raw_crud_vtab_inert_during_sync(core: Core, bson: bool) {
    let mut s = raw_users_session(core, bson);
    sync_one(&mut s, "1", "users", "my_user", "PUT", json!({"name": "First user"}));
    assert!(select(&s.db, "SELECT * FROM ps_crud", &[]).is_empty());
}

fn raw_clear(core: Core, bson: bool) {
    let s = Session::new(core, bson);
    s.db.execute_batch(RAW_USERS_SQL).unwrap();
    upstream::replace_schema(&s.db, &raw_schema(vec![raw_users_table()]));
    exec(&s.db, "INSERT INTO users (id, name) VALUES (uuid(), ?)", &[&"test"]);
    assert_eq!(select(&s.db, "SELECT * FROM users", &[]).len(), 1);
    tx(&s.db, "SELECT powersync_clear(0)", &[]);
    assert!(select(&s.db, "SELECT * FROM users", &[]).is_empty());
}

fn raw_foreign_keys(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    exec(&s.db, "PRAGMA foreign_keys = on", &[]);
    s.db.execute_batch(RAW_USERS_SQL).unwrap();
    s.db.execute_batch(
        "CREATE TABLE user_reference(id TEXT NOT NULL PRIMARY KEY,
           user TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED);
         CREATE TRIGGER users_ref_delete AFTER DELETE ON user_reference FOR EACH ROW BEGIN
           INSERT INTO powersync_crud (op, id, type) VALUES ('DELETE', OLD.id, 'user_reference');
         END;",
    )
    .unwrap();
    let reference = json!({"name": "user_reference",
        "put": {"sql": "INSERT OR REPLACE INTO user_reference (id, user) VALUES (?, ?);", "params": ["Id", {"Column": "user"}]},
        "delete": {"sql": "DELETE FROM user_reference WHERE id = ?", "params": ["Id"]},
        "clear": "DELETE FROM user_reference;"});
    s.control_json("start", &json!({"schema": raw_schema(vec![raw_users_table(), reference])}));

    s.push_checkpoint(1, vec![bucket("a", 3)]);
    s.line(&upstream::sync::data_line("a", "1", "my_ref", "PUT", json!({"user": "my_user"}), 0, "user_reference"));
    s.line(&upstream::sync::data_line("a", "2", "my_user", "PUT", json!({"name": "First user"}), 0, "users"));
    s.push_checkpoint_complete(None);
    assert!(!select(&s.db, "SELECT * FROM user_reference", &[]).is_empty());

    exec(&s.db, "BEGIN", &[]);
    exec(&s.db, "DELETE FROM users", &[]);
    assert_eq!(
        select(&s.db, "SELECT * FROM ps_crud", &[]),
        vec![
            json!({"id": 1, "tx_id": 2, "data": r#"{"op":"DELETE","id":"my_ref","type":"user_reference"}"#}),
            json!({"id": 2, "tx_id": 2, "data": r#"{"op":"DELETE","id":"my_user","type":"users"}"#}),
        ]
    );
    exec(&s.db, "ROLLBACK", &[]);

    s.push_checkpoint(1, vec![bucket("a", 3)]);
    s.line(&upstream::sync::data_line("a", "3", "my_user", "REMOVE", Value::Null, 0, "users"));
    s.line(&upstream::sync::data_line("a", "3", "my_ref", "REMOVE", Value::Null, 0, "user_reference"));
    s.push_checkpoint_complete(None);
    assert!(select(&s.db, "SELECT * FROM user_reference", &[]).is_empty());
}

per_core_and_encoding! {
    raw_smoke;
    raw_inferred_schema_smoke;
    raw_inferred_schema_with_changes;
    raw_reports_statement_errors;
    raw_rest_column;
    raw_crud_vtab;
    raw_crud_vtab_inert_during_sync;
    raw_clear;
    raw_foreign_keys;
}
