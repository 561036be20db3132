//! Local writes through the views: the upload queue for every table option,
//! tx_ids, the id checks, savepoints, and the bookkeeping in ps_kv and
//! ps_updated_rows.
mod common;

use common::schema::*;
use common::*;
use rusqlite::types::Value;
use rusqlite::Connection;

fn with_schema(schema: &str) -> Connection {
    let db = oplite_initialised();
    replace_schema(&db, schema).unwrap();
    db
}

fn table(options: &str) -> String {
    format!(
        r#"{{"tables":[{{"name":"t",{options}"columns":[{{"name":"a","type":"text"}},{{"name":"b","type":"integer"}},{{"name":"c","type":"real"}}]}}]}}"#
    )
}

fn tx_ids(db: &Connection) -> Vec<String> {
    texts(db, "SELECT tx_id FROM ps_crud ORDER BY id")
}

#[test]
fn put_patch_delete_and_transactions() {
    let db = with_schema(&table(""));
    db.execute_batch("INSERT INTO t(id, a, b, c) VALUES ('1', 'x', 2, 3.5)").unwrap();
    db.execute_batch("BEGIN; UPDATE t SET a = 'y', c = NULL WHERE id = '1'; UPDATE t SET a = a WHERE id = '1'; DELETE FROM t WHERE id = '1'; COMMIT;")
        .unwrap();
    db.execute_batch("INSERT INTO t(id, b) VALUES ('2', '7')").unwrap();
    assert_eq!(
        crud(&db),
        [
            r#"{"op":"PUT","id":"1","type":"t","data":{"a":"x","b":2,"c":3.5}}"#,
            r#"{"op":"PATCH","id":"1","type":"t","data":{"a":"y","c":null}}"#,
            r#"{"op":"PATCH","id":"1","type":"t","data":{}}"#,
            r#"{"op":"DELETE","id":"1","type":"t"}"#,
            r#"{"op":"PUT","id":"2","type":"t","data":{"b":"7"}}"#,
        ]
    );
    assert_eq!(tx_ids(&db), ["1", "2", "2", "2", "3"]);
    assert_eq!(texts(&db, "SELECT next_tx FROM ps_tx"), ["4"]);
    assert_eq!(texts(&db, "SELECT row_id FROM ps_updated_rows ORDER BY row_id"), ["1", "2"]);
    assert_eq!(rows(&db, "SELECT key, value FROM ps_kv WHERE key != 'client_id'"), vec![vec![
        Value::Text("target_checkpoint_request_id".into()),
        Value::Integer(i64::MAX)
    ]]);
}

#[test]
fn a_local_write_forgets_checkpoint_requests() {
    let db = with_schema(&table(""));
    db.execute_batch("INSERT INTO ps_kv VALUES ('last_seen_checkpoint_request_id', 7), ('last_applied_checkpoint_request_id', 7), ('target_checkpoint_request_id', 7)").unwrap();
    db.execute_batch("INSERT INTO t(id) VALUES ('1')").unwrap();
    assert_eq!(texts(&db, "SELECT key || '=' || value FROM ps_kv WHERE key != 'client_id'"), ["target_checkpoint_request_id=9223372036854775807"]);
}

