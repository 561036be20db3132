//! A large local transaction keeps memory flat: the upload queue is written
//! to ps_crud as the rows are, so nothing of it grows in memory with the
//! transaction. One test in its own binary, so no other test's allocations
//! move the process's numbers.
mod common;

use std::time::Duration;

use common::driver::TempDir;
use common::{load, reference_so};
use rusqlite::Connection;

const ROWS: usize = 100_000;
const LIMIT: i64 = 10 << 20;

/// Resident set size of this process, in bytes.
fn rss() -> i64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: i64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// Bytes SQLite has allocated (page cache, statements, and the extension's
/// own SQLite allocations).
fn sqlite_memory() -> i64 {
    // SAFETY: a read of a counter, no arguments.
    unsafe { rusqlite::ffi::sqlite3_memory_used() }
}

/// Writes ROWS rows of 1 KB through the view in one transaction; returns
/// (growth of SQLite's memory, growth of the RSS) from before the
/// transaction to just before COMMIT, with the queue checked complete.
fn one_large_transaction(db: &Connection) -> (i64, i64) {
    db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
    let schema = r#"{"tables":[{"name":"items","columns":[{"name":"title","type":"text"}]}]}"#;
    db.execute_batch("BEGIN").unwrap();
    db.query_row("SELECT powersync_replace_schema(?1)", [schema], |_| Ok(())).unwrap();
    db.execute_batch("COMMIT").unwrap();
    let title = "x".repeat(1000);
    let (memory, resident) = (sqlite_memory(), rss());
    db.execute_batch("BEGIN").unwrap();
    {
        let mut insert = db.prepare("INSERT INTO items(id, title) VALUES (?1, ?2)").unwrap();
        for i in 0..ROWS {
            insert.execute((format!("item-{i:06}"), &title)).unwrap();
        }
    }
    let growth = (sqlite_memory() - memory, rss() - resident);
    let queued: i64 = db.query_row("SELECT count(*) FROM ps_crud", [], |r| r.get(0)).unwrap();
    assert_eq!(queued, ROWS as i64);
    db.execute_batch("COMMIT").unwrap();
    growth
}

#[test]
fn a_100k_row_transaction_of_1kb_rows_keeps_memory_flat() {
    let dir = TempDir::new("queue_memory");
    let mut report = Vec::new();
    for (core, path) in [("oplite", dir.join("oplite.db")), ("reference", dir.join("reference.db"))] {
        let db = Connection::open(&path).unwrap();
        db.busy_timeout(Duration::ZERO).unwrap();
        if core == "oplite" {
            oplite::register(&db).unwrap();
        } else {
            load(&db, &reference_so(), "sqlite3_powersync_init").unwrap();
        }
        let (memory, resident) = one_large_transaction(&db);
        report.push(format!("{core}: SQLite memory +{} KiB, RSS +{} KiB", memory >> 10, resident >> 10));
        assert!(memory < LIMIT && resident < LIMIT, "memory grew with the transaction: {report:?}");
    }
    eprintln!("{}", report.join("; "));
}
