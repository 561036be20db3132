//! Faults: I/O errors on reads, writes and syncs, a full disk (a write
//! budget in the VFS, and `PRAGMA max_page_count`), and `SQLITE_BUSY` from a
//! second writer, injected while a data line is stored and while a
//! checkpoint is applied, in WAL and rollback-journal modes.
//!
//! For each fault the call (or its COMMIT) must fail with the matching
//! SQLite code and a message saying what oplite was doing; after the host's
//! ROLLBACK the database must pass `PRAGMA integrity_check` and hold exactly
//! what it held before the transaction; and the next iteration must resume
//! from the stored buckets and converge to the server's state. A busy
//! database may instead be retried within the same iteration.
//!
//! The I/O faults are placed systematically: a clean run counts the reads,
//! writes, syncs and bytes of the call, then the fault is put at evenly
//! spread points of those (`OPLITE_FAULT_POINTS` per kind, default 8), for `OPLITE_FAULT_SEEDS`
//! seeds per journal mode (default 1).
mod common;

use std::time::{Duration, Instant};

use common::driver::{create_file, open_file, snapshot, Driver, Encoding, TempDir};
use common::error_code;
use common::fault_vfs::{self, Plan};
use oplite_test_data::{ServerModel, ServerOptions};
use rusqlite::ffi;
use rusqlite::types::Value as SqlValue;
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// Storing a data line.
    Store,
    /// Applying a checkpoint (`checkpoint_complete`).
    Apply,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
    Sync,
    Full,
}

fn server(seed: u64) -> ServerModel {
    ServerModel::new(
        seed,
        ServerOptions { buckets: 2, ids_per_type: 150, page_size: 60, ..Default::default() },
    )
}

/// A database that synced once, then an iteration that downloads a larger
/// checkpoint up to the call under test. Returns the driver, the line under
/// test and the lines that follow it (data lines, then the completion).
fn prepare_with_rest(dir: &TempDir, seed: u64, journal: &str, target: Target) -> (Driver, Value, Vec<Value>) {
    let path = dir.join(&format!("faults-{seed}-{journal}.db"));
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(path.with_extension("db-wal"));
    create_file(&path);
    fault_vfs::register();
    let db = open_file(&path, Some(fault_vfs::NAME));
    db.execute_batch(&format!(
        "PRAGMA journal_mode = {journal}; PRAGMA synchronous = FULL; PRAGMA cache_size = 8;"
    ))
    .unwrap();
    let mut driver = Driver::new(db, server(seed), if seed % 2 == 0 { Encoding::Json } else { Encoding::Bson });
    driver.server.mutate(150);
    driver.converge();
    for _ in 0..3 {
        driver.server.mutate(100);
    }
    let after = driver.start();
    let line = driver.server.checkpoint_line();
    driver.send(&line);
    let mut lines: Vec<Value> = driver.server.data_lines(&after).into_iter().map(|(_, line)| line).collect();
    lines.push(serde_json::json!({"checkpoint_complete": {"last_op_id": driver.server.last_op_id().to_string()}}));
    if target == Target::Apply {
        for line in &lines[..lines.len() - 1] {
            driver.send(line);
        }
        lines.drain(..lines.len() - 1);
    }
    let line = lines.remove(0);
    (driver, line, lines)
}

fn prepare(dir: &TempDir, seed: u64, journal: &str, target: Target) -> (Driver, Value) {
    let (driver, line, _) = prepare_with_rest(dir, seed, journal, target);
    (driver, line)
}

/// Where a failure surfaced.
#[derive(Debug)]
enum Failure {
    /// BEGIN failed.
    Begin(rusqlite::Error),
    /// `powersync_control` returned an error.
    Call(rusqlite::Error),
    /// The call succeeded and COMMIT failed.
    Commit(rusqlite::Error),
}

/// BEGIN IMMEDIATE; powersync_control; COMMIT, as a host does; ROLLBACK
/// on failure.
fn host_call(db: &rusqlite::Connection, op: &str, payload: &SqlValue) -> Result<String, Failure> {
    host_call_with(db, "BEGIN IMMEDIATE", op, payload)
}