#[test]
fn rolled_back_writes_queue_nothing() {
    let db = with_schema(&table(""));
    db.execute_batch("BEGIN; INSERT INTO t(id) VALUES ('1'); ROLLBACK;").unwrap();
    assert!(crud(&db).is_empty());
    assert_eq!(texts(&db, "SELECT next_tx FROM ps_tx"), ["1"]);
    // ROLLBACK TO drops what came after the savepoint, and the transaction
    // still takes its tx_id (the reference loses it here and reuses it).
    db.execute_batch(
        "BEGIN; INSERT INTO t(id) VALUES ('a'); SAVEPOINT s; INSERT INTO t(id) VALUES ('b'); ROLLBACK TO s; INSERT INTO t(id) VALUES ('c'); COMMIT;",
    )
    .unwrap();
    db.execute_batch("BEGIN; SAVEPOINT s; INSERT INTO t(id) VALUES ('d'); ROLLBACK TO s; RELEASE s; INSERT INTO t(id) VALUES ('e'); COMMIT;")
        .unwrap();
    db.execute_batch("INSERT INTO t(id) VALUES ('f')").unwrap();
    assert_eq!(texts(&db, "SELECT data ->> 'id' FROM ps_crud ORDER BY id"), ["a", "c", "e", "f"]);
    assert_eq!(tx_ids(&db), ["1", "1", "2", "3"]);
    assert_eq!(texts(&db, "SELECT id FROM t ORDER BY id"), ["a", "c", "e", "f"]);
    // A failed statement inside a transaction drops only its own entries.
    db.execute_batch("BEGIN; INSERT INTO t(id) VALUES ('g');").unwrap();
    assert!(db.execute_batch("INSERT INTO t(id) SELECT 'h' UNION ALL SELECT 'a'").is_err());
    db.execute_batch("COMMIT").unwrap();
    assert_eq!(texts(&db, "SELECT data ->> 'id' FROM ps_crud WHERE tx_id = 4"), ["g"]);
}

