//! Concurrency on a file database in WAL mode:
//!
//! - readers on other connections never wait for a large checkpoint to
//!   apply: the longest read during the apply is measured (200k ops by
//!   default, `OPLITE_APPLY_OPS=1000000` for the reported run);
//! - local writes from other connections during the apply wait (busy
//!   timeout) or fail with SQLITE_BUSY and are retried, and none is lost:
//!   they are queued afterwards and keep the next checkpoint from being
//!   applied over them;
//! - two connections, and two processes, syncing the same file are
//!   detected: the iteration that was superseded fails with SQLITE_MISUSE
//!   and a message saying so, and writes nothing.
mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::driver::{create_file, open_file, snapshot, Driver, Encoding, TempDir};
use common::error_code;
use oplite_test_data::{ServerModel, ServerOptions};
use rusqlite::types::Value as SqlValue;
use rusqlite::{ffi, Connection};
use serde_json::{json, Value};

const OPS_PER_LINE: usize = 1000;
const BUCKETS: usize = 4;

fn checksum(id: usize) -> u32 {
    ((id as u64 * 2_654_435_761) % 4_294_967_291) as u32
}

fn checkpoint(n_ops: usize) -> Value {
    let mut sums = [0u32; BUCKETS];
    for id in 1..=n_ops {
        let bucket = ((id - 1) / OPS_PER_LINE) % BUCKETS;
        sums[bucket] = sums[bucket].wrapping_add(checksum(id));
    }
    json!({"checkpoint": {"last_op_id": n_ops.to_string(), "buckets":
        (0..BUCKETS).map(|b| json!({"bucket": format!("b{b}"), "checksum": sums[b], "count": n_ops / BUCKETS})).collect::<Vec<_>>()}})
}

fn data_line(line: usize, n_ops: usize) -> String {
    let first = line * OPS_PER_LINE + 1;
    let last = ((line + 1) * OPS_PER_LINE).min(n_ops);
    let ops: Vec<Value> = (first..=last)
        .map(|id| {
            json!({"op_id": id.to_string(), "op": "PUT", "object_type": "items", "object_id": format!("item{id}"),
                   "checksum": checksum(id), "data": json!({"n": id, "name": format!("item number {id}")}).to_string()})
        })
        .collect();
    json!({"data": {"bucket": format!("b{}", line % BUCKETS), "data": ops}}).to_string()
}

fn control(db: &Connection, op: &str, payload: SqlValue) -> rusqlite::Result<String> {
    db.execute_batch("BEGIN IMMEDIATE")?;
    match db.query_row("SELECT powersync_control(?1, ?2)", (op, &payload), |r| r.get::<_, Option<String>>(0)) {
        Ok(out) => {
            db.execute_batch("COMMIT")?;
            Ok(out.unwrap_or_default())
        }
        Err(e) => {
            db.execute_batch("ROLLBACK").unwrap();
            Err(e)
        }
    }
}

/// A local write as the app's triggers would make it, from any connection.
fn local_write(db: &Connection, id: &str) -> rusqlite::Result<()> {
    db.execute_batch("BEGIN IMMEDIATE")?;
    let result = (|| {
        db.execute(
            "INSERT INTO ps_crud(data, tx_id) VALUES(json_object('op', 'PUT', 'id', ?1, 'type', 'items', 'data', json_object('local', 1)), 1)",
            [id],
        )?;
        db.execute_batch(
            "INSERT OR REPLACE INTO ps_kv(key, value) VALUES('target_checkpoint_request_id', 9223372036854775807)",
        )?;
        db.execute("INSERT OR IGNORE INTO ps_updated_rows(row_type, row_id) VALUES('items', ?1)", [id])?;
        db.execute("INSERT OR REPLACE INTO ps_untyped(type, id, data) VALUES('items', ?1, '{\"local\":1}')", [id])?;
        db.execute_batch("COMMIT")
    })();
    if result.is_err() && !db.is_autocommit() {
        db.execute_batch("ROLLBACK").unwrap();
    }
    result
}

