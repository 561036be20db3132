//! Switching cores from an SDK release before the 0.5 cores: the database
//! is at one of the PowerSync core's internal versions before 5, with what
//! such a core left behind: superseded and REMOVE ops in the old oplog, the
//! old generated views whose triggers write the `$local` bucket, an upload
//! queued through them, synced rows whose ops are gone. The reference core
//! builds it (its own migrations take a fresh database down to the old
//! version, then the old layout is filled in as the old core did); a copy is
//! brought up by the reference, the other is adopted by oplite; both take
//! the app's schema and the same sync lines, and every internal table and
//! view must agree after each call (differential, `common::diff::Pair`).
mod common;

use std::path::Path;

use common::diff::{Arg, Pair};
use common::driver::{open_file, stored_crud, TempDir};
use common::{load, reference_so};
use rusqlite::Connection;
use serde_json::{json, Value};

/// The Dart suite's fixtures (the old generated view and triggers).
fn fixtures() -> Value {
    serde_json::from_str(include_str!("upstream/migration_fixtures.json")).unwrap()
}

fn open_with_core(path: &Path) -> Connection {
    let db = Connection::open(path).unwrap();
    load(&db, &reference_so(), "sqlite3_powersync_init").unwrap();
    db
}

fn in_tx(db: &Connection, sql: &str, arg: i64) {
    db.execute_batch("BEGIN").unwrap();
    db.query_row(sql, [arg], |_| Ok(())).unwrap();
    db.execute_batch("COMMIT").unwrap();
}

fn init(db: &Connection) {
    db.execute_batch("BEGIN").unwrap();
    db.query_row("SELECT powersync_init()", [], |_| Ok(())).unwrap();
    db.execute_batch("COMMIT").unwrap();
}

/// A database as a core at internal `version` (1 to 4) left it.
fn old_core_database(path: &Path, version: i64) {
    let db = open_with_core(path);
    init(&db);
    in_tx(&db, "SELECT powersync_test_migration(?1)", version);
    let ids: Vec<i64> =
        db.prepare("SELECT id FROM ps_migration ORDER BY id").unwrap().query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(ids, (1..=version).collect::<Vec<_>>());
    if version >= 3 {
        db.execute_batch("UPDATE ps_kv SET value = '00000000-0000-4000-8000-000000000000' WHERE key = 'client_id'")
            .unwrap();
    }
    // The old generated view of `lists`, its triggers writing '$local'.
    db.execute_batch(fixtures()["schema3"].as_str().unwrap()).unwrap();
    let op_checksum = if version >= 4 { ", op_checksum" } else { "" };
    let (c1, c2) = if version >= 4 { (", 127", ", 8") } else { ("", "") };
    db.execute_batch(&format!(
        r#"
        CREATE TABLE "ps_data__todos"(id TEXT PRIMARY KEY NOT NULL, data TEXT);
        INSERT INTO ps_buckets(name, last_applied_op, last_op, target_op, add_checksum, pending_delete{op_checksum})
          VALUES ('b1', 5, 5, 0, 0, 0{c1}), ('b2', 4, 4, 0, 1000, 0{c2});
        INSERT INTO ps_oplog(bucket, op_id, op, row_type, row_id, key, data, hash, superseded) VALUES
          ('b1', 1, 3, 'todos', 't1', '', '{{"description":"first draft"}}', 7, 1),
          ('b1', 2, 3, 'todos', 't2', '', '{{"description":"second"}}', 20, 0),
          ('b1', 5, 3, 'todos', 't1', '', '{{"description":"first"}}', 100, 0),
          ('b2', 3, 3, 'lists', 'l1', '', '{{"description":"list one"}}', 3, 0),
          ('b2', 4, 4, 'lists', 'l2', '', null, 5, 0);
        INSERT INTO ps_data__todos(id, data) VALUES
          ('t1', '{{"description":"first"}}'), ('t2', '{{"description":"second"}}'),
          ('t3', '{{"description":"its ops are gone"}}');
        INSERT INTO ps_data__lists(id, data) VALUES ('l1', '{{"description":"list one"}}');
        "#
    ))
    .unwrap();
    // A write through the old trigger: queued for upload, marked in '$local'.
    // (The reference's upload queue of today needs version 2's ps_tx; at
    // version 1 the write is what the old trigger did, by hand.)
    if version >= 2 {
        db.execute_batch("BEGIN; INSERT INTO lists(id, description) VALUES ('l9', 'written offline'); COMMIT;").unwrap();
    } else {
        db.execute_batch(
            r#"BEGIN;
            INSERT INTO ps_data__lists(id, data) VALUES ('l9', '{"description":"written offline"}');
            INSERT INTO ps_crud(data) VALUES ('{"op":"PUT","type":"lists","id":"l9","data":{"description":"written offline"}}');
            INSERT INTO ps_oplog(bucket, op_id, op, row_type, row_id, hash, superseded) VALUES ('$local', 1, 'REMOVE', 'lists', 'l9', 0, 0);
            INSERT OR REPLACE INTO ps_buckets(name, pending_delete, last_op, target_op) VALUES('$local', 1, 0, 9223372036854775807);
            COMMIT;"#,
        )
        .unwrap();
    }
    let local: i64 = db.query_row("SELECT count(*) FROM ps_oplog WHERE bucket = '$local'", [], |r| r.get(0)).unwrap();
    assert_eq!(local, 1, "the old trigger wrote the '$local' marker");
    assert_eq!(stored_crud(&db).len(), 1, "the old trigger queued the upload");
}

