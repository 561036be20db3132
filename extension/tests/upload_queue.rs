//! The upload queue under the transaction shapes apps produce, differential
//! against the reference core: every scenario runs on both cores, and the
//! queue (ps_crud with its tx_ids), ps_updated_rows, the upload gate in
//! ps_kv and the app's table must end up the same. Entries are written by
//! the statement that makes them, so what SQLite's journal keeps or undoes
//! decides what is queued.
mod common;

use std::path::Path;
use std::time::Duration;

use common::schema::texts;
use common::driver::TempDir;
use common::{load, reference_so};
use rusqlite::Connection;

const SCHEMA: &str = r#"{"tables":[{"name":"items","columns":[{"name":"title","type":"text"}]}]}"#;

#[derive(Clone, Copy, Debug)]
enum Core {
    Oplite,
    Reference,
}

const CORES: [Core; 2] = [Core::Oplite, Core::Reference];

/// `path` opened with `core` registered, initialised, with [`SCHEMA`], and
/// no busy timeout (a locked database fails at once).
fn open(core: Core, path: &Path) -> Connection {
    let db = Connection::open(path).unwrap();
    match core {
        Core::Oplite => oplite::register(&db).unwrap(),
        Core::Reference => load(&db, &reference_so(), "sqlite3_powersync_init").unwrap(),
    }
    db.busy_timeout(Duration::ZERO).unwrap();
    db.execute_batch("PRAGMA journal_mode = DELETE").unwrap();
    db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
    db.execute_batch("BEGIN").unwrap();
    db.query_row("SELECT powersync_replace_schema(?1)", [SCHEMA], |_| Ok(())).unwrap();
    db.execute_batch("COMMIT").unwrap();
    db
}

/// What the queue and the table hold, one line per row: `queue: <entry>
/// tx <tx_id>`, `marked: <type>/<id>`, `kv: <key>=<value>`, `row: <id>=<title>`.
fn state(db: &Connection) -> Vec<String> {
    [
        ("queue", "SELECT data || ' tx ' || tx_id FROM ps_crud ORDER BY id"),
        ("marked", "SELECT row_type || '/' || row_id FROM ps_updated_rows ORDER BY 1"),
        // oplite_sync_iteration: oplite's own (a random token per iteration).
        ("kv", "SELECT key || '=' || value FROM ps_kv WHERE key NOT IN ('client_id', 'oplite_sync_iteration') ORDER BY 1"),
        ("row", "SELECT id || '=' || ifnull(title, 'NULL') FROM items ORDER BY id"),
        ("sequence", "SELECT name || '=' || seq FROM sqlite_sequence ORDER BY 1"),
    ]
    .iter()
    .flat_map(|(label, sql)| texts(db, sql).into_iter().map(move |row| format!("{label}: {row}")))
    .collect()
}

/// Runs `scenario` on a fresh database of each core and asserts both end
/// in the same state, which is returned (oplite's).
fn on_both(name: &str, scenario: impl Fn(&Connection, &Path) -> Vec<String>) -> Vec<String> {
    let dir = TempDir::new(name);
    let outcomes: Vec<(Vec<String>, Vec<String>)> = CORES
        .iter()
        .map(|&core| {
            let path = dir.join(&format!("{core:?}.db"));
            let db = open(core, &path);
            let answers = scenario(&db, &path);
            (answers, state(&db))
        })
        .collect();
    assert_eq!(outcomes[0], outcomes[1], "{name}: oplite (left) and the reference (right) differ");
    outcomes.into_iter().next().unwrap().1
}

/// Runs each statement, returning "ok" or the error's code for each.
fn run(db: &Connection, statements: &[&str]) -> Vec<String> {
    statements
        .iter()
        .map(|sql| match db.execute_batch(sql) {
            Ok(()) => format!("{sql}: ok"),
            Err(err) => format!("{sql}: error {}", common::error_code(&err) & 0xff),
        })
        .collect()
}

fn queued(state: &[String]) -> Vec<&String> {
    state.iter().filter(|line| line.starts_with("queue: ")).collect()
}

#[test]
fn busy_commit_then_rollback_to_keeps_the_committed_rows_entries() {
    let state = on_both("busy_commit", |db, path| {
        let reader = Connection::open(path).unwrap();
        reader.execute_batch("BEGIN; SELECT count(*) FROM sqlite_master;").unwrap();
        let mut answers = run(
            db,
            &["BEGIN; INSERT INTO items(id, title) VALUES ('c', 'z'); SAVEPOINT s; INSERT INTO items(id, title) VALUES ('d', 'w');", "COMMIT"],
        );
        assert!(answers[1].ends_with("error 5"), "COMMIT must meet the reader's lock: {answers:?}");
        reader.execute_batch("COMMIT").unwrap();
        answers.extend(run(db, &["ROLLBACK TO s", "COMMIT"]));
        answers
    });
    assert_eq!(
        state,
        [
            r#"queue: {"op":"PUT","id":"c","type":"items","data":{"title":"z"}} tx 1"#,
            "marked: items/c",
            "kv: target_checkpoint_request_id=9223372036854775807",
            "row: c=z",
            "sequence: ps_crud=1"
        ]
    );
}