#[derive(Default)]
struct Reader {
    reads: AtomicU64,
    reads_during_apply: AtomicU64,
    longest_us: AtomicU64,
    longest_during_apply_us: AtomicU64,
    /// Reads that saw part of the checkpoint (neither none nor all of it).
    partial_views: AtomicU64,
}

#[test]
fn readers_never_wait_and_local_writes_are_never_lost_during_a_large_apply() {
    let n_ops: usize = std::env::var("OPLITE_APPLY_OPS").ok().and_then(|n| n.parse().ok()).unwrap_or(200_000);
    let dir = TempDir::new("concurrency");
    let path = dir.join("app.db");
    create_file(&path);
    let db = open_file(&path, None);

    // Download the checkpoint.
    let started = Instant::now();
    control(&db, "start", SqlValue::Null).unwrap();
    control(&db, "line_text", SqlValue::Text(checkpoint(n_ops).to_string())).unwrap();
    for line in 0..n_ops.div_ceil(OPS_PER_LINE) {
        control(&db, "line_text", SqlValue::Text(data_line(line, n_ops))).unwrap();
    }
    let store_time = started.elapsed();

    // Readers, and two local writers waiting for the apply to start.
    let stop = Arc::new(AtomicBool::new(false));
    let applying = Arc::new(AtomicBool::new(false));
    let reader = Arc::new(Reader::default());
    let go = Arc::new(Barrier::new(3));
    let reader_thread = {
        let (stop, applying, reader, path) = (stop.clone(), applying.clone(), reader.clone(), path.clone());
        let (before, after) = (0i64, n_ops as i64);
        std::thread::spawn(move || {
            let db = Connection::open(&path).unwrap();
            let mut i = 0u64;
            while !stop.load(Ordering::SeqCst) {
                i += 1;
                let during = applying.load(Ordering::SeqCst);
                let t = Instant::now();
                let _: i64 = db
                    .query_row("SELECT count(*) FROM ps_untyped WHERE type = 'items' AND id = ?1", [format!("item{}", i % 1000)], |r| r.get(0))
                    .unwrap();
                let _: i64 = db.query_row("SELECT count(*) FROM ps_crud", [], |r| r.get(0)).unwrap();
                let synced: i64 = db
                    .query_row("SELECT count(*) FROM ps_untyped WHERE type = 'items' AND id LIKE 'item%'", [], |r| r.get(0))
                    .unwrap();
                if synced != before && synced != after {
                    reader.partial_views.fetch_add(1, Ordering::SeqCst);
                }
                let us = t.elapsed().as_micros() as u64;
                reader.reads.fetch_add(1, Ordering::SeqCst);
                reader.longest_us.fetch_max(us, Ordering::SeqCst);
                if during && applying.load(Ordering::SeqCst) {
                    reader.reads_during_apply.fetch_add(1, Ordering::SeqCst);
                    reader.longest_during_apply_us.fetch_max(us, Ordering::SeqCst);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    // Waits for the lock with a busy timeout.
    let waiting_writer = {
        let (go, path) = (go.clone(), path.clone());
        std::thread::spawn(move || {
            let db = Connection::open(&path).unwrap();
            db.busy_timeout(Duration::from_secs(600)).unwrap();
            go.wait();
            let t = Instant::now();
            local_write(&db, "waiting-writer").unwrap();
            t.elapsed()
        })
    };
    // No busy timeout: gets SQLITE_BUSY and retries.
    let retrying_writer = {
        let (go, path) = (go.clone(), path.clone());
        std::thread::spawn(move || {
            let db = Connection::open(&path).unwrap();
            db.busy_timeout(Duration::ZERO).unwrap();
            go.wait();
            let mut busy = 0u64;
            loop {
                match local_write(&db, "retrying-writer") {
                    Ok(()) => return busy,
                    Err(e) => {
                        assert_eq!(error_code(&e) & 0xff, ffi::SQLITE_BUSY, "{e}");
                        busy += 1;
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            }
        })
    };

    std::thread::sleep(Duration::from_millis(100));
    // Apply: the writers start once the apply holds the write lock.
    let t = Instant::now();
    db.execute_batch("BEGIN IMMEDIATE").unwrap();
    applying.store(true, Ordering::SeqCst);
    go.wait();
    let out: String = db
        .query_row("SELECT powersync_control('line_text', ?1)", [json!({"checkpoint_complete": {"last_op_id": n_ops.to_string()}}).to_string()], |r| r.get(0))
        .unwrap();
    db.execute_batch("COMMIT").unwrap();
    applying.store(false, Ordering::SeqCst);
    let apply_time = t.elapsed();
    assert!(out.contains("DidCompleteSync"), "{out}");
    let waited = waiting_writer.join().unwrap();
    let busy = retrying_writer.join().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    stop.store(true, Ordering::SeqCst);
    reader_thread.join().unwrap();

    let longest = Duration::from_micros(reader.longest_during_apply_us.load(Ordering::SeqCst));
    println!(
        "concurrency: {n_ops} ops stored in {:.1}s, applied in {:.1}s; {} reads during the apply, longest {:.1} ms \
         (longest of all {} reads {:.1} ms); a writer with a busy timeout waited {:.1}s, one without got SQLITE_BUSY {busy} times",
        store_time.as_secs_f64(),
        apply_time.as_secs_f64(),
        reader.reads_during_apply.load(Ordering::SeqCst),
        longest.as_secs_f64() * 1000.0,
        reader.reads.load(Ordering::SeqCst),
        reader.longest_us.load(Ordering::SeqCst) as f64 / 1000.0,
        waited.as_secs_f64(),
    );
    let rows: i64 = db.query_row("SELECT count(*) FROM ps_untyped WHERE id LIKE 'item%'", [], |r| r.get(0)).unwrap();
    assert_eq!(rows, n_ops as i64);
    // Readers did not wait for the apply: reads began and ended while it
    // ran, and each saw none of the checkpoint or all of it. How long they
    // took is the figure printed above, not an assertion (a loaded machine
    // stretches it).
    assert!(reader.reads_during_apply.load(Ordering::SeqCst) > 0, "no read ran during the apply");
    assert_eq!(reader.partial_views.load(Ordering::SeqCst), 0, "reads saw part of the checkpoint");
    assert!(busy > 0, "the writer without a busy timeout never saw SQLITE_BUSY");

    // Neither local write was lost, and the next checkpoint is not applied
    // over them.
    for id in ["waiting-writer", "retrying-writer"] {
        let queued: i64 = db.query_row("SELECT count(*) FROM ps_crud WHERE data ->> 'id' = ?1", [id], |r| r.get(0)).unwrap();
        assert_eq!(queued, 1, "{id}: upload entry lost");
        let row: String = db.query_row("SELECT data FROM ps_untyped WHERE type = 'items' AND id = ?1", [id], |r| r.get(0)).unwrap();
        assert_eq!(row, "{\"local\":1}", "{id}");
    }
    control(&db, "line_text", SqlValue::Text(checkpoint(n_ops).to_string())).unwrap();
    let out = control(&db, "line_text", SqlValue::Text(json!({"checkpoint_complete": {"last_op_id": n_ops.to_string()}}).to_string())).unwrap();
    assert!(out.contains("due to local data") && !out.contains("DidCompleteSync"), "{out}");
    let queued: i64 = db.query_row("SELECT count(*) FROM ps_crud", [], |r| r.get(0)).unwrap();
    assert_eq!(queued, 2);
}

fn small_session(path: &std::path::Path, seed: u64) -> Driver {
    let db = open_file(path, None);
    Driver::new(db, ServerModel::new(seed, ServerOptions::default()), Encoding::Json)
}

/// Two connections in one process: the later start supersedes the
/// earlier iteration, which then fails on its next line without writing.
#[test]
fn two_connections_syncing_one_file_are_detected() {
    let dir = TempDir::new("two-syncers");
    let path = dir.join("app.db");
    create_file(&path);
    let mut first = small_session(&path, 1);
    let mut second = small_session(&path, 1);
    first.server.mutate(20);
    second.server = first.server.clone();
    let after = first.start();
    let checkpoint = first.server.checkpoint_line();
    first.send(&checkpoint);
    let lines = first.server.data_lines(&after);
    first.send(&lines[0].1);

    // The second connection starts: the first is superseded.
    second.start();
    let before = snapshot(&first.db);
    let (op, payload) = first.encode(&lines[1 % lines.len()].1);
    let err = first.raw_control(op, &payload).unwrap_err();
    assert_eq!(error_code(&err), ffi::SQLITE_MISUSE, "{err}");
    assert!(err.to_string().contains("another connection started syncing this database"), "{err}");
    assert_eq!(snapshot(&first.db), before, "the superseded iteration wrote");
    // Its iteration is over.
    let err = first.raw_control("completed_upload", &SqlValue::Null).unwrap_err();
    assert!(err.to_string().contains("No iteration is active"), "{err}");

    // The second syncs to the end; the first can take over again later.
    second.control("stop", SqlValue::Null);
    second.converge();
    first.server = second.server.clone();
    first.server.mutate(10);
    first.converge();
}

/// The child's side of the two-process test: starts an iteration, stores
/// the first data line, reports, then waits for the parent's go and sends
/// the next line.
#[test]
#[ignore = "child process of two_processes_syncing_one_file_are_detected"]
fn two_processes_child() {
    let path = std::env::var("OPLITE_TWO_PROCESSES_CHILD")
        .expect("two_processes_child runs only as the child of two_processes_syncing_one_file_are_detected");
    let mut driver = small_session(std::path::Path::new(&path), 1);
    driver.server.mutate(20);
    let after = driver.start();
    let checkpoint = driver.server.checkpoint_line();
    driver.send(&checkpoint);
    let lines = driver.server.data_lines(&after);
    driver.send(&lines[0].1);
    let mut out = std::io::stdout().lock();
    out.write_all(b"\nOPLITE STARTED\n").unwrap();
    out.flush().unwrap();
    let mut go = String::new();
    std::io::stdin().read_line(&mut go).unwrap();
    let (op, payload) = driver.encode(&lines[1 % lines.len()].1);
    let answer = match driver.raw_control(op, &payload) {
        Ok(out) => format!("OK {out}"),
        Err(e) => format!("ERR {} {e}", error_code(&e)),
    };
    out.write_all(format!("\nOPLITE {answer}\n").as_bytes()).unwrap();
    out.flush().unwrap();
}

#[test]
fn two_processes_syncing_one_file_are_detected() {
    let dir = TempDir::new("two-processes");
    let path = dir.join("app.db");
    create_file(&path);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["two_processes_child", "--exact", "--ignored", "--nocapture", "--test-threads=1", "-q"])
        .env("OPLITE_TWO_PROCESSES_CHILD", &path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || loop {
        let line = lines.next().expect("the child ended early").unwrap();
        if let Some(rest) = line.strip_prefix("OPLITE ") {
            return rest.to_owned();
        }
    };
    assert_eq!(next(), "STARTED");
    // This process starts syncing the same file.
    let mut driver = small_session(&path, 1);
    driver.server.mutate(20);
    driver.start();
    child.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    let answer = next();
    assert!(
        answer.starts_with(&format!("ERR {} ", ffi::SQLITE_MISUSE)) && answer.contains("another connection started syncing"),
        "{answer}"
    );
    assert!(child.wait().unwrap().success());
    driver.control("stop", SqlValue::Null);
    driver.server.mutate(10);
    driver.converge();
}