fn app_schema() -> Value {
    let table = |name: &str| json!({"name": name, "columns": [{"name": "description", "type": "TEXT"}]});
    json!({"tables": [table("lists"), table("todos")]})
}

fn ids(db: &Connection, view: &str) -> Vec<String> {
    let mut stmt = db.prepare(&format!("SELECT id FROM {view} ORDER BY id")).unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect()
}

fn text(line: Value) -> String {
    line.to_string()
}

fn adopted_like_the_core(version: i64) {
    let dir = TempDir::new(&format!("adopt-old-{version}"));
    let theirs_path = dir.join("core.db");
    old_core_database(&theirs_path, version);
    let ours_path = dir.join("ours.db");
    std::fs::copy(&theirs_path, &ours_path).unwrap();

    let theirs = open_with_core(&theirs_path);
    let ours = open_file(&ours_path, None);
    let crud_before = stored_crud(&ours);
    init(&theirs);
    init(&ours);
    assert_eq!(stored_crud(&ours), crud_before, "the queued upload survives");
    for db in [&ours, &theirs] {
        // Older cores had no client id before version 3: both made one.
        db.execute_batch("UPDATE ps_kv SET value = '00000000-0000-4000-8000-000000000000' WHERE key = 'client_id'")
            .unwrap();
    }
    let mut pair = Pair { ours, theirs, trace: vec![format!("from version {version}")], extra_queries: Vec::new() };
    pair.assert_same_tables();
    pair.replace_schema(&app_schema());
    pair.assert_same_tables();
    let typed: String =
        pair.ours.query_row("SELECT sql FROM sqlite_master WHERE name = 'ps_data__lists'", [], |r| r.get(0)).unwrap();
    assert!(typed.contains("\"description\""), "lists should be stored in typed columns now: {typed}");

    // The next session resumes from the stored buckets; the server's
    // checksums are those of every op it sent (the dropped ones included).
    let bucket = |name: &str, checksum: i64| json!({"bucket": name, "checksum": checksum, "priority": 3, "count": 3});
    pair.control("start", Arg::Null);
    let checkpoint = text(json!({"checkpoint": {"last_op_id": "5", "write_checkpoint": null,
        "buckets": [bucket("b1", 127), bucket("b2", 1008)]}}));
    pair.control("line_text", Arg::Text(&checkpoint));
    pair.control("line_text", Arg::Text(&text(json!({"checkpoint_complete": {"last_op_id": "5"}}))));
    pair.control("stop", Arg::Null);

    // Nothing was applied: the old '$local' target (writes pending) holds.
    // The upload goes through (the SDK empties ps_crud and, bridging through
    // the legacy endpoint, sets the write checkpoint it got as the target),
    // then a session with new data and that write checkpoint applies all.
    pair.execute("BEGIN; DELETE FROM ps_crud; COMMIT;");
    pair.control("target_checkpoint_request_id", Arg::Int(1));
    pair.control("start", Arg::Null);
    let checkpoint = text(json!({"checkpoint": {"last_op_id": "6", "write_checkpoint": "1",
        "buckets": [bucket("b1", 127 + 11), bucket("b2", 1008)]}}));
    pair.control("line_text", Arg::Text(&checkpoint));
    let data = text(json!({"data": {"bucket": "b1", "has_more": false, "after": "5", "next_after": "6", "data": [
        {"op_id": "6", "op": "PUT", "object_type": "todos", "object_id": "t4", "checksum": 11,
         "data": "{\"description\":\"new\"}"}]}}));
    pair.control("line_text", Arg::Text(&data));
    pair.control("line_text", Arg::Text(&text(json!({"checkpoint_complete": {"last_op_id": "6"}}))));
    let todos = ids(&pair.ours, "todos");
    assert_eq!(todos, ["t1", "t2", "t4"], "the dangling t3 is gone, the new t4 arrived");
    let lists = ids(&pair.ours, "lists");
    assert_eq!(lists, ["l1"], "the removed l2 and the unconfirmed local l9 are gone");
}

#[test]
fn a_version_2_database_is_adopted_like_the_core() {
    adopted_like_the_core(2);
}

#[test]
fn a_version_3_database_is_adopted_like_the_core() {
    adopted_like_the_core(3);
}

#[test]
fn a_version_4_database_is_adopted_like_the_core() {
    adopted_like_the_core(4);
}

#[test]
fn a_version_1_database_is_adopted_like_the_core() {
    adopted_like_the_core(1);
}
