//! How `oplite sync` ends, as a script sees it: the exit code and the first
//! line of the summary for every way a run can end (docs/cli.md, "Exit
//! codes"), and the cases that must fail at once rather than retry: a URL
//! that is not one, an endpoint nobody answers, a local file that cannot be
//! a database.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use oplite_test_data::StreamSpec;
use oplite_test_server::{Dataset, ServiceOptions, TestService};
use rusqlite::Connection;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oplite-exit-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `oplite sync --no-progress --db DB ARGS...`.
fn sync(db: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_oplite"));
    command.args(["sync", "--no-progress"]).arg("--db").arg(db).args(args);
    command
}

/// The exit code, stdout's first line and stderr of a finished run.
fn ended(output: Output) -> (i32, String, String) {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let first = stdout.lines().next().unwrap_or("").to_owned();
    (output.status.code().unwrap_or(-1), first, stderr)
}

fn run(command: &mut Command) -> (i32, String, String) {
    ended(command.output().unwrap())
}

/// A local URL whose port nobody listens on: every attempt is refused.
fn refused_endpoint() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    format!("http://127.0.0.1:{port}")
}

fn generated(ops: u64) -> TestService {
    TestService::start(ServiceOptions::new(Dataset::Generated(StreamSpec::benchmark(ops)))).unwrap()
}

#[test]
fn a_once_sync_that_completes_exits_0_and_says_synced() {
    let dir = scratch("synced");
    let service = generated(500);
    let db = dir.join("app.db");
    let (code, first, stderr) = run(&mut sync(&db, &["--once", "--endpoint", &service.url(), "--token", "dev"]));
    assert_eq!((code, first.as_str()), (0, format!("synced into {}", db.display()).as_str()), "{stderr}");
}

#[test]
fn arguments_that_cannot_work_exit_2_before_anything_runs() {
    let dir = scratch("usage");
    let db = dir.join("app.db");
    for endpoint in ["not-a-url", "ftp://example.com", "http://", "/sync/stream"] {
        let (code, _, stderr) = run(&mut sync(&db, &["--once", "--endpoint", endpoint, "--token", "dev"]));
        assert_eq!(code, 2, "{endpoint}: {stderr}");
        assert!(stderr.contains("--endpoint"), "{endpoint}: {stderr}");
    }
    assert!(!db.exists(), "nothing ran, so nothing was created");
    let (code, _, stderr) = run(&mut sync(&db, &["--once", "--endpoint", "http://127.0.0.1:1"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--token-command"), "a missing token names both ways to give one: {stderr}");
}

#[test]
fn a_once_sync_gives_up_on_an_endpoint_that_refuses_connections() {
    let dir = scratch("gave-up");
    let db = dir.join("app.db");
    let endpoint = refused_endpoint();
    let started = Instant::now();
    let (code, first, stderr) = run(&mut sync(&db, &["--once", "--endpoint", &endpoint, "--token", "dev"]));
    assert_eq!(code, 4, "{first}\n{stderr}");
    assert!(first.starts_with("gave up after 5 failed connection attempts in a row"), "{first}");
    assert!(stderr.contains("retrying in") && stderr.contains("(failed attempt 4 of 5)"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(30), "gave up after {:?}", started.elapsed());

    let (code, first, _) =
        run(&mut sync(&db, &["--once", "--max-attempts", "1", "--endpoint", &endpoint, "--token", "dev"]));
    assert_eq!(code, 4);
    assert!(first.starts_with("gave up after 1 failed connection attempts"), "{first}");
}

#[test]
fn live_mode_retries_until_the_timeout_and_says_so() {
    let dir = scratch("timed-out");
    let db = dir.join("app.db");
    let endpoint = refused_endpoint();
    let (code, first, stderr) = run(&mut sync(&db, &["--timeout", "3", "--endpoint", &endpoint, "--token", "dev"]));
    assert_eq!(code, 3, "{first}\n{stderr}");
    assert!(first.starts_with("timed out after 3 s before a complete sync"), "{first}");
    assert!(stderr.contains("live mode retries until Ctrl-C"), "{stderr}");
}

#[test]
fn ctrl_c_during_a_once_sync_exits_130_and_never_says_synced() {
    let dir = scratch("interrupted");
    let service = generated(300_000);
    let db = dir.join("app.db");
    let child = sync(&db, &["--once", "--endpoint", &service.url(), "--token", "dev"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once ops are arriving, long before 300k are applied.
    let started = Instant::now();
    loop {
        assert!(started.elapsed() < Duration::from_secs(60), "no ops within 60 s");
        std::thread::sleep(Duration::from_millis(50));
        let stored = Connection::open(&db)
            .and_then(|c| c.query_row("SELECT count(*) FROM ps_oplog", [], |r| r.get::<_, i64>(0)))
            .unwrap_or(0);
        if stored > 0 {
            break;
        }
    }
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let (code, first, stderr) = ended(child.wait_with_output().unwrap());
    assert_eq!(code, 130, "{first}\n{stderr}");
    assert!(first.starts_with("interrupted (Ctrl-C) before a complete sync"), "{first}");
    let conn = Connection::open(&db).unwrap();
    let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok");
}

/// Every way a local file can be unusable stops the run at once with exit
/// 5 and a message naming the file and the cause.
#[test]
fn an_unusable_database_file_exits_5_at_once() {
    let dir = scratch("unusable");
    let service = generated(2_000);
    let args = ["--once", "--endpoint", service.url().leak(), "--token", "dev"];

    let (code, _, stderr) = run(&mut sync(&dir, &args));
    assert_eq!(code, 5, "{stderr}");
    assert!(stderr.contains("local database:") && stderr.contains("is a directory"), "{stderr}");

    let missing = dir.join("no-such-dir").join("app.db");
    let (code, _, stderr) = run(&mut sync(&missing, &args));
    assert_eq!(code, 5, "{stderr}");
    assert!(stderr.contains("does not exist") && stderr.contains("no-such-dir"), "{stderr}");

    let text = dir.join("notes.txt");
    std::fs::write(&text, "not a database, but long enough to have a header of sorts ".repeat(20)).unwrap();
    let (code, _, stderr) = run(&mut sync(&text, &args));
    assert_eq!(code, 5, "{stderr}");
    assert!(stderr.contains("notes.txt") && stderr.contains("not a database"), "{stderr}");

    // A synced database with its pages past the first overwritten.
    let db = dir.join("app.db");
    assert_eq!(run(&mut sync(&db, &args)).0, 0);
    let mut bytes = std::fs::read(&db).unwrap();
    assert!(bytes.len() > 16 * 4096, "{} bytes", bytes.len());
    for b in &mut bytes[4096..] {
        *b = 0xA5;
    }
    std::fs::write(&db, &bytes).unwrap();
    let started = Instant::now();
    let (code, _, stderr) = run(&mut sync(&db, &args));
    assert_eq!(code, 5, "{stderr}");
    assert!(stderr.contains("local database:") && stderr.contains("app.db"), "{stderr}");
    assert!(stderr.contains("malformed") || stderr.contains("not a database"), "{stderr}");
    assert!(!stderr.contains("reconnecting") && !stderr.contains("refused a line"), "not retried: {stderr}");
    assert!(started.elapsed() < Duration::from_secs(10));
}
