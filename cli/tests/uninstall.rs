//! `oplite uninstall --db FILE` as a user runs it: a file `oplite sync`
//! filled from the loopback service goes back to the PowerSync core's
//! layout; the core opens it, keeps its buckets and positions, and oplite
//! takes it over again for the next sync.

#[path = "../src/bench_shared.rs"]
#[allow(dead_code, unused_imports)]
mod bench_shared;

use std::path::{Path, PathBuf};
use std::process::Command;

use oplite_test_data::StreamSpec;
use oplite_test_server::{Dataset, ServiceOptions, TestService};
use rusqlite::Connection;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oplite-uninstall-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `oplite ARGS...`: exit code, stdout, stderr.
fn oplite(args: &[&str], db: &Path) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_oplite")).args(args).arg("--db").arg(db).output().unwrap();
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (output.status.code().unwrap_or(-1), text(&output.stdout), text(&output.stderr))
}

fn last_ops(db: &Connection) -> Vec<(String, i64)> {
    let mut stmt = db.prepare("SELECT name, last_op FROM ps_buckets ORDER BY name").unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(|r| r.unwrap()).collect()
}

#[test]
fn a_synced_file_goes_back_to_the_core_and_comes_back() {
    let dir = scratch("round-trip");
    let service = TestService::start(ServiceOptions::new(Dataset::Generated(StreamSpec::benchmark(2_000)))).unwrap();
    let db = dir.join("app.db");
    let sync = ["sync", "--once", "--no-progress", "--endpoint", &service.url(), "--token", "dev"];
    let (code, _, stderr) = oplite(&sync, &db);
    assert_eq!(code, 0, "{stderr}");
    let positions = last_ops(&Connection::open(&db).unwrap());

    let (code, stdout, stderr) = oplite(&["uninstall"], &db);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with(&format!("uninstalled oplite from {}", db.display())), "{stdout}");
    assert!(stdout.contains("next: open the database with the PowerSync core"), "{stdout}");

    {
        let core = Connection::open(&db).unwrap();
        bench_shared::Reference::V054.load(&core).unwrap();
        core.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
        let version: i64 = core.query_row("SELECT max(id) FROM ps_migration", [], |r| r.get(0)).unwrap();
        assert_eq!(version, 14, "the core's own version, so it migrates nothing");
        assert_eq!(last_ops(&core), positions, "the core keeps the stored positions");
    }

    let (code, stdout, stderr) = oplite(&["uninstall"], &db);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("already has the PowerSync core's layout: nothing to do"), "{stdout}");

    // oplite adopts it again and syncs on.
    let (code, _, stderr) = oplite(&sync, &db);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(last_ops(&Connection::open(&db).unwrap()), positions);
}

#[test]
fn a_missing_file_exits_5_and_creates_nothing() {
    let dir = scratch("missing");
    let db = dir.join("nothing.db");
    let (code, _, stderr) = oplite(&["uninstall"], &db);
    assert_eq!(code, 5, "{stderr}");
    assert!(stderr.contains("nothing.db: no such file"), "{stderr}");
    assert!(!db.exists());
}

#[test]
fn a_database_without_powersync_tables_exits_1_and_says_so() {
    let dir = scratch("plain");
    let db = dir.join("plain.db");
    Connection::open(&db).unwrap().execute_batch("CREATE TABLE t(x)").unwrap();
    let (code, _, stderr) = oplite(&["uninstall"], &db);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(stderr.trim(), format!("oplite: database: {}: oplite_uninstall: this database holds no PowerSync tables (ps_migration is missing)", db.display()));
}