fn host_call_with(db: &rusqlite::Connection, begin: &str, op: &str, payload: &SqlValue) -> Result<String, Failure> {
    db.execute_batch(begin).map_err(Failure::Begin)?;
    let result = match db.query_row("SELECT powersync_control(?1, ?2)", (op, payload), |r| r.get::<_, String>(0)) {
        Err(e) => Err(Failure::Call(e)),
        Ok(out) => db.execute_batch("COMMIT").map(|_| out).map_err(Failure::Commit),
    };
    if result.is_err() && !db.is_autocommit() {
        db.execute_batch("ROLLBACK").expect("ROLLBACK after a failure");
    }
    result
}

fn integrity(db: &rusqlite::Connection) -> String {
    db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap()
}

#[derive(Default, Debug)]
struct Tally {
    /// Calls run with a fault planned.
    runs: u64,
    /// I/O calls failed (a full disk fails every write after the budget).
    injected: u64,
    failed_calls: u64,
    failed_commits: u64,
    failed_begins: u64,
    /// Faults SQLite absorbed (the call and commit succeeded anyway).
    absorbed: u64,
}

fn plan(kind: Kind, n: u64) -> Plan {
    match kind {
        Kind::Read => Plan { fail_read_at: Some(n), ..Default::default() },
        Kind::Write => Plan { fail_write_at: Some(n), ..Default::default() },
        Kind::Sync => Plan { fail_sync_at: Some(n), ..Default::default() },
        Kind::Full => Plan { write_budget: Some(n), ..Default::default() },
    }
}

/// One injected fault at point `n` of `kind`, then recovery.
fn inject(dir: &TempDir, seed: u64, journal: &str, target: Target, kind: Kind, n: u64, tally: &mut Tally) {
    let context = format!("seed {seed}, {journal}, {target:?}, {kind:?} at {n}");
    let (mut driver, line) = prepare(dir, seed, journal, target);
    let before = snapshot(&driver.db);
    let (op, payload) = driver.encode(&line);
    fault_vfs::arm(plan(kind, n));
    let result = host_call(&driver.db, op, &payload);
    let counts = fault_vfs::disarm();
    tally.injected += counts.faults;
    tally.runs += 1;
    assert!(counts.faults > 0, "{context}: no fault injected ({counts:?})");
    match result {
        Ok(_) => {
            // SQLite absorbed the fault (e.g. a failed checkpoint of the
            // WAL after the commit). The database must still be sound.
            tally.absorbed += 1;
            assert_eq!(integrity(&driver.db), "ok", "{context}");
        }
        Err(failure) => {
            let (err, from_call) = match &failure {
                Failure::Call(e) => (e, true),
                Failure::Begin(e) | Failure::Commit(e) => (e, false),
            };
            let code = error_code(err) & 0xff;
            let expected = if kind == Kind::Full { ffi::SQLITE_FULL } else { ffi::SQLITE_IOERR };
            assert_eq!(code, expected, "{context}: {failure:?}");
            let message = err.to_string();
            if from_call {
                tally.failed_calls += 1;
                // oplite says what it was doing: "<context>: <SQLite's message>".
                assert!(
                    message.split_once(": ").is_some_and(|(context, _)| context.len() > 3),
                    "{context}: the message does not say what failed: {message}"
                );
            } else if matches!(failure, Failure::Commit(_)) {
                tally.failed_commits += 1;
            } else {
                tally.failed_begins += 1;
            }
            assert!(driver.db.is_autocommit(), "{context}: the transaction is still open");
            assert_eq!(integrity(&driver.db), "ok", "{context}");
            assert_eq!(snapshot(&driver.db), before, "{context}: the failed transaction left changes ({message})");
        }
    }
    // The next iteration recovers.
    driver.control("stop", SqlValue::Null);
    driver.converge();
    assert_eq!(integrity(&driver.db), "ok", "{context}: after recovery");
}

fn points() -> u64 {
    std::env::var("OPLITE_FAULT_POINTS").ok().and_then(|n| n.parse().ok()).unwrap_or(8)
}

