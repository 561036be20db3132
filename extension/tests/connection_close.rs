//! A connection oplite has worked on closes with `sqlite3_close`, whatever it
//! did last. oplite keeps prepared statements across calls (one statement
//! cache per connection), and `sqlite3_close` refuses, with `SQLITE_BUSY`,
//! to close a connection that still has statements; rusqlite's `Drop`
//! ignores that error, so these tests call `close()` and check its result,
//! then reopen the file and check nothing was lost.
mod common;

use common::driver::{create_file_with, open_file, stored_crud, stored_rows, Driver, Encoding, TempDir, NOTES_SCHEMA};
use common::schema::texts;
use oplite_test_data::{ServerModel, ServerOptions};
use rusqlite::Connection;

/// Closes `db`, which must succeed.
fn close(db: Connection, what: &str) {
    if let Err((_, e)) = db.close() {
        panic!("{what}: sqlite3_close failed: {e}");
    }
}

/// `powersync_control(op, payload)` in its own transaction, as the SDKs call
/// it; a failed call's transaction is rolled back.
fn control(db: &Connection, op: &str, payload: Option<&str>) -> rusqlite::Result<()> {
    db.execute_batch("BEGIN")?;
    match db.query_row("SELECT powersync_control(?1, ?2)", (op, payload), |_| Ok(())) {
        Ok(()) => db.execute_batch("COMMIT"),
        Err(e) => {
            db.execute_batch("ROLLBACK")?;
            Err(e)
        }
    }
}

fn integrity(db: &Connection) -> Vec<String> {
    texts(db, "PRAGMA integrity_check")
}

#[test]
fn closes_after_syncs_applies_and_uploads() {
    let dir = TempDir::new("close-sessions");
    for seed in 0..6u64 {
        let path = dir.join(&format!("{seed}.db"));
        // Half the sessions have typed tables (their row writers' statements
        // are cached too), half keep rows in ps_untyped.
        create_file_with(&path, (seed % 2 == 0).then_some(NOTES_SCHEMA));
        let encoding = if seed % 3 == 0 { Encoding::Bson } else { Encoding::Json };
        let mut driver = Driver::new(open_file(&path, None), ServerModel::new(seed, ServerOptions::default()), encoding);
        driver.session(6);
        let (rows, crud) = (stored_rows(&driver.db), stored_crud(&driver.db));
        let Driver { db, .. } = driver;
        close(db, &format!("seed {seed}"));

        let db = open_file(&path, None);
        assert_eq!(integrity(&db), ["ok"], "seed {seed}");
        assert_eq!(stored_rows(&db), rows, "seed {seed}: synced rows after reopening");
        assert_eq!(stored_crud(&db), crud, "seed {seed}: the upload queue after reopening");
        close(db, &format!("seed {seed}, reopened"));
    }
}

#[test]
fn closes_with_a_transaction_open_and_rolls_it_back() {
    let dir = TempDir::new("close-open-tx");
    let path = dir.join("open.db");
    create_file_with(&path, Some(NOTES_SCHEMA));
    let db = open_file(&path, None);
    db.execute_batch("INSERT INTO notes (id, body) VALUES ('kept', 'committed')").unwrap();
    db.execute_batch("BEGIN").unwrap();
    db.execute_batch("INSERT INTO notes (id, body) VALUES ('lost', 'never committed')").unwrap();
    db.query_row("SELECT powersync_control('start', NULL)", [], |_| Ok(())).unwrap();
    close(db, "inside BEGIN");

    let db = open_file(&path, None);
    assert_eq!(integrity(&db), ["ok"]);
    assert_eq!(texts(&db, "SELECT id FROM notes ORDER BY id"), ["kept"]);
    assert_eq!(texts(&db, "SELECT count(*) FROM ps_crud"), ["1"], "only the committed write is queued");
    close(db, "reopened");
}

#[test]
fn closes_after_failed_calls_and_schema_changes() {
    let dir = TempDir::new("close-failures");
    let path = dir.join("failures.db");
    create_file_with(&path, Some(NOTES_SCHEMA));
    let db = open_file(&path, None);
    control(&db, "start", None).unwrap();
    let bad = control(&db, "line_text", Some(r#"{"checkpoint": 7}"#));
    assert!(bad.is_err(), "a malformed checkpoint line is refused");
    let bad = db.query_row("SELECT powersync_replace_schema('not json')", [], |_| Ok(()));
    assert!(bad.is_err(), "a schema that is not JSON is refused");
    // A schema change drops and recreates the views and triggers the row
    // writers' cached statements were prepared against.
    common::schema::replace_schema(&db, r#"{"tables":[{"name":"notes","columns":[{"name":"body","type":"text"},{"name":"n","type":"integer"}]}]}"#).unwrap();
    db.execute_batch("INSERT INTO notes (id, body, n) VALUES ('a', 'after', 1)").unwrap();
    control(&db, "stop", None).unwrap();
    close(db, "after failures");

    let db = open_file(&path, None);
    assert_eq!(integrity(&db), ["ok"]);
    assert_eq!(texts(&db, "SELECT body || n FROM notes"), ["after1"]);
    close(db, "reopened");
}

#[test]
fn a_second_connection_keeps_its_own_statements() {
    // Two connections to one file, each with its cache, used in turn; each
    // closes on its own while the other stays open and usable.
    let dir = TempDir::new("close-two");
    let path = dir.join("two.db");
    create_file_with(&path, Some(NOTES_SCHEMA));
    let (first, second) = (open_file(&path, None), open_file(&path, None));
    for (i, db) in [&first, &second, &first, &second].into_iter().enumerate() {
        db.execute("INSERT INTO notes (id, body) VALUES (?1, 'x')", [format!("n{i}")]).unwrap();
        control(db, "start", None).unwrap();
        control(db, "stop", None).unwrap();
    }
    close(first, "first");
    second.execute_batch("INSERT INTO notes (id, body) VALUES ('n4', 'x')").unwrap();
    assert_eq!(texts(&second, "SELECT count(*) FROM ps_crud"), ["5"]);
    close(second, "second");
}
