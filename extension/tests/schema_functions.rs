//! The functions around the schema: update hooks, clear, resync, diff,
//! strip_subtype, drop_view; and their transaction requirements.
mod common;

use common::schema::*;
use common::*;
use rusqlite::Connection;

const SCHEMA: &str = r#"{"tables":[
  {"name":"items","columns":[{"name":"name","type":"text"}]},
  {"name":"drafts","local_only":true,"columns":[{"name":"text","type":"text"}]}],
 "raw_tables":[{"name":"things","put":{"sql":"INSERT INTO things(id) VALUES (?)","params":["Id"]},
   "delete":{"sql":"DELETE FROM things WHERE id = ?","params":["Id"]},"clear":"DELETE FROM things"}]}"#;

fn setup() -> Connection {
    let db = oplite_initialised();
    db.execute_batch("CREATE TABLE things(id)").unwrap();
    replace_schema(&db, SCHEMA).unwrap();
    db
}

fn hooks(db: &Connection) -> String {
    db.query_row("SELECT powersync_update_hooks('get')", [], |r| r.get(0)).unwrap()
}

#[test]
fn update_hooks_report_committed_tables() {
    let db = setup();
    assert_eq!(hooks(&db), "[]");
    let installed: Option<String> = db.query_row("SELECT powersync_update_hooks('install')", [], |r| r.get(0)).unwrap();
    assert_eq!(installed, None);
    db.execute_batch("INSERT INTO items(id, name) VALUES ('a', 'x')").unwrap();
    assert_eq!(hooks(&db), r#"["ps_crud","ps_data__items","ps_kv","ps_tx"]"#);
    assert_eq!(hooks(&db), "[]");
    db.execute_batch("BEGIN; INSERT INTO drafts(id) VALUES ('d'); ROLLBACK;").unwrap();
    assert_eq!(hooks(&db), "[]");
    db.execute_batch("BEGIN; INSERT INTO drafts(id) VALUES ('d');").unwrap();
    assert_eq!(hooks(&db), "[]", "nothing before the commit");
    db.execute_batch("COMMIT").unwrap();
    assert_eq!(hooks(&db), r#"["ps_data_local__drafts"]"#);
    sync_rows(&db, &[("items", "s", Some("{}"))]);
    assert_eq!(hooks(&db), r#"["ps_data__items"]"#);
    let err = db.query_row("SELECT powersync_update_hooks('bogus')", [], |_| Ok(())).unwrap_err();
    assert_eq!(error_code(&err), rusqlite::ffi::SQLITE_MISUSE);
    assert!(err.to_string().contains("Unknown operation"));
}

fn fill(db: &Connection) {
    db.execute_batch(
        "INSERT INTO items(id, name) VALUES ('local', 'x');
         INSERT OR REPLACE INTO drafts(id, text) VALUES ('d', 'draft');
         INSERT INTO things VALUES ('t');
         INSERT INTO ps_buckets(name, last_applied_op, last_op) VALUES ('b1', 5, 5);
         INSERT INTO ps_oplog(bucket, op_id, row_type, row_id, key, data, hash) VALUES (1, 5, 'items', 's', 'items/s/null', '{}', 1);
         INSERT INTO ps_untyped VALUES ('unknown', 'u', '{}');
         INSERT INTO ps_sync_state VALUES (2147483647, 1);
         INSERT INTO ps_stream_subscriptions(stream_name) VALUES ('s');
         INSERT INTO ps_kv VALUES ('last_seen_checkpoint_request_id', 3);",
    )
    .unwrap();
    sync_rows(db, &[("items", "s", Some(r#"{"name":"synced"}"#))]);
}

fn counts(db: &Connection) -> Vec<String> {
    [
        "ps_buckets", "ps_oplog", "ps_crud", "ps_updated_rows", "ps_untyped", "ps_sync_state", "ps_stream_subscriptions", "ps_kv",
        "ps_data__items", "ps_data_local__drafts", "things",
    ]
    .iter()
    .map(|t| format!("{t}={}", texts(db, &format!("SELECT count(*) FROM {t}"))[0]))
    .collect()
}

fn clear(db: &Connection, flags: i64) {
    db.execute_batch("BEGIN").unwrap();
    db.query_row("SELECT powersync_clear(?1)", [flags], |_| Ok(())).unwrap();
    db.execute_batch("COMMIT").unwrap();
}

#[test]
fn clear_removes_synced_data_and_keeps_the_client_id() {
    let db = setup();
    let client_id = texts(&db, "SELECT value FROM ps_kv WHERE key = 'client_id'");
    fill(&db);
    clear(&db, 0);
    assert_eq!(
        counts(&db),
        [
            "ps_buckets=0", "ps_oplog=0", "ps_crud=0", "ps_updated_rows=0", "ps_untyped=0", "ps_sync_state=0",
            "ps_stream_subscriptions=0", "ps_kv=1", "ps_data__items=0", "ps_data_local__drafts=1", "things=0"
        ]
    );
    assert_eq!(texts(&db, "SELECT value FROM ps_kv WHERE key = 'client_id'"), client_id);
    fill(&db);
    clear(&db, 1);
    assert!(counts(&db).contains(&"ps_data_local__drafts=0".to_owned()));
}

#[test]
fn soft_clear_keeps_downloads_and_resync_marks_buckets() {
    let db = setup();
    fill(&db);
    clear(&db, 2);
    assert_eq!(
        counts(&db),
        [
            "ps_buckets=1", "ps_oplog=1", "ps_crud=0", "ps_updated_rows=0", "ps_untyped=0", "ps_sync_state=0",
            "ps_stream_subscriptions=0", "ps_kv=1", "ps_data__items=0", "ps_data_local__drafts=1", "things=0"
        ]
    );
    assert_eq!(texts(&db, "SELECT last_applied_op FROM ps_buckets"), ["0"]);

    db.execute_batch("UPDATE ps_buckets SET last_applied_op = 5; INSERT INTO ps_sync_state VALUES (2147483647, 1);").unwrap();
    db.execute_batch("BEGIN; SELECT powersync_trigger_resync(0); COMMIT;").unwrap();
    assert_eq!(texts(&db, "SELECT last_applied_op FROM ps_buckets"), ["0"]);
    assert_eq!(texts(&db, "SELECT count(*) FROM ps_sync_state"), ["1"]);
    db.execute_batch("BEGIN; SELECT powersync_trigger_resync(1); COMMIT;").unwrap();
    assert_eq!(texts(&db, "SELECT count(*) FROM ps_sync_state"), ["0"]);

    oplite::schema::set_sync_iteration_active(&db, true);
    db.execute_batch("BEGIN").unwrap();
    for sql in ["SELECT powersync_clear(2)", "SELECT powersync_trigger_resync(0)"] {
        let err = db.query_row(sql, [], |_| Ok(())).unwrap_err();
        assert!(err.to_string().contains("Cannot clear or trigger resync while a sync iteration is active"), "{err}");
    }
    db.query_row("SELECT powersync_clear(1)", [], |_| Ok(())).unwrap();
    db.execute_batch("COMMIT").unwrap();
}

#[test]
fn state_changing_functions_need_a_transaction() {
    let db = setup();
    for sql in ["SELECT powersync_clear(0)", "SELECT powersync_trigger_resync(0)", r#"SELECT powersync_replace_schema('{"tables":[]}')"#] {
        let err = db.query_row(sql, [], |_| Ok(())).unwrap_err();
        assert_eq!(error_code(&err), rusqlite::ffi::SQLITE_MISUSE, "{sql}");
    }
}

#[test]
fn small_functions() {
    let db = oplite();
    let one = |sql: &str| -> String { db.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(one(r#"SELECT powersync_diff('{"a":1,"b":2}', '{"b":3,"c":null}')"#), r#"{"a":null,"b":3}"#);
    assert!(db.query_row("SELECT powersync_diff('{}', 'x')", [], |_| Ok(())).unwrap_err().to_string().contains("expected value"));
    assert_eq!(one("SELECT json_object('a', powersync_strip_subtype(json('[1]')))"), r#"{"a":"[1]"}"#);
    assert_eq!(one("SELECT typeof(powersync_strip_subtype(5))"), "integer");
    db.execute_batch("CREATE VIEW v AS SELECT 1; SELECT powersync_drop_view('v'); SELECT powersync_drop_view('v');").unwrap();
    assert_eq!(texts(&db, "SELECT count(*) FROM sqlite_master"), ["0"]);
}

#[test]
fn closing_with_an_open_transaction_after_installing_hooks_is_safe() {
    // SQLite frees client data before the rollback it runs on close, and
    // that rollback calls the rollback hook.
    for _ in 0..20 {
        let db = setup();
        db.query_row("SELECT powersync_update_hooks('install')", [], |_| Ok(())).unwrap();
        db.execute_batch("BEGIN; INSERT INTO items(id, name) VALUES ('a', 'x');").unwrap();
        db.close().unwrap();
    }
}

#[test]
fn subkey_repair_as_the_sdks_run_it() {
    // The Node and web SDKs run this UPDATE once, on their first connect.
    let db = setup();
    db.execute_batch(
        r#"INSERT INTO ps_oplog(bucket, op_id, row_type, row_id, key, data, hash) VALUES
             (1, 1, 'items', 'a', 'items/a/"sub"', '{}', 0),
             (1, 2, 'items', 'b', 'items/b/x\"y', '{}', 0);
           UPDATE ps_oplog SET key = powersync_remove_duplicate_key_encoding(key);"#,
    )
    .unwrap();
    // The second key is not double-encoded: kept (the reference core would
    // set it to NULL; see key_encoding.rs).
    assert_eq!(texts(&db, "SELECT ifnull(key, 'NULL') FROM ps_oplog ORDER BY op_id"), ["items/a/sub", r#"items/b/x\"y"#]);
    let err = db.query_row("SELECT powersync_remove_duplicate_key_encoding(1)", [], |_| Ok(())).unwrap_err();
    assert!(err.to_string().contains("must be text"), "{err}");
    assert!(db.query_row("SELECT powersync_remove_duplicate_key_encoding(NULL)", [], |_| Ok(())).is_err());
}