#[test]
fn io_errors_and_a_full_disk_roll_back_and_the_next_iteration_recovers() {
    let started = Instant::now();
    let dir = TempDir::new("faults");
    let mut tally = Tally::default();
    let seeds = std::env::var("OPLITE_FAULT_SEEDS").ok().and_then(|n| n.parse().ok()).unwrap_or(1u64);
    for seed in 0..seeds {
        for (j, journal) in ["WAL", "DELETE"].into_iter().enumerate() {
            let seed = seed * 2 + j as u64;
            for target in [Target::Store, Target::Apply] {
                // A clean run counts the I/O of the call.
                let (driver, line) = prepare(&dir, seed, journal, target);
                let (op, payload) = driver.encode(&line);
                fault_vfs::arm(Plan::default());
                host_call(&driver.db, op, &payload).unwrap();
                let counts = fault_vfs::disarm();
                drop(driver);
                for kind in [Kind::Read, Kind::Write, Kind::Sync, Kind::Full] {
                    let total = match kind {
                        Kind::Read => counts.reads,
                        Kind::Write => counts.writes,
                        Kind::Sync => counts.syncs,
                        Kind::Full => counts.bytes,
                    };
                    if total == 0 {
                        continue;
                    }
                    let n_points = points().min(total);
                    for i in 0..n_points {
                        let n = match kind {
                            // A budget of n bytes: the write that would pass it fails.
                            Kind::Full => i * total / n_points,
                            _ => 1 + i * total / n_points,
                        };
                        inject(&dir, seed, journal, target, kind, n, &mut tally);
                    }
                }
            }
        }
    }
    println!(
        "faults: {} runs with a fault, {} I/O calls failed ({} failed the call, {} failed the commit, {} failed BEGIN, {} absorbed by SQLite), {:.1}s",
        tally.runs,
        tally.injected,
        tally.failed_calls,
        tally.failed_commits,
        tally.failed_begins,
        tally.absorbed,
        started.elapsed().as_secs_f64()
    );
    assert!(tally.failed_calls > 0 && tally.failed_commits > 0, "{tally:?}");
}

#[test]
fn max_page_count_gives_sqlite_full_and_nothing_changes() {
    let dir = TempDir::new("full");
    for target in [Target::Store, Target::Apply] {
        let (mut driver, line) = prepare(&dir, 7, "WAL", target);
        let before = snapshot(&driver.db);
        let pages: i64 = driver.db.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap();
        driver.db.execute_batch(&format!("PRAGMA max_page_count = {pages}")).unwrap();
        // Make the call need new pages: a line with many large rows.
        let line = if target == Target::Store {
            let mut line = line;
            for op in line["data"]["data"].as_array_mut().unwrap() {
                if op["op"] == "PUT" {
                    op["data"] = Value::from(format!("{{\"blob\":\"{}\"}}", "x".repeat(40_000)));
                }
            }
            // Checksums are checked at completion, not here.
            line
        } else {
            line
        };
        let (op, payload) = driver.encode(&line);
        match host_call(&driver.db, op, &payload) {
            Err(Failure::Begin(err)) | Err(Failure::Call(err)) | Err(Failure::Commit(err)) => {
                assert_eq!(error_code(&err) & 0xff, ffi::SQLITE_FULL, "{target:?}: {err}");
                assert!(err.to_string().contains("full"), "{target:?}: {err}");
            }
            Ok(_) => {
                // The apply may fit in the free pages; then it must have worked.
                assert_eq!(target, Target::Apply, "storing 40 kB rows needed no new page?");
                continue;
            }
        }
        assert_eq!(integrity(&driver.db), "ok");
        assert_eq!(snapshot(&driver.db), before, "{target:?}");
        driver.db.execute_batch("PRAGMA max_page_count = 1073741823").unwrap();
        driver.control("stop", SqlValue::Null);
        driver.converge();
    }
}

