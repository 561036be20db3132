//! Differential tests of schema changes and clearing: oplite and the
//! reference core go through the same sequence of schemas (tables dropped
//! and re-added, local_only switched, views renamed, columns added and
//! removed) with local writes in between, and must show the same views,
//! the same rows waiting in ps_untyped and the same upload queue; then the
//! same for powersync_clear and powersync_trigger_resync.
mod common;

use common::schema::*;
use common::*;
use rusqlite::types::Value;
use rusqlite::Connection;

fn t(name: &str, columns: &[&str], extra: &str) -> String {
    let columns: Vec<String> = columns.iter().map(|c| format!(r#"{{"name":"{c}","type":"text"}}"#)).collect();
    format!(r#"{{"name":"{name}",{extra}"columns":[{}]}}"#, columns.join(","))
}

fn schema(tables: &[String]) -> String {
    format!(r#"{{"tables":[{}]}}"#, tables.join(","))
}

/// What both cores must agree on after each step.
fn state(db: &Connection, views: &[&str]) -> Vec<(String, Vec<Vec<Value>>)> {
    let mut out = vec![
        ("ps_crud".into(), rows(db, "SELECT id, data, tx_id FROM ps_crud ORDER BY id")),
        ("ps_untyped".into(), rows(db, "SELECT type, id FROM ps_untyped ORDER BY type, id")),
        ("ps_updated_rows".into(), rows(db, "SELECT * FROM ps_updated_rows ORDER BY 1, 2")),
        ("views".into(), rows(db, "SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name")),
        ("triggers".into(), rows(db, "SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name")),
        ("data tables".into(), rows(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'ps_data%' ORDER BY name")),
    ];
    for view in views {
        let exists = !rows(db, &format!("SELECT 1 FROM sqlite_master WHERE name = '{view}'")).is_empty();
        if exists {
            out.push((format!("{view} columns"), rows(db, &format!("SELECT name FROM pragma_table_info('{view}')"))));
            out.push((view.to_string(), rows(db, &format!("SELECT * FROM \"{view}\" ORDER BY id"))));
        }
    }
    out
}

fn both(ours: &Connection, theirs: &Connection, sql: &str) {
    let a = ours.execute_batch(sql).map_err(|e| e.to_string());
    let b = theirs.execute_batch(sql).map_err(|e| e.to_string());
    assert_eq!(a, b, "{sql}");
}

#[test]
fn schema_changes_match_the_reference() {
    let ours = oplite_initialised();
    let theirs = reference();
    init(&theirs);
    let views = ["items", "notes", "renamed", "drafts"];
    let steps: Vec<(String, &str)> = vec![
        (
            schema(&[t("items", &["name", "size"], ""), t("notes", &["body"], ""), t("drafts", &["text"], r#""local_only":true,"#)]),
            "INSERT INTO items(id, name, size) VALUES ('i1', 'a', '1'), ('i2', 'b', NULL);
             INSERT INTO notes(id, body) VALUES ('n1', 'hello');
             INSERT INTO drafts(id, text) VALUES ('d1', 'draft')",
        ),
        // Drop notes (its rows wait in ps_untyped), add a column to items.
        (schema(&[t("items", &["name", "size", "color"], ""), t("drafts", &["text"], r#""local_only":true,"#)]),
         "UPDATE items SET color = 'red' WHERE id = 'i1'"),
        // Notes come back; items switches to local_only; drafts is dropped.
        (schema(&[t("items", &["name", "size", "color"], r#""local_only":true,"#), t("notes", &["body"], "")]),
         "INSERT INTO items(id, name) VALUES ('i3', 'local')"),
        // Items synced again, under a new view name; a column removed.
        (schema(&[t("items", &["name", "color"], r#""view_name":"renamed","#), t("notes", &["body"], "")]),
         "UPDATE renamed SET name = 'again' WHERE id = 'i1'; DELETE FROM notes WHERE id = 'n1'"),
        // The original view name, every column back.
        (schema(&[t("items", &["name", "size", "color"], ""), t("notes", &["body"], ""), t("drafts", &["text"], r#""local_only":true,"#)]),
         "INSERT INTO drafts(id, text) VALUES ('d2', 'new')"),
    ];
    for (i, (schema, writes)) in steps.iter().enumerate() {
        replace_schema(&ours, schema).unwrap();
        replace_schema(&theirs, schema).unwrap();
        assert_eq!(state(&ours, &views), state(&theirs, &views), "after schema {i}");
        both(&ours, &theirs, writes);
        assert_eq!(state(&ours, &views), state(&theirs, &views), "after the writes of step {i}");
    }
}

fn fill(db: &Connection) {
    db.execute_batch(
        "INSERT INTO items(id, name) VALUES ('local', 'x');
         INSERT INTO drafts(id, text) VALUES ('d', 'draft');
         INSERT INTO ps_buckets(name, last_applied_op, last_op) VALUES ('b1', 5, 5);
         INSERT INTO ps_oplog(bucket, op_id, row_type, row_id, key, data, hash) VALUES (1, 5, 'items', 's', 'items/s/null', '{}', 1);
         INSERT INTO ps_untyped VALUES ('unknown', 'u', '{}');
         INSERT INTO ps_sync_state VALUES (2147483647, 1);
         INSERT INTO ps_stream_subscriptions(stream_name) VALUES ('s');
         INSERT INTO ps_kv VALUES ('last_seen_checkpoint_request_id', 3);",
    )
    .unwrap();
}

fn tables(db: &Connection) -> Vec<(String, Vec<Vec<Value>>)> {
    [
        "ps_buckets", "ps_oplog", "ps_crud", "ps_updated_rows", "ps_untyped", "ps_sync_state", "ps_stream_subscriptions", "ps_tx",
        "items", "drafts",
    ]
    .iter()
    .map(|t| {
        // ps_buckets: the reference's columns (oplite has two of its own).
        let columns = if *t == "ps_buckets" {
            "id, name, last_applied_op, last_op, add_checksum, op_checksum, pending_delete, count_at_last, count_since_last, downloaded_size"
        } else {
            "*"
        };
        (t.to_string(), rows(db, &format!("SELECT {columns} FROM {t} ORDER BY 1")))
    })
    .chain(std::iter::once(("ps_kv".to_string(), rows(db, "SELECT key FROM ps_kv WHERE key != 'client_id'"))))
    .collect()
}

#[test]
fn clear_and_resync_match_the_reference() {
    let schema = schema(&[t("items", &["name"], ""), t("drafts", &["text"], r#""local_only":true,"#)]);
    for call in [
        "SELECT powersync_clear(0)",
        "SELECT powersync_clear(1)",
        "SELECT powersync_clear(2)",
        "SELECT powersync_clear(3)",
        "SELECT powersync_trigger_resync(0)",
        "SELECT powersync_trigger_resync(1)",
    ] {
        let ours = oplite_initialised();
        let theirs = reference();
        init(&theirs);
        for db in [&ours, &theirs] {
            replace_schema(db, &schema).unwrap();
            fill(db);
        }
        both(&ours, &theirs, &format!("BEGIN; {call}; COMMIT;"));
        // ps_sync_state may be rewritten with another time; compare its rows' count.
        let (a, b) = (tables(&ours), tables(&theirs));
        for ((name, x), (_, y)) in a.iter().zip(b.iter()) {
            if name == "ps_sync_state" {
                assert_eq!(x.len(), y.len(), "{call}: {name}");
            } else {
                assert_eq!(x, y, "{call}: {name}");
            }
        }
    }
}