#[test]
fn a_busy_commit_followed_by_rollback_queues_nothing() {
    let state = on_both("busy_rollback", |db, path| {
        let reader = Connection::open(path).unwrap();
        reader.execute_batch("BEGIN; SELECT count(*) FROM sqlite_master;").unwrap();
        let answers = run(db, &["BEGIN; INSERT INTO items(id, title) VALUES ('c', 'z');", "COMMIT", "ROLLBACK"]);
        reader.execute_batch("COMMIT").unwrap();
        answers
    });
    assert!(queued(&state).is_empty(), "{state:#?}");
}

#[test]
fn a_local_write_closes_the_upload_gate_within_its_own_transaction() {
    let checkpoint = r#"{"checkpoint":{"last_op_id":"1","buckets":[{"bucket":"b","checksum":5,"count":1}]}}"#;
    let data = r#"{"data":{"bucket":"b","data":[{"op_id":"1","op":"PUT","object_type":"items","object_id":"x1","checksum":5,"data":"{\"title\":\"server\"}"}]}}"#;
    let state = on_both("gate", |db, _| {
        let control = |op: &str, arg: Option<&str>| {
            db.query_row("SELECT powersync_control(?1, ?2)", (op, arg), |_| Ok(())).map_or_else(|e| format!("{op}: {e}"), |_| format!("{op}: ok"))
        };
        let mut answers = vec![];
        db.execute_batch("BEGIN").unwrap();
        answers.push(control("start", None));
        answers.push(control("line_text", Some(checkpoint)));
        answers.push(control("line_text", Some(data)));
        db.execute_batch("COMMIT; BEGIN IMMEDIATE; INSERT INTO items(id, title) VALUES ('x1', 'mine');").unwrap();
        answers.push(control("line_text", Some(r#"{"checkpoint_complete":{"last_op_id":"1"}}"#)));
        db.execute_batch("COMMIT").unwrap();
        answers
    });
    assert!(state.contains(&"row: x1=mine".to_owned()), "{state:#?}");
}

#[test]
fn clear_in_the_writing_transaction_leaves_no_entry() {
    let state = on_both("clear", |db, _| {
        run(db, &["BEGIN; INSERT INTO items(id, title) VALUES ('a', 'x'); SELECT powersync_clear(0); INSERT INTO items(id, title) VALUES ('b', 'y'); COMMIT;"])
    });
    assert_eq!(queued(&state).len(), 1, "{state:#?}");
}

#[test]
fn entries_are_visible_inside_the_transaction() {
    on_both("visible", |db, _| {
        db.execute_batch("BEGIN; INSERT INTO items(id, title) VALUES ('a', 'x'), ('b', 'y'); UPDATE items SET title = 'z' WHERE id = 'a'; DELETE FROM items WHERE id = 'b';").unwrap();
        let count: i64 = db.query_row("SELECT count(*) FROM ps_crud", [], |r| r.get(0)).unwrap();
        assert_eq!(count, 4);
        db.execute_batch("COMMIT").unwrap();
        vec![count.to_string()]
    });
}

#[test]
fn savepoints_and_failed_statements_keep_exactly_the_surviving_entries() {
    let state = on_both("savepoints", |db, _| {
        run(
            db,
            &[
                "BEGIN",
                "INSERT INTO items(id, title) VALUES ('a', '1')",
                "SAVEPOINT s1",
                "INSERT INTO items(id, title) VALUES ('b', '2')",
                "SAVEPOINT s2",
                "UPDATE items SET title = 'x' WHERE id = 'a'",
                "RELEASE s2",
                "SAVEPOINT s3",
                "DELETE FROM items WHERE id = 'b'",
                "ROLLBACK TO s3",
                // fails on its third row: its first two entries go with it
                "INSERT INTO items(id, title) SELECT 'c', '3' UNION ALL SELECT 'd', '4' UNION ALL SELECT 'a', 'dup'",
                "ROLLBACK TO s1",
                "INSERT INTO items(id, title) VALUES ('e', '5')",
                "RELEASE s1",
                "COMMIT",
                "SAVEPOINT outer_tx",
                "INSERT INTO items(id, title) VALUES ('f', '6')",
                "ROLLBACK TO outer_tx",
                "INSERT INTO items(id, title) VALUES ('g', '7')",
                "RELEASE outer_tx",
            ],
        )
    });
    let ids: Vec<&String> = queued(&state);
    assert_eq!(ids.len(), 3, "{state:#?}");
    for (line, (id, tx)) in ids.iter().zip([("a", 1), ("e", 1), ("g", 2)]) {
        assert!(line.contains(&format!(r#""id":"{id}""#)) && line.ends_with(&format!(" tx {tx}")), "{state:#?}");
    }
}

#[test]
fn conflict_clauses_queue_what_their_statements_keep() {
    on_both("conflicts", |db, _| {
        run(
            db,
            &[
                "INSERT INTO items(id, title) VALUES ('a', '1'), ('b', '2')",
                "INSERT OR IGNORE INTO items(id, title) VALUES ('a', 'ignored')",
                "INSERT OR REPLACE INTO items(id, title) VALUES ('b', 'replaced')",
                "INSERT OR FAIL INTO items(id, title) SELECT 'n1', 'kept' UNION ALL SELECT 'a', 'dup' UNION ALL SELECT 'n2', 'never'",
                "INSERT OR ABORT INTO items(id, title) SELECT 'n3', 'undone' UNION ALL SELECT 'a', 'dup'",
                "BEGIN; INSERT INTO items(id, title) VALUES ('r1', 'gone');",
                "INSERT OR ROLLBACK INTO items(id, title) VALUES ('a', 'dup')",
                "COMMIT",
                // a row already marked in ps_updated_rows, under OR ROLLBACK
                "UPDATE OR ROLLBACK items SET title = 'updated' WHERE id = 'a'",
                "BEGIN; INSERT INTO items(id, title) VALUES ('r2', 'x'); DELETE FROM items WHERE id = 'r2';",
                "INSERT OR ROLLBACK INTO items(id, title) VALUES ('r2', 'again')",
                "COMMIT",
            ],
        )
    });
}

#[test]
fn a_trigger_of_the_reference_writing_powersync_crud_directly() {
    on_both("reference_trigger", |db, _| {
        run(
            db,
            &[
                "CREATE TABLE notes(id TEXT PRIMARY KEY, body TEXT)",
                "CREATE TRIGGER notes_insert AFTER INSERT ON notes BEGIN
                   INSERT INTO powersync_crud(op, id, type, data) VALUES ('PUT', NEW.id, 'notes', json_object('body', NEW.body));
                 END",
                "CREATE TRIGGER notes_update AFTER UPDATE ON notes BEGIN
                   INSERT INTO powersync_crud(op, id, type, data, options) VALUES ('PATCH', NEW.id, 'notes', '{}', 16);
                   INSERT INTO powersync_crud_(data, options) VALUES (json_object('op', 'PATCH', 'id', NEW.id, 'type', 'raw', 'data', json_object()), 16);
                   INSERT INTO powersync_crud_(data) VALUES (json_object('op', 'PATCH', 'id', NEW.id, 'type', 'raw', 'data', json_object('b', 1)));
                 END",
                "BEGIN; INSERT INTO notes VALUES ('n1', 'hello'); SAVEPOINT s; INSERT INTO notes VALUES ('n2', 'gone'); ROLLBACK TO s; UPDATE notes SET body = 'same'; COMMIT;",
            ],
        )
    });
}

#[test]
fn a_write_that_queues_nothing_leaves_sqlite_sequence_alone() {
    let schema_ignoring_empty_updates = r#"{"tables":[{"name":"items","columns":[{"name":"title","type":"text"}]},
        {"name":"quiet","ignore_empty_update":true,"columns":[{"name":"title","type":"text"}]}]}"#;
    on_both("sequence", |db, _| {
        db.execute_batch("BEGIN").unwrap();
        db.query_row("SELECT powersync_replace_schema(?1)", [schema_ignoring_empty_updates], |_| Ok(())).unwrap();
        db.execute_batch("COMMIT").unwrap();
        let mut answers = run(
            db,
            &["UPDATE quiet SET title = 'x' WHERE id = 'none'", "DELETE FROM quiet", "INSERT INTO quiet(id, title) VALUES ('q', 'same')"],
        );
        answers.extend(texts(db, "SELECT name || '=' || seq FROM sqlite_sequence"));
        db.execute_batch("DELETE FROM ps_crud").unwrap();
        answers.extend(run(db, &["UPDATE quiet SET title = 'same'"]));
        answers.extend(texts(db, "SELECT name || '=' || seq FROM sqlite_sequence"));
        answers
    });
}