/// A second connection holds the write lock: the sync's call fails with
/// SQLITE_BUSY (no busy timeout) and changes nothing; retried after the
/// other writer commits, in the same iteration, the line is stored and the
/// checkpoint applies with no checksum failure.
#[test]
fn busy_from_a_second_writer_is_retryable_within_the_iteration() {
    let dir = TempDir::new("busy");
    for (journal, target) in [("WAL", Target::Store), ("WAL", Target::Apply), ("DELETE", Target::Store), ("DELETE", Target::Apply)] {
        let (mut driver, line, rest) = prepare_with_rest(&dir, 3, journal, target);
        driver.db.busy_timeout(Duration::ZERO).unwrap();
        let path = driver.db.path().unwrap().to_owned();
        let other = rusqlite::Connection::open(&path).unwrap();
        other.execute_batch("CREATE TABLE IF NOT EXISTS app(x); BEGIN IMMEDIATE; INSERT INTO app VALUES (1);").unwrap();
        let before = snapshot(&driver.db);
        let (op, payload) = driver.encode(&line);
        // A deferred BEGIN, so that the busy error comes from inside the call.
        let err = match host_call_with(&driver.db, "BEGIN", op, &payload) {
            Err(Failure::Call(e)) => e,
            other => panic!("{journal} {target:?}: expected the call to fail while another connection writes: {other:?}"),
        };
        assert_eq!(error_code(&err) & 0xff, ffi::SQLITE_BUSY, "{journal} {target:?}: {err}");
        assert!(
            // (The first write of a completion is the apply's first row.)
            ["storing a data line", "recording a validated checkpoint", "storing an untyped row"]
                .iter()
                .any(|m| err.to_string().contains(m)),
            "{journal} {target:?}: {err}"
        );
        assert_eq!(snapshot(&driver.db), before, "{journal} {target:?}");
        other.execute_batch("COMMIT").unwrap();
        // Retry the same line, then finish the download.
        let mut out: Value = serde_json::from_str(&host_call(&driver.db, op, &payload).unwrap()).unwrap();
        for line in rest {
            out = driver.send(&line);
        }
        assert!(out.to_string().contains("DidCompleteSync"), "{journal} {target:?}: not applied after a retry: {out}");
        assert_eq!(
            common::driver::stored_rows(&driver.db),
            common::driver::server_rows(&driver.server),
            "{journal} {target:?}"
        );
        driver.control("stop", SqlValue::Null);
        driver.converge();
    }
}

/// In WAL mode a transaction that read before another connection
/// committed cannot write: SQLITE_BUSY_SNAPSHOT, nothing changes, and a
/// retry in a new transaction works.
#[test]
fn busy_snapshot_after_a_concurrent_commit_is_retryable() {
    let dir = TempDir::new("busy-snapshot");
    let (driver, line) = prepare(&dir, 5, "WAL", Target::Store);
    let other = rusqlite::Connection::open(driver.db.path().unwrap()).unwrap();
    other.execute_batch("CREATE TABLE app(x)").unwrap();
    let before = snapshot(&driver.db);
    let (op, payload) = driver.encode(&line);
    driver.db.execute_batch("BEGIN").unwrap();
    let _: i64 = driver.db.query_row("SELECT count(*) FROM ps_buckets", [], |r| r.get(0)).unwrap();
    other.execute_batch("INSERT INTO app VALUES (1)").unwrap();
    let err = driver
        .db
        .query_row("SELECT powersync_control(?1, ?2)", (op, &payload), |r| r.get::<_, String>(0))
        .unwrap_err();
    assert_eq!(error_code(&err), ffi::SQLITE_BUSY_SNAPSHOT, "{err}");
    assert!(err.to_string().contains("storing a data line"), "{err}");
    driver.db.execute_batch("ROLLBACK").unwrap();
    assert_eq!(snapshot(&driver.db), before);
    host_call(&driver.db, op, &payload).unwrap();
}

/// With a busy timeout a call in BEGIN IMMEDIATE waits for the other
/// writer and succeeds. (A deferred BEGIN would read first and then get
/// SQLITE_BUSY without waiting, as SQLite does in WAL mode to avoid a
/// deadlock: hosts run powersync_control in BEGIN IMMEDIATE.)
#[test]
fn a_busy_timeout_waits_for_the_other_writer() {
    let dir = TempDir::new("busy-wait");
    let (driver, line) = prepare(&dir, 9, "WAL", Target::Apply);
    let path = driver.db.path().unwrap().to_owned();
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let other = std::thread::spawn(move || {
        let other = rusqlite::Connection::open(&path).unwrap();
        other.execute_batch("CREATE TABLE IF NOT EXISTS app(x); BEGIN IMMEDIATE; INSERT INTO app VALUES (1);").unwrap();
        locked_tx.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        other.execute_batch("COMMIT").unwrap();
    });
    locked_rx.recv().unwrap();
    driver.db.busy_timeout(Duration::from_secs(20)).unwrap();
    let started = Instant::now();
    let (op, payload) = driver.encode(&line);
    let out = host_call(&driver.db, op, &payload).unwrap();
    assert!(out.contains("DidCompleteSync"), "{out}");
    assert!(started.elapsed() >= Duration::from_millis(200), "did not wait: {:?}", started.elapsed());
    other.join().unwrap();
}

