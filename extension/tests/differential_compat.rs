//! Differential tests of cases found by running the reference core's own
//! test suite against oplite (issue 20): read-only connections, column
//! types, refused priorities and schema names, and error codes. Each test
//! makes the same calls to both cores and compares the results and the
//! extended error codes.
mod common;

use common::driver::TempDir;
use common::*;
use rusqlite::{Connection, OpenFlags};

/// Opens `path` with one core registered, read-only or not.
fn open(path: &std::path::Path, read_only: bool, reference: bool) -> Connection {
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY
    } else {
        OpenFlags::default()
    };
    let db = Connection::open_with_flags(path, flags).unwrap();
    if reference {
        load(&db, &reference_so(), "sqlite3_powersync_init").unwrap();
    } else {
        oplite::register(&db).unwrap();
    }
    db
}

/// Runs `sql` in a transaction: Ok, or the extended error code (the
/// transaction is then rolled back).
fn in_transaction(db: &Connection, sql: &str) -> Result<(), i32> {
    db.execute_batch("BEGIN").unwrap();
    match db.query_row(sql, [], |_| Ok(())) {
        Ok(()) => {
            db.execute_batch("COMMIT").unwrap();
            Ok(())
        }
        Err(err) => {
            db.execute_batch("ROLLBACK").unwrap();
            Err(error_code(&err))
        }
    }
}

const SCHEMA: &str = r#"{"tables":[{"name":"items","columns":[{"name":"a","type":"text"}]}]}"#;
const OTHER_SCHEMA: &str =
    r#"{"tables":[{"name":"items","columns":[{"name":"b","type":"text"}]}]}"#;

/// What one core answers on read-only connections: to an initialised
/// database, to one whose client id was deleted, and to one never
/// initialised.
fn read_only_answers(dir: &TempDir, reference: bool) -> Vec<(&'static str, Result<(), i32>)> {
    let side = if reference { "reference" } else { "oplite" };
    let initialised = dir.join(&format!("{side}-initialised.db"));
    let without_id = dir.join(&format!("{side}-without-id.db"));
    let plain = dir.join(&format!("{side}-plain.db"));
    {
        let db = open(&initialised, false, reference);
        in_transaction(&db, "SELECT powersync_init()").unwrap();
        in_transaction(&db, &format!("SELECT powersync_replace_schema('{SCHEMA}')")).unwrap();
        let db = open(&without_id, false, reference);
        in_transaction(&db, "SELECT powersync_init()").unwrap();
        db.execute_batch("DELETE FROM ps_kv").unwrap();
        Connection::open(&plain)
            .unwrap()
            .execute_batch("CREATE TABLE app(x)")
            .unwrap();
    }
    let ro = open(&initialised, true, reference);
    let without_id = open(&without_id, true, reference);
    let plain = open(&plain, true, reference);
    let results = vec![
        ("init", in_transaction(&ro, "SELECT powersync_init()")),
        (
            "same schema",
            in_transaction(&ro, &format!("SELECT powersync_replace_schema('{SCHEMA}')")),
        ),
        (
            "other schema",
            in_transaction(
                &ro,
                &format!("SELECT powersync_replace_schema('{OTHER_SCHEMA}')"),
            ),
        ),
        (
            "client id",
            ro.query_row("SELECT powersync_client_id()", [], |_| Ok(()))
                .map_err(|e| error_code(&e)),
        ),
        (
            "init without id",
            in_transaction(&without_id, "SELECT powersync_init()"),
        ),
        (
            "init uninitialised",
            in_transaction(&plain, "SELECT powersync_init()"),
        ),
    ];
    println!("{side}: {results:?}");
    results
}

#[test]
fn init_on_a_read_only_connection_matches_the_reference() {
    let dir = TempDir::new("compat-read-only");
    let ours = read_only_answers(&dir, false);
    let theirs = read_only_answers(&dir, true);
    assert_eq!(
        ours, theirs,
        "oplite (left) and the reference (right) differ"
    );
    assert_eq!(ours[0], ("init", Ok(())));
}
