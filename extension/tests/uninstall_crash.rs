//! `oplite_uninstall()` killed: a child process uninstalls a synced file
//! database (WAL mode, uploads queued) and its VFS kills it with SIGKILL at
//! the N-th write or sync of the database or WAL file, for N spread over
//! every write and sync the uninstall makes, commit included. Reopened,
//! the file must pass `PRAGMA integrity_check` and hold exactly what it held
//! before the call (schema and every row) or exactly what a completed call
//! leaves: nothing half-converted, no upload lost.
mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

use common::diff::rows;
use common::driver::{open_file, stored_crud, Driver, Encoding, TempDir, NOTES_SCHEMA};
use common::fault_vfs;
use oplite_test_data::{ServerModel, ServerOptions};
use rusqlite::Connection;

const CHILD_ENV: &str = "OPLITE_UNINSTALL_CRASH_CHILD";
/// Kill points, spread evenly over the uninstall's writes and syncs.
const KILLS: u64 = 24;

/// Uninstalls in one transaction, with a page cache small enough that it
/// spills pages to the WAL before the commit.
fn uninstall(db: &Connection) -> rusqlite::Result<String> {
    db.execute_batch("PRAGMA cache_size = 20; BEGIN")?;
    let report: String = db.query_row("SELECT oplite_uninstall()", [], |r| r.get(0))?;
    db.execute_batch("COMMIT")?;
    Ok(report)
}

/// The child: uninstalls the file named in the environment through the
/// fault VFS, which kills it at the write or sync given there.
#[test]
#[ignore = "child process of the uninstall crash test"]
fn uninstall_crash_child() {
    let spec = std::env::var(CHILD_ENV).expect("uninstall_crash_child runs only as the child of the uninstall crash test");
    let (path, kill_at) = spec.split_once('|').unwrap();
    fault_vfs::register();
    let db = open_file(Path::new(path), Some(fault_vfs::NAME));
    fault_vfs::arm(fault_vfs::Plan { kill_at: Some(kill_at.parse().unwrap()), ..Default::default() });
    uninstall(&db).unwrap();
    // The checkpoint when the connection closes is not the call's.
    fault_vfs::disarm();
    println!("DONE");
}

/// A synced database with typed rows and queued uploads, checkpointed
/// into its main file so that a copy of that file is the whole database.
fn synced_database(path: &Path) {
    let db = open_file(path, None);
    db.execute_batch(
        "BEGIN; SELECT powersync_init();
         UPDATE ps_kv SET value = '00000000-0000-4000-8000-000000000000' WHERE key = 'client_id'; COMMIT;",
    )
    .unwrap();
    db.execute_batch("BEGIN").unwrap();
    db.query_row("SELECT powersync_replace_schema(?1)", [NOTES_SCHEMA], |_| Ok(())).unwrap();
    db.execute_batch("COMMIT").unwrap();
    let options = ServerOptions { buckets: 4, ids_per_type: 400, page_size: 50, ..Default::default() };
    let mut server = ServerModel::new(11, options);
    server.mutate(1500);
    let mut driver = Driver::new(db, server, Encoding::Json);
    driver.converge();
    for _ in 0..5 {
        driver.local_write();
    }
    driver.db.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
}

/// The schema and every table's rows, sorted.
fn dump(db: &Connection) -> Vec<String> {
    let mut out = rows(db, "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name");
    let tables = rows(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
    for table in tables {
        let name = table.trim_start_matches("Text(\"").trim_end_matches("\")").to_owned();
        let mut table_rows = rows(db, &format!("SELECT * FROM \"{name}\""));
        table_rows.sort();
        out.push(format!("-- {name}: {} rows", table_rows.len()));
        out.extend(table_rows);
    }
    out
}

#[test]
fn a_killed_uninstall_leaves_the_database_before_or_after() {
    let dir = TempDir::new("uninstall-crash");
    let base = dir.join("base.db");
    synced_database(&base);

    let before = {
        let copy = dir.join("before.db");
        std::fs::copy(&base, &copy).unwrap();
        dump(&open_file(&copy, None))
    };
    let queued = stored_crud(&open_file(&base, None));
    assert!(!queued.is_empty(), "the session queues uploads");
    let (after, calls) = {
        let copy = dir.join("after.db");
        std::fs::copy(&base, &copy).unwrap();
        fault_vfs::register();
        let db = open_file(&copy, Some(fault_vfs::NAME));
        fault_vfs::arm(fault_vfs::Plan::default());
        uninstall(&db).unwrap();
        let counts = fault_vfs::disarm();
        drop(db);
        (dump(&open_file(&copy, None)), counts.writes + counts.syncs)
    };
    assert_ne!(before, after);
    assert!(calls > KILLS, "the uninstall made only {calls} writes and syncs");

    let (mut old, mut new) = (0, 0);
    // The last point is past every call: the child finishes.
    for i in 0..=KILLS {
        let kill_at = 1 + i * (calls - 1) / (KILLS - 1);
        let path = dir.join(&format!("kill-{kill_at}.db"));
        std::fs::copy(&base, &path).unwrap();
        let output = Command::new(std::env::current_exe().unwrap())
            .args(["uninstall_crash_child", "--exact", "--ignored", "--nocapture", "--test-threads=1", "-q"])
            .env(CHILD_ENV, format!("{}|{kill_at}", path.display()))
            .output()
            .unwrap();
        let finished = kill_at > calls;
        let expected = if finished { "finishes" } else { "is killed" };
        assert!(
            if finished { output.status.success() } else { output.status.signal() == Some(9) },
            "kill at {kill_at} of {calls}: the child {expected} ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let db = open_file(&path, None);
        let integrity: String = db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(integrity, "ok", "kill at {kill_at} of {calls}");
        let now = dump(&db);
        if now == before {
            old += 1;
            assert_eq!(stored_crud(&db), queued);
        } else {
            assert!(now == after, "kill at {kill_at} of {calls}: the database is neither as before nor as after the call");
            new += 1;
        }
        drop(db);
        let _ = std::fs::remove_file(&path);
    }
    eprintln!("{KILLS} kills over {calls} writes and syncs, and a run to the end: {old} read as before, {new} as after");
    assert!(old > 0 && new > 0, "{old} as before, {new} as after");
}