/// A host whose transaction is rolled back after a successful call (a
/// failed COMMIT, or a rollback for its own reasons) and that goes on with
/// the same iteration must not end with wrong data or wiped buckets: the
/// iteration notices at its next call, fails with a message saying so, and
/// the next iteration resumes from what the database holds.
#[test]
fn a_rolled_back_call_ends_the_iteration_instead_of_corrupting_it() {
    let dir = TempDir::new("rolled-back");
    // A data line whose transaction is rolled back, then the next line.
    let (mut driver, line, rest) = prepare_with_rest(&dir, 11, "WAL", Target::Store);
    let last_ops = common::driver::stored_last_ops(&driver.db);
    let (op, payload) = driver.encode(&line);
    driver.db.execute_batch("BEGIN IMMEDIATE").unwrap();
    driver.db.query_row("SELECT powersync_control(?1, ?2)", (op, &payload), |_| Ok(())).unwrap();
    driver.db.execute_batch("ROLLBACK").unwrap();
    let (op, payload) = driver.encode(&rest[0]);
    let err = driver.raw_control(op, &payload).unwrap_err();
    assert_eq!(error_code(&err), ffi::SQLITE_MISUSE, "{err}");
    assert!(err.to_string().contains("rolled back"), "{err}");
    // Nothing was wiped: the buckets are where they were before the
    // rolled-back line, and the next iteration resumes from there (converge
    // checks that only ops above them are downloaded).
    assert_eq!(common::driver::stored_last_ops(&driver.db), last_ops);
    driver.converge();

    // A checkpoint that drops a bucket, rolled back and sent again in the
    // same iteration: without the check the dropped bucket's rows would
    // survive the apply.
    let mut driver = {
        let (driver, _) = prepare(&dir, 13, "WAL", Target::Store);
        driver
    };
    driver.control("stop", SqlValue::Null);
    driver.converge();
    let dropped = driver.server.buckets.remove(0);
    assert!(!dropped.ops.is_empty());
    driver.server.mutate(5);
    driver.start();
    let line = driver.server.checkpoint_line();
    let (op, payload) = driver.encode(&line);
    driver.db.execute_batch("BEGIN IMMEDIATE").unwrap();
    driver.db.query_row("SELECT powersync_control(?1, ?2)", (op, &payload), |_| Ok(())).unwrap();
    driver.db.execute_batch("ROLLBACK").unwrap();
    let err = driver.raw_control(op, &payload).unwrap_err();
    assert!(err.to_string().contains("rolled back"), "{err}");
    driver.converge();
}