#[test]
fn entries_are_in_ps_crud_when_the_statement_returns() {
    let db = with_schema(&table(""));
    db.execute_batch("BEGIN; INSERT INTO t(id, a) VALUES ('1', 'x');").unwrap();
    assert_eq!(crud(&db), [r#"{"op":"PUT","id":"1","type":"t","data":{"a":"x"}}"#]);
    assert_eq!(texts(&db, "SELECT row_type || '/' || row_id FROM ps_updated_rows"), ["t/1"]);
    assert_eq!(texts(&db, "SELECT value FROM ps_kv WHERE key = 'target_checkpoint_request_id'"), ["9223372036854775807"]);
    db.execute_batch("UPDATE t SET a = 'y' WHERE id = '1'").unwrap();
    assert_eq!(crud(&db).len(), 2);
    db.execute_batch("COMMIT").unwrap();
    assert_eq!(crud(&db).len(), 2);
    // powersync_crud is insert-only: reading it returns nothing.
    assert!(texts(&db, "SELECT data FROM powersync_crud").is_empty());
}

#[test]
fn ids_must_be_text_and_cannot_change() {
    let db = with_schema(&table(""));
    for (sql, message) in [
        ("INSERT INTO t(id, a) VALUES (NULL, 'x')", "id is required"),
        ("INSERT INTO t(id, a) VALUES (5, 'x')", "id should be text"),
    ] {
        let err = db.execute_batch(sql).unwrap_err();
        assert!(err.to_string().contains(message), "{err}");
        assert_eq!(error_code(&err), rusqlite::ffi::SQLITE_CONSTRAINT_TRIGGER);
    }
    db.execute_batch("INSERT INTO t(id) VALUES ('k')").unwrap();
    for sql in ["UPDATE t SET id = 'k2' WHERE id = 'k'", "UPDATE t SET id = NULL WHERE id = 'k'"] {
        let err = db.execute_batch(sql).unwrap_err();
        assert!(err.to_string().contains("Cannot update id"), "{err}");
    }
    let err = db.execute_batch("INSERT INTO t(id) VALUES ('k')").unwrap_err();
    assert!(err.to_string().contains("UNIQUE constraint failed: ps_data__t.id"), "{err}");
    let err = db.execute_batch("INSERT INTO t(id, a) VALUES ('z', x'00')").unwrap_err();
    assert!(err.to_string().contains("JSON cannot hold BLOB values"), "{err}");
    assert_eq!(crud(&db).len(), 1);
}

#[test]
fn local_only_tables_queue_nothing() {
    let db = with_schema(&table(r#""local_only":true,"#));
    db.execute_batch("INSERT INTO t(id, a) VALUES ('1', 'x'); INSERT INTO t(id, a) VALUES (5, 'y'); UPDATE t SET a = 'z'; DELETE FROM t WHERE id = '1';")
        .unwrap();
    assert!(crud(&db).is_empty());
    assert_eq!(texts(&db, "SELECT next_tx FROM ps_tx"), ["1"]);
    assert_eq!(rows(&db, "SELECT id, a FROM t"), vec![vec![Value::Text("5".into()), Value::Text("z".into())]]);
}

#[test]
fn insert_only_tables_queue_inserts_and_keep_no_rows() {
    let db = with_schema(&table(r#""insert_only":true,"#));
    db.execute_batch("INSERT INTO t(id, a, b) VALUES ('1', 'x', NULL)").unwrap();
    assert_eq!(crud(&db), [r#"{"op":"PUT","type":"t","id":"1","data":{"a":"x"}}"#]);
    assert_eq!(texts(&db, "SELECT count(*) FROM t"), ["0"]);
    assert!(texts(&db, "SELECT * FROM ps_updated_rows").is_empty());
    assert!(db.execute_batch("UPDATE t SET a = 'y'").unwrap_err().to_string().contains("cannot modify t because it is a view"));
}

#[test]
fn metadata_is_queued_when_it_is_text() {
    let db = with_schema(&table(r#""include_metadata":true,"#));
    assert_eq!(texts(&db, "SELECT name FROM pragma_table_info('t')"), ["id", "a", "b", "c", "_metadata", "_deleted"]);
    db.execute_batch(
        "INSERT INTO t(id, a, _metadata) VALUES ('1', 'x', 'm1');
         INSERT INTO t(id, a, _metadata) VALUES ('2', 'x', 5);
         UPDATE t SET a = 'y', _metadata = 'm2' WHERE id = '1';
         UPDATE t SET _deleted = TRUE, _metadata = 'm3' WHERE id = '1';
         UPDATE t SET _deleted = 1 WHERE id = '2';",
    )
    .unwrap();
    assert_eq!(
        crud(&db),
        [
            r#"{"op":"PUT","id":"1","type":"t","data":{"a":"x"},"metadata":"m1"}"#,
            r#"{"op":"PUT","id":"2","type":"t","data":{"a":"x"}}"#,
            r#"{"op":"PATCH","id":"1","type":"t","data":{"a":"y"},"metadata":"m2"}"#,
            r#"{"op":"DELETE","id":"1","type":"t","metadata":"m3"}"#,
            r#"{"op":"DELETE","id":"2","type":"t"}"#,
        ]
    );
    assert_eq!(texts(&db, "SELECT count(*) FROM t"), ["0"]);
}

#[test]
fn include_old_variants() {
    let cases = [
        (r#""include_old":true,"#, r#"{"a":"x","b":1,"c":null}"#, r#"{"a":"y","b":1,"c":null}"#),
        (r#""include_old":["c","a"],"#, r#"{"a":"x","c":null}"#, r#"{"a":"y","c":null}"#),
        (r#""include_old":true,"include_old_only_when_changed":true,"#, r#"{"a":"x"}"#, r#"{"a":"y","b":1,"c":null}"#),
        (r#""include_old":["b"],"include_old_only_when_changed":true,"#, "{}", r#"{"b":1}"#),
    ];
    for (options, patch_old, delete_old) in cases {
        let db = with_schema(&table(options));
        db.execute_batch("INSERT INTO t(id, a, b) VALUES ('1', 'x', 1); UPDATE t SET a = 'y'; DELETE FROM t;").unwrap();
        assert_eq!(
            crud(&db)[1..],
            [
                format!(r#"{{"op":"PATCH","id":"1","type":"t","data":{{"a":"y"}},"old":{patch_old}}}"#),
                format!(r#"{{"op":"DELETE","id":"1","type":"t","old":{delete_old}}}"#),
            ],
            "{options}"
        );
    }
}

#[test]
fn ignore_empty_update_skips_updates_that_change_nothing() {
    let db = with_schema(&table(r#""ignore_empty_update":true,"#));
    db.execute_batch("INSERT INTO t(id, a, b, c) VALUES ('1', 'x', 1, 1.0)").unwrap();
    forget_uploads(&db);
    db.execute_batch("UPDATE t SET a = 'x', b = 1, c = 1.0").unwrap();
    assert!(crud(&db).is_empty());
    assert!(texts(&db, "SELECT * FROM ps_updated_rows").is_empty());
    assert!(texts(&db, "SELECT key FROM ps_kv WHERE key != 'client_id'").is_empty());
    // The view's column affinity applies to NEW (1.0 becomes 1 in an
    // integer column), as in the reference: still no change.
    db.execute_batch("UPDATE t SET b = 1.0").unwrap();
    assert!(crud(&db).is_empty());
    db.execute_batch("UPDATE t SET b = 2").unwrap();
    assert_eq!(crud(&db), [r#"{"op":"PATCH","id":"1","type":"t","data":{"b":2}}"#]);
}

#[test]
fn values_render_as_the_reference_renders_them() {
    let db = with_schema(&table(""));
    db.execute_batch(
        r#"INSERT INTO t(id, a, b, c) VALUES ('1', json_object('k', 1), 9223372036854775807, 1e20);
           INSERT INTO t(id, a, c) VALUES ('2', 'tab	"quote" \ é', 1.0/3);"#,
    )
    .unwrap();
    assert_eq!(
        crud(&db),
        [
            r#"{"op":"PUT","id":"1","type":"t","data":{"a":"{\"k\":1}","b":9223372036854775807,"c":1e+20}}"#,
            r#"{"op":"PUT","id":"2","type":"t","data":{"a":"tab\t\"quote\" \\ é","c":0.3333333333333333}}"#,
        ]
    );
}

#[test]
fn wide_tables_work() {
    let columns: Vec<String> = (0..150).map(|i| format!(r#"{{"name":"c{i:03}","type":"integer"}}"#)).collect();
    let db = with_schema(&format!(r#"{{"tables":[{{"name":"w","include_old":true,"columns":[{}]}}]}}"#, columns.join(",")));
    db.execute_batch("INSERT INTO w(id, c000, c149) VALUES ('1', 0, 149); UPDATE w SET c075 = 75, c149 = NULL;").unwrap();
    let entries = crud(&db);
    assert_eq!(entries[0], r#"{"op":"PUT","id":"1","type":"w","data":{"c000":0,"c149":149}}"#);
    assert!(entries[1].starts_with(r#"{"op":"PATCH","id":"1","type":"w","data":{"c075":75,"c149":null},"old":{"c000":0,"c001":null"#), "{}", entries[1]);
    assert!(entries[1].ends_with(r#""c148":null,"c149":149}}"#), "{}", entries[1]);
}

#[test]
fn reference_style_writes_into_powersync_crud_are_queued() {
    let db = with_schema(&table(""));
    db.execute_batch(
        r#"INSERT INTO powersync_crud(op, id, type, data) VALUES ('PUT', 'r1', 'raw', '{"x":1}');
           INSERT INTO powersync_crud(op, id, type, data, options) VALUES ('PATCH', 'r1', 'raw', '{}', 16);
           INSERT INTO powersync_crud(op, id, type, old_values, metadata) VALUES ('DELETE', 'r1', 'raw', '{"x":1}', 'm');
           INSERT INTO powersync_crud_(data) VALUES ('{"op":"PUT","type":"raw","id":"r2","data":{}}');"#,
    )
    .unwrap();
    assert_eq!(
        crud(&db),
        [
            r#"{"op":"PUT","id":"r1","type":"raw","data":{"x":1}}"#,
            r#"{"op":"DELETE","id":"r1","type":"raw","old":{"x":1},"metadata":"m"}"#,
            r#"{"op":"PUT","type":"raw","id":"r2","data":{}}"#,
        ]
    );
    assert_eq!(texts(&db, "SELECT row_id FROM ps_updated_rows"), ["r1"]);
    assert!(db.execute_batch("DELETE FROM powersync_crud").is_ok());
    assert!(db.execute_batch("UPDATE powersync_crud SET op = 'x'").is_ok());
}

/// The triggers as oplite wrote them before 2026-12-01: one call of
/// `oplite_crud_put` / `_patch` / `_delete` queued the entry, marked the row
/// and opened the upload gate, where today's triggers run those inserts
/// themselves.
fn as_earlier_oplite_wrote_them(db: &Connection) {
    let triggers = rows(db, "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name");
    for trigger in triggers {
        let (Value::Text(name), Value::Text(sql)) = (&trigger[0], &trigger[1]) else { panic!("{trigger:?}") };
        let mut old = Vec::new();
        for line in sql.lines() {
            const NEW_ENTRY: &str = "INSERT INTO ps_crud(tx_id, data) SELECT oplite_crud_tx(), oplite_";
            if let Some(call) = line.strip_prefix(NEW_ENTRY) {
                let (kind, rest) = call.split_once("_entry").unwrap();
                old.push(format!("SELECT oplite_crud_{kind}{rest}"));
            } else if !line.starts_with("INSERT INTO ps_updated_rows") {
                old.push(line.to_owned());
            }
        }
        db.execute_batch(&format!("DROP TRIGGER \"{name}\"; {}", old.join("\n"))).unwrap();
    }
    assert_eq!(texts(db, "SELECT count(*) FROM sqlite_master WHERE sql LIKE '%oplite_crud_p%' OR sql LIKE '%oplite_crud_d%'"), ["3"]);
}

fn queue_state(db: &Connection) -> Vec<Vec<Value>> {
    let mut state = rows(db, "SELECT id, tx_id, data FROM ps_crud ORDER BY id");
    state.extend(rows(db, "SELECT row_type, row_id FROM ps_updated_rows ORDER BY 1, 2"));
    state.extend(rows(db, "SELECT key, value FROM ps_kv WHERE key != 'client_id' ORDER BY key"));
    state
}

/// A database whose triggers an earlier oplite wrote queues the same
/// entries through the legacy functions, until `powersync_replace_schema`
/// (which the SDKs run at every open) writes today's triggers.
#[test]
fn triggers_of_an_earlier_oplite_queue_the_same_until_the_schema_is_replaced() {
    let schema = table(r#""include_old":true,"#);
    let writes = [
        "INSERT INTO t(id, a, b, c) VALUES ('1', 'x', 2, 3.5)",
        "BEGIN; UPDATE t SET a = 'y', c = NULL WHERE id = '1'; INSERT INTO t(id, b) VALUES ('2', '7'); COMMIT",
        "BEGIN; SAVEPOINT s; DELETE FROM t WHERE id = '2'; ROLLBACK TO s; DELETE FROM t WHERE id = '1'; COMMIT",
    ];
    let today = with_schema(&schema);
    let earlier = with_schema(&schema);
    as_earlier_oplite_wrote_them(&earlier);
    for sql in writes {
        today.execute_batch(sql).unwrap();
        earlier.execute_batch(sql).unwrap();
        assert_eq!(queue_state(&earlier), queue_state(&today), "after {sql}");
    }
    assert_eq!(crud(&earlier).len(), 4);

    replace_schema(&earlier, &schema).unwrap();
    assert_eq!(texts(&earlier, "SELECT count(*) FROM sqlite_master WHERE sql LIKE '%oplite_crud_p%'"), ["0"]);
    today.execute_batch("INSERT INTO t(id, a) VALUES ('3', 'z')").unwrap();
    earlier.execute_batch("INSERT INTO t(id, a) VALUES ('3', 'z')").unwrap();
    assert_eq!(queue_state(&earlier), queue_state(&today));
}
