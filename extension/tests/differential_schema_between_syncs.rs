//! Schema changes between two checkpoints, compared with the reference
//! core: the apply sees a column, a TEMP trigger or a dropped trigger added
//! since the last checkpoint, whether this connection made the change or
//! another connection to the same file did. oplite keeps what it read of
//! the schema between applies and reads it again when SQLite's schema
//! cookies (main and temp) change; these tests fail if it applies with a
//! stale copy.
mod common;

use common::diff::{rows, Arg, Checkpoints, Pair};
use common::driver::TempDir;
use common::{init_fixed_client_id, load, reference_so};
use rusqlite::Connection;
use serde_json::{json, Value};

fn notes(columns: &[&str]) -> Value {
    let columns: Vec<Value> = columns.iter().map(|c| json!({"name": c, "type": "text"})).collect();
    json!({"tables": [{"name": "notes", "columns": columns}]})
}

/// TEMP triggers on the data table that log what the apply does to it, as
/// the SDKs' diff triggers do.
const LOG_TRIGGERS: &str = "CREATE TEMP TABLE IF NOT EXISTS log(e TEXT);
    CREATE TEMP TRIGGER log_insert AFTER INSERT ON ps_data__notes BEGIN INSERT INTO log VALUES ('insert ' || new.id); END;
    CREATE TEMP TRIGGER log_delete AFTER DELETE ON ps_data__notes BEGIN INSERT INTO log VALUES ('delete ' || old.id); END;";

fn assert_same(pair: &Pair, sql: &str, what: &str) {
    assert_eq!(rows(&pair.ours, sql), rows(&pair.theirs, sql), "{what}: oplite (left) and the reference (right)");
}

#[test]
fn changes_on_the_syncing_connection_are_seen_by_the_next_apply() {
    for strategy in ["incremental", "from_scratch"] {
        for bson in [false, true] {
            let what = format!("{strategy}, bson {bson}");
            let mut pair = Pair::new();
            pair.ours.query_row("SELECT oplite_sync_local_strategy(?1)", [strategy], |_| Ok(())).unwrap();
            pair.replace_schema(&notes(&["body"]));
            pair.control("start", Arg::Null);
            let mut stream = Checkpoints::encoded(bson);
            stream.send(&mut pair, &[("notes", "n1", r#"{"body":"one","n":"1"}"#)]);

            pair.execute(LOG_TRIGGERS);
            stream.send(&mut pair, &[("notes", "n2", r#"{"body":"two","n":"2"}"#), ("notes", "n1", r#"{"body":"uno"}"#)]);
            assert_same(&pair, "SELECT e FROM log ORDER BY rowid", &format!("{what}: the triggers added after the first apply"));
            assert!(!rows(&pair.ours, "SELECT e FROM log").is_empty(), "{what}: the triggers fired");

            pair.replace_schema(&notes(&["body", "n"]));
            stream.send(&mut pair, &[("notes", "n3", r#"{"body":"three","n":"3"}"#)]);
            assert_same(&pair, "SELECT id, body, n FROM notes ORDER BY id", &format!("{what}: the column added after the second apply"));

            pair.execute("DROP TRIGGER temp.log_insert; DROP TRIGGER temp.log_delete; DELETE FROM log;");
            stream.send_ops(&mut pair, &[("REMOVE", "notes", "n1", None), ("PUT", "notes", "n4", Some(r#"{"n":"4"}"#))]);
            assert_eq!(common::schema::texts(&pair.ours, "SELECT count(*) FROM log"), ["0"], "{what}: the dropped triggers stay quiet");
            assert_same(&pair, "SELECT id, body, n FROM notes ORDER BY id", &what);
            pair.control("stop", Arg::Null);
        }
    }
}

#[test]
fn a_schema_change_by_another_connection_is_seen_by_the_next_apply() {
    let dir = TempDir::new("schema-between-syncs");
    let open = |name: &str, oplite: bool| {
        let db = Connection::open(dir.join(name)).unwrap();
        if oplite {
            oplite::register(&db).unwrap();
        } else {
            load(&db, &reference_so(), "sqlite3_powersync_init").unwrap();
        }
        db
    };
    let (ours, theirs) = (open("ours.db", true), open("theirs.db", false));
    init_fixed_client_id(&ours);
    init_fixed_client_id(&theirs);
    let mut pair = Pair { ours, theirs, trace: Vec::new(), extra_queries: Vec::new() };
    pair.replace_schema(&notes(&["body"]));
    pair.control("start", Arg::Null);
    let mut stream = Checkpoints::encoded(false);
    stream.send(&mut pair, &[("notes", "n1", r#"{"body":"one","n":"1"}"#)]);

    // The app's other connection (a write connection beside the sync one)
    // installs a schema with one more column.
    for (name, oplite) in [("ours.db", true), ("theirs.db", false)] {
        common::schema::replace_schema(&open(name, oplite), &notes(&["body", "n"]).to_string()).unwrap();
    }
    stream.send(&mut pair, &[("notes", "n2", r#"{"body":"two","n":"2"}"#)]);
    assert_same(&pair, "SELECT id, body, n FROM notes ORDER BY id", "after the other connection's schema change");
    assert_eq!(common::schema::texts(&pair.ours, "SELECT n FROM notes WHERE id = 'n2'"), ["2"]);
    pair.control("stop", Arg::Null);
}