/// Local writes through a view: the upload queue buffers a transaction's
/// entries and writes them at commit. An I/O error or a full disk at any
/// write or sync of that commit must leave no row, no entry and no tx_id
/// behind, and the next transaction must queue exactly its own entries.
#[test]
fn faults_while_committing_local_writes_through_a_view_leave_nothing_behind() {
    use common::driver::{create_file_with, NOTES_SCHEMA};
    let dir = TempDir::new("view-faults");
    let mut runs = 0;
    for journal in ["WAL", "DELETE"] {
        let path = dir.join(&format!("notes-{journal}.db"));
        let fresh = || {
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_file(path.with_extension("db-wal"));
            create_file_with(&path, Some(NOTES_SCHEMA));
            fault_vfs::register();
            let db = open_file(&path, Some(fault_vfs::NAME));
            db.execute_batch(&format!("PRAGMA journal_mode = {journal}; PRAGMA synchronous = FULL;")).unwrap();
            db.execute_batch("BEGIN; INSERT INTO notes(id, body) VALUES ('kept', 'before'); COMMIT;").unwrap();
            db
        };
        let write = |db: &rusqlite::Connection, tag: &str| -> rusqlite::Result<()> {
            db.execute_batch("BEGIN IMMEDIATE")?;
            let result = (|| {
                for i in 0..3 {
                    db.execute("INSERT INTO notes(id, body) VALUES (?1, ?2)", (format!("{tag}{i}"), "x".repeat(2000)))?;
                }
                db.execute("UPDATE notes SET body = ?1 WHERE id = 'kept'", [tag])?;
                db.execute_batch("COMMIT")
            })();
            if result.is_err() && !db.is_autocommit() {
                db.execute_batch("ROLLBACK")?;
            }
            result
        };
        // A clean run counts the writes and syncs of the transaction.
        let db = fresh();
        fault_vfs::arm(Plan::default());
        write(&db, "clean").unwrap();
        let counts = fault_vfs::disarm();
        drop(db);
        let plans: Vec<Plan> = (1..=counts.writes)
            .map(|n| Plan { fail_write_at: Some(n), ..Default::default() })
            .chain((1..=counts.syncs).map(|n| Plan { fail_sync_at: Some(n), ..Default::default() }))
            .chain([0, counts.bytes / 3, counts.bytes * 2 / 3].map(|b| Plan { write_budget: Some(b), ..Default::default() }))
            .collect();
        for plan in plans {
            let context = format!("{journal} {plan:?}");
            let db = fresh();
            let before = snapshot(&db);
            fault_vfs::arm(plan);
            let result = write(&db, "failed");
            let faults = fault_vfs::disarm().faults;
            assert!(faults > 0, "{context}: no fault");
            runs += 1;
            assert_eq!(integrity(&db), "ok", "{context}");
            if let Err(e) = result {
                let code = error_code(&e) & 0xff;
                assert!(code == ffi::SQLITE_IOERR || code == ffi::SQLITE_FULL, "{context}: {e}");
                assert_eq!(snapshot(&db), before, "{context}: the failed transaction left something ({e})");
            }
            // The next transaction queues exactly its own four entries, with
            // one tx_id.
            let queued_before: i64 = db.query_row("SELECT count(*) FROM ps_crud", [], |r| r.get(0)).unwrap();
            write(&db, "next").unwrap();
            let entries: Vec<(String, i64)> = db
                .prepare("SELECT data ->> 'id', tx_id FROM ps_crud ORDER BY id")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .map(|r| r.unwrap())
                .skip(queued_before as usize)
                .collect();
            let ids: Vec<&str> = entries.iter().map(|(id, _)| id.as_str()).collect();
            assert_eq!(ids, ["next0", "next1", "next2", "kept"], "{context}");
            assert!(entries.iter().all(|(_, tx)| *tx == entries[0].1), "{context}: tx_ids {entries:?}");
            let failed_rows: i64 = db.query_row("SELECT count(*) FROM ps_crud WHERE data ->> 'id' LIKE 'failed%'", [], |r| r.get(0)).unwrap();
            let committed: i64 = db.query_row("SELECT count(*) FROM notes WHERE id LIKE 'failed%'", [], |r| r.get(0)).unwrap();
            assert_eq!(failed_rows, committed, "{context}: entries and rows of the faulted transaction disagree");
        }
    }
    println!("view faults: {runs} runs with a fault at a write, sync or byte budget of the commit");
}

/// A connection that wrote through a view (the upload queue's tables cache
/// statements) closes: sqlite3_close() succeeds after a committed and after
/// a rolled-back local write, so neither memory nor the file is leaked.
#[test]
fn a_connection_that_wrote_through_a_view_closes() {
    use common::driver::{create_file_with, NOTES_SCHEMA};
    let dir = TempDir::new("close");
    let path = dir.join("app.db");
    create_file_with(&path, Some(NOTES_SCHEMA));
    for end in ["COMMIT", "ROLLBACK"] {
        let db = open_file(&path, None);
        db.execute_batch(&format!("BEGIN IMMEDIATE; INSERT INTO notes(id, body) VALUES ('{end}', 'x'); {end};")).unwrap();
        if let Err((_, e)) = db.close() {
            panic!("close after {end}: {e}");
        }
    }
    let db = open_file(&path, None);
    let queued: i64 = db.query_row("SELECT count(*) FROM ps_crud", [], |r| r.get(0)).unwrap();
    assert_eq!(queued, 1);
    db.close().unwrap();
    // The last connection closed: WAL mode removes its files.
    assert!(!path.with_extension("db-wal").exists(), "the WAL is still there: a connection was leaked");
}
