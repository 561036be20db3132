//! How `oplite sync` ends, as a script sees it: the exit code and the first
//! line of the summary for every way a run can end (docs/cli.md, "Exit
//! codes"), and the cases that must fail at once rather than retry: a URL
//! that is not one, an endpoint nobody answers, a local file that cannot be
//! a database.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use oplite_test_data::StreamSpec;
use oplite_test_server::{Dataset, ServiceOptions, TestService};
use oplite_cli::local::LocalWrite;
use rusqlite::Connection;
use serde_json::json;

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
    assert_eq!(first, format!("timed out after 3 s before a complete sync ({} holds what was applied before)", db.display()));
    assert!(stderr.contains("live mode retries until Ctrl-C"), "{stderr}");
    assert_integrity_ok(&db);
}

/// The `--timeout` of a live run (docs/cli.md, "Exit codes"), generous:
/// the runs below need far less to sync a few hundred ops, and what they
/// assert does not depend on how much of it is left.
const LIVE_TIMEOUT: &str = "20";

fn assert_integrity_ok(db: &Path) {
    let check: String = Connection::open(db).unwrap().query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok");
}

/// `oplite sync` started with its output captured.
fn spawn(command: &mut Command) -> Child {
    command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Polls `db` until `query` (one integer) is positive; fails if the run
/// ends first, or after a minute.
fn wait_for(child: &mut Child, db: &Path, what: &str, query: &str) {
    wait_until(child, what, || {
        Connection::open(db).and_then(|c| c.query_row(query, [], |r| r.get::<_, i64>(0))).unwrap_or(0) > 0
    });
}

/// Polls `done` until it holds; fails if the run ends first, or after a
/// minute.
fn wait_until(child: &mut Child, what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let (mut out, mut err) = (String::new(), String::new());
            child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
            child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            panic!("the run ended ({status}) before {what}:\n{out}\n{err}");
        }
        assert!(started.elapsed() < Duration::from_secs(60), "not {what} within 60 s");
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The summary's first line of a live run stopped by its timeout after a
/// complete sync: its text after "last complete sync at HH:MM:SS UTC, "
/// (checked), with the seconds before the end replaced by `X`.
fn after_last_sync(first: &str, db: &Path) -> String {
    let head = format!("stopped at the timeout ({LIVE_TIMEOUT} s), synced into {}; last complete sync at ", db.display());
    let rest = first.strip_prefix(&head).unwrap_or_else(|| panic!("{first}"));
    let (clock, rest) = rest.split_once(" UTC, ").unwrap_or_else(|| panic!("{first}"));
    assert!(clock.len() == 8 && clock.split(':').all(|p| p.len() == 2 && p.parse::<u32>().is_ok()), "{first}");
    let (before, rest) = rest.split_once(" s before the end").unwrap_or_else(|| panic!("{first}"));
    let before: f64 = before.parse().unwrap_or_else(|_| panic!("{first}"));
    // At most the timeout, and the moments the loop takes to notice it.
    assert!((0.0..LIVE_TIMEOUT.parse::<f64>().unwrap() + 10.0).contains(&before), "{first}");
    format!("X s before the end{rest}")
}

/// A local write waiting for upload in a new database `db`: a run uploads
/// it first and asks for write checkpoint 1.
fn write_offline(db: &Path) {
    let local = oplite_cli::Database::open(db).unwrap();
    let put = LocalWrite::Put(oplite_cli::local::columns(json!({"title": "offline"})));
    oplite_cli::local::write(local.conn(), "todos", "t1", &put).unwrap();
}

/// Positive once the checkpoint carrying write checkpoint 1 was applied
/// and nothing is left to upload.
const WRITE_CHECKPOINT_1_APPLIED: &str = "SELECT (SELECT CAST(value AS INTEGER) FROM ps_kv WHERE key = 'last_applied_checkpoint_request_id') = 1 AND NOT EXISTS (SELECT 1 FROM ps_crud)";

/// A live run that synced and then sat idle: its timeout ends it with exit
/// 0, and the summary says when it last synced and that nothing was under
/// way. With -v each write-checkpoint step is logged once, though every
/// checkpoint after the upload carries the write checkpoint.
#[test]
fn a_live_run_that_synced_stops_at_its_timeout_with_exit_0() {
    let dir = scratch("live-timeout-idle");
    let service = generated(500);
    let db = dir.join("app.db");
    write_offline(&db);
    let mut child = spawn(&mut sync(&db, &["-v", "--timeout", LIVE_TIMEOUT, "--endpoint", &service.url(), "--token", "dev"]));
    wait_for(&mut child, &db, "write checkpoint 1 was applied", WRITE_CHECKPOINT_1_APPLIED);
    // Two more checkpoints, each carrying write checkpoint 1 again.
    for n in [7, 8] {
        service.put_row("thisisatable", &format!("thisismyrowid{n}"), json!({"n": n, "changed": true}));
        wait_for(&mut child, &db, &format!("row {n} was synced"),
            &format!("SELECT count(*) FROM ps_untyped WHERE id = 'thisismyrowid{n}' AND data LIKE '%changed%'"));
    }
    let (code, first, stderr) = ended(child.wait_with_output().unwrap());
    assert_eq!(code, 0, "{first}\n{stderr}");
    assert_eq!(after_last_sync(&first, &db), "X s before the end; no download or upload was in progress");
    let steps: Vec<&str> = stderr.lines().filter(|l| l.contains("write checkpoint")).collect();
    assert_eq!(steps, ["write checkpoint 1 requested", "write checkpoint 1 confirmed: the checkpoint carrying it was applied"], "{stderr}");
    assert_integrity_ok(&db);
}

/// The file `--token-command "cat FILE"` reads: the test decides when the
/// command gives a new token. Replaced whole (rename), so a read never
/// sees half a token.
struct TokenFile(PathBuf);

impl TokenFile {
    /// A new token from `service`, valid for `ttl`.
    fn put(&self, service: &TestService, ttl: Duration) {
        let partial = self.0.with_extension("partial");
        std::fs::write(&partial, service.issue_token(ttl)).unwrap();
        std::fs::rename(&partial, &self.0).unwrap();
    }

    fn command(&self) -> String {
        format!("cat '{}'", self.0.display())
    }
}

/// The issue's own run, on the loopback service: live mode, tokens fetched
/// again and again through `--token-command`, `-v`, `--timeout`. Each new
/// token reconnects the stream, and every connection applies a checkpoint
/// that carries the write checkpoint of the upload before. The timeout
/// passes while the last connection's checkpoint, which needs no ops (the
/// service held it after its `checkpoint` line), waits for its
/// `checkpoint_complete`: nothing was being downloaded. Exit 0, the summary,
/// and each write-checkpoint step logged once, not once per connection.
#[test]
fn a_live_run_reconnecting_for_new_tokens_stops_at_its_timeout_with_exit_0_and_logs_each_step_once() {
    let dir = scratch("live-timeout-reconnecting");
    let mut options = ServiceOptions::new(Dataset::Generated(StreamSpec::benchmark(500)));
    // Keep-alives report the token's time left; with 30 s or less the
    // engine asks for a new token at each one, and the run reconnects as
    // soon as the command gives one.
    options.keepalive = Duration::from_millis(250);
    let service = TestService::start(options).unwrap();
    let due_for_refresh = Duration::from_secs(30);
    let tokens = TokenFile(dir.join("token"));
    tokens.put(&service, due_for_refresh);
    let db = dir.join("app.db");
    write_offline(&db);
    let mut child = spawn(&mut sync(&db, &["-v", "--timeout", LIVE_TIMEOUT, "--endpoint", &service.url(), "--token-command", &tokens.command()]));
    wait_for(&mut child, &db, "write checkpoint 1 was applied", WRITE_CHECKPOINT_1_APPLIED);
    let reconnect = |child: &mut Child, ttl: Duration| {
        let streams = service.stats().streams;
        tokens.put(&service, ttl);
        wait_until(child, "a reconnect with the new token", || service.stats().streams > streams);
    };
    reconnect(&mut child, due_for_refresh);
    reconnect(&mut child, due_for_refresh);
    // The last token needs no refresh, so nothing moves the run off the
    // held stream.
    service.hold_next_checkpoint_after(0);
    reconnect(&mut child, Duration::from_secs(3600));
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let (code, first, stderr) = ended(output);
    assert_eq!(code, 0, "{first}\n{stderr}");
    assert_eq!(after_last_sync(&first, &db), "X s before the end; no download or upload was in progress");
    let connections = stdout.lines().find(|l| l.starts_with("  connections ")).unwrap_or_else(|| panic!("{stdout}"));
    let counts: Vec<u64> = connections.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
    let [opened, failed, refreshes] = counts[..] else { panic!("{connections}") };
    assert_eq!((opened, failed), (4, 0), "{connections}");
    assert!(refreshes >= 3, "{connections}");
    let steps: Vec<&str> = stderr.lines().filter(|l| l.contains("write checkpoint")).collect();
    assert_eq!(steps, ["write checkpoint 1 requested", "write checkpoint 1 confirmed: the checkpoint carrying it was applied"], "{stderr}");
    assert_integrity_ok(&db);
}

/// A live run that synced, then got a second checkpoint the service never
/// completes: the timeout ends it with exit 0 all the same, the summary says
/// a download was in progress, and the file holds the first checkpoint
/// only; the next run completes the second.
#[test]
fn a_live_run_that_times_out_mid_download_after_a_sync_exits_0_and_says_so() {
    let dir = scratch("live-timeout-downloading");
    let service = generated(500);
    let db = dir.join("app.db");
    let mut child = spawn(&mut sync(&db, &["--timeout", LIVE_TIMEOUT, "--endpoint", &service.url(), "--token", "dev"]));
    wait_for(&mut child, &db, "the first sync", "SELECT count(*) FROM ps_sync_state");
    // The next checkpoint: its checkpoint_diff and its one data line, and
    // never its checkpoint_complete.
    service.hold_next_checkpoint_after(1);
    service.put_row("thisisatable", "thisismyrowid7", json!({"n": 7, "held": true}));
    wait_for(&mut child, &db, "the held op was stored", "SELECT count(*) FROM ps_oplog WHERE data LIKE '%held%'");
    let (code, first, stderr) = ended(child.wait_with_output().unwrap());
    assert_eq!(code, 0, "{first}\n{stderr}");
    assert_eq!(
        after_last_sync(&first, &db),
        "X s before the end; a download was in progress (1 of 1 ops of a newer checkpoint, not applied; the next run resumes it)"
    );
    assert_integrity_ok(&db);
    let row7 = |db: &Path| -> String {
        Connection::open(db).unwrap().query_row("SELECT data FROM ps_untyped WHERE id = 'thisismyrowid7'", [], |r| r.get(0)).unwrap()
    };
    assert!(!row7(&db).contains("held"), "the held checkpoint was not applied: {}", row7(&db));
    // The hold is spent: the next run gets the rest and applies it.
    let (code, first, stderr) = run(&mut sync(&db, &["--once", "--endpoint", &service.url(), "--token", "dev"]));
    assert_eq!(code, 0, "{first}\n{stderr}");
    assert!(row7(&db).contains("held"), "{}", row7(&db));
}

/// Both at once: a local write uploaded after the sync, and the checkpoint
/// that would confirm it held mid-download. Exit 0, and the summary names
/// the download and the write checkpoint the upload waits for.
#[test]
fn a_live_run_that_times_out_with_an_upload_unconfirmed_says_so() {
    let dir = scratch("live-timeout-uploading");
    let service = generated(500);
    let db = dir.join("app.db");
    let mut child = spawn(&mut sync(&db, &["--timeout", LIVE_TIMEOUT, "--endpoint", &service.url(), "--token", "dev"]));
    wait_for(&mut child, &db, "the first sync", "SELECT count(*) FROM ps_sync_state");
    service.hold_next_checkpoint_after(1);
    let put = LocalWrite::Put(oplite_cli::local::columns(json!({"title": "written while synced"})));
    oplite_cli::local::write(&Connection::open(&db).unwrap(), "todos", "t1", &put).unwrap();
    wait_for(&mut child, &db, "the upload and its write checkpoint request",
        "SELECT NOT EXISTS (SELECT 1 FROM ps_crud) AND (SELECT CAST(value AS INTEGER) FROM ps_kv WHERE key = 'target_checkpoint_request_id') = 1");
    wait_for(&mut child, &db, "the uploaded row came back", "SELECT count(*) FROM ps_oplog WHERE data LIKE '%written while synced%'");
    let (code, first, stderr) = ended(child.wait_with_output().unwrap());
    assert_eq!(code, 0, "{first}\n{stderr}");
    assert_eq!(
        after_last_sync(&first, &db),
        "X s before the end; a download was in progress (1 of 1 ops of a newer checkpoint, not applied; the next run resumes it) \
         and an upload was in progress (uploaded, waiting for write checkpoint 1)"
    );
    assert_integrity_ok(&db);
}

/// Ctrl-C in live mode while a checkpoint is being downloaded: exit 130,
/// though the run had synced before (the download is what was cut).
#[test]
fn ctrl_c_in_live_mode_mid_download_exits_130() {
    let dir = scratch("live-interrupted-downloading");
    let service = generated(500);
    let db = dir.join("app.db");
    let mut child = spawn(&mut sync(&db, &["--endpoint", &service.url(), "--token", "dev"]));
    wait_for(&mut child, &db, "the first sync", "SELECT count(*) FROM ps_sync_state");
    service.hold_next_checkpoint_after(1);
    service.put_row("thisisatable", "thisismyrowid7", json!({"n": 7, "held": true}));
    wait_for(&mut child, &db, "the held op was stored", "SELECT count(*) FROM ps_oplog WHERE data LIKE '%held%'");
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let (code, first, stderr) = ended(child.wait_with_output().unwrap());
    assert_eq!(code, 130, "{first}\n{stderr}");
    assert!(first.starts_with("interrupted (Ctrl-C)"), "{first}");
    assert_integrity_ok(&db);
}

/// A live run whose first checkpoint never completes: exit 3, as for a
/// service nobody answers, and nothing of it is applied.
#[test]
fn a_live_run_that_times_out_during_its_first_download_exits_3() {
    let dir = scratch("live-timeout-first");
    let service = generated(500);
    // The first checkpoint stops after 3 of its 10 data lines.
    service.hold_next_checkpoint_after(3);
    let db = dir.join("app.db");
    let (code, first, stderr) = run(&mut sync(&db, &["--timeout", "3", "--endpoint", &service.url(), "--token", "dev"]));
    assert_eq!(code, 3, "{first}\n{stderr}");
    assert_eq!(first, format!("timed out after 3 s before a complete sync ({} holds what was applied before)", db.display()));
    assert_integrity_ok(&db);
    let applied: i64 = Connection::open(&db).unwrap().query_row("SELECT count(*) FROM ps_untyped", [], |r| r.get(0)).unwrap();
    assert_eq!(applied, 0);
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
    assert_integrity_ok(&db);
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
