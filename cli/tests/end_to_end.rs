//! End-to-end tests of the `oplite` host against the loopback test service:
//! a full sync (JSON and BSON), a local write uploaded and confirmed by a
//! write checkpoint (between runs and during a live stream), a reconnect
//! after the service drops the stream mid-way, expired and expiring tokens,
//! and the binary itself.
//!
//! Expected rows come from `oplite_test_data::recorded::expected_tables` /
//! `StreamSpec::expected_rows`, which apply the protocol's rule on their
//! own, not from the client under test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use oplite_cli::local::{self, LocalWrite};
use oplite_cli::{Database, Error, StopWhen, Summary, SyncOptions, TokenSource};
use oplite_test_data::recorded;
use oplite_test_data::stream::ROW_TYPE;
use oplite_test_data::StreamSpec;
use oplite_test_server::{Dataset, ServiceOptions, TestService};
use rusqlite::Connection;
use serde_json::{json, Value};

/// A fresh directory for one test's database.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("oplite-e2e-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn service(dataset: Dataset) -> TestService {
    let mut options = ServiceOptions::new(dataset);
    options.keepalive = Duration::from_millis(500);
    TestService::start(options).unwrap()
}

fn generated(spec: StreamSpec) -> TestService {
    service(Dataset::Generated(spec))
}

fn options(service: &TestService, credentials: TokenSource) -> SyncOptions {
    let mut options = SyncOptions::new(service.url(), credentials);
    options.stop_when = StopWhen::Synced;
    options.timeout = Some(Duration::from_secs(60));
    options.backoff = oplite_cli::Backoff::new(Duration::from_millis(20), Duration::from_millis(200));
    options
}

fn dev() -> TokenSource {
    TokenSource::Fixed("dev".into())
}

/// Synced rows without a table: type → id → data (with "id").
fn untyped(conn: &Connection) -> BTreeMap<String, BTreeMap<String, Value>> {
    let mut stmt = conn.prepare("SELECT type, id, data FROM ps_untyped").unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, Option<String>>(2)?)))
        .unwrap();
    let mut tables: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
    for row in rows {
        let (t, id, data) = row.unwrap();
        let mut object = serde_json::Map::new();
        object.insert("id".into(), Value::String(id.clone()));
        if let Some(Value::Object(fields)) = data.as_deref().and_then(|d| serde_json::from_str(d).ok()) {
            object.extend(fields);
        }
        tables.entry(t).or_default().insert(id, Value::Object(object));
    }
    tables
}

fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

fn kv(conn: &Connection, key: &str) -> Option<i64> {
    conn.query_row("SELECT CAST(value AS INTEGER) FROM ps_kv WHERE key = ?1", [key], |r| r.get(0)).ok()
}

fn assert_benchmark_rows(db: &Path, spec: &StreamSpec) {
    let conn = Connection::open(db).unwrap();
    let rows = untyped(&conn);
    let table = rows.get(ROW_TYPE).cloned().unwrap_or_default();
    assert_eq!(table.len() as u64, spec.row_count(), "rows of {ROW_TYPE}");
    for (id, data) in spec.expected_rows() {
        let mut expected = data.as_object().cloned().unwrap();
        expected.insert("id".into(), Value::String(id.clone()));
        assert_eq!(table.get(&id), Some(&Value::Object(expected)), "row {id}");
    }
}

#[test]
fn syncs_the_recorded_todo_list_in_json_and_bson() {
    let lines = recorded::parse_ndjson(
        &std::fs::read_to_string(recorded::recorded_dir().join("todo-list/stream.ndjson")).unwrap(),
    )
    .unwrap();
    let buckets = recorded::buckets_from_lines(&lines);
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(recorded::recorded_dir().join("todo-list/expected.json")).unwrap())
            .unwrap();
    for binary in [false, true] {
        let dir = scratch(if binary { "todo-bson" } else { "todo-json" });
        let service = service(Dataset::Buckets(buckets.clone()));
        let db = Database::open(&dir.join("todo.db")).unwrap();
        let mut options = options(&service, dev());
        options.binary = binary;
        let summary = oplite_cli::run(&db, &options).unwrap();
        assert_eq!(summary.binary, binary);
        assert_eq!(summary.checkpoints, 1);
        assert_eq!(summary.ops, 11);
        let actual = untyped(db.conn());
        let actual = Value::Object(
            actual.into_iter().map(|(t, rows)| (t, Value::Array(rows.into_values().collect()))).collect(),
        );
        assert_eq!(actual, expected, "binary: {binary}");
    }
}

#[test]
fn syncs_generated_streams_of_every_shape() {
    for (name, spec) in [
        ("benchmark", StreamSpec { ops_per_line: 100, ..StreamSpec::benchmark(3_000) }),
        ("duplicates", StreamSpec { ops_per_line: 100, ..StreamSpec::duplicates(3_000) }),
        ("many-buckets", StreamSpec::many_buckets(3_000)),
        ("wide", StreamSpec::wide(500)),
    ] {
        let dir = scratch(name);
        let service = generated(spec.clone());
        let path = dir.join("app.db");
        let db = Database::open(&path).unwrap();
        let mut options = options(&service, dev());
        options.binary = name == "duplicates";
        let summary = oplite_cli::run(&db, &options).unwrap();
        assert_eq!(summary.ops, spec.ops, "{name}");
        assert_eq!(summary.total_rows() as u64, spec.row_count(), "{name}");
        assert_eq!(summary.buckets as u64, spec.buckets, "{name}");
        assert_benchmark_rows(&path, &spec);
    }
}

#[test]
fn local_writes_are_uploaded_and_confirmed_by_a_write_checkpoint() {
    let dir = scratch("round-trip");
    let spec = StreamSpec::benchmark(2_000);
    let service = generated(spec.clone());
    let path = dir.join("app.db");
    let db = Database::open(&path).unwrap();
    let first = oplite_cli::run(&db, &options(&service, dev())).unwrap();
    assert_eq!(first.ops, 2_000);

    // Offline writes: change a synced row, add a row, delete a synced row.
    let conn = db.conn();
    local::write(conn, ROW_TYPE, "thisismyrowid5", &LocalWrite::Patch(local::columns(json!({"note": "edited"})))).unwrap();
    local::write(conn, "notes", "n1", &LocalWrite::Put(local::columns(json!({"text": "hello"})))).unwrap();
    local::write(conn, ROW_TYPE, "thisismyrowid6", &LocalWrite::Delete).unwrap();
    assert_eq!(count(conn, "SELECT count(*) FROM ps_crud"), 3);
    assert_eq!(kv(conn, "target_checkpoint_request_id"), Some(i64::MAX));

    let second = oplite_cli::run(&db, &options(&service, dev())).unwrap();
    assert_eq!(second.uploaded, 3);
    assert_eq!(second.confirmed_write_checkpoint, Some(1));
    assert_eq!(second.ops, 3, "the three uploaded changes come back as ops");
    let stats = service.stats();
    assert_eq!((stats.upload_batches, stats.uploaded_ops, stats.write_checkpoints), (1, 3, 1));

    assert_eq!(count(conn, "SELECT count(*) FROM ps_crud"), 0);
    assert_eq!(count(conn, "SELECT count(*) FROM ps_updated_rows"), 0);
    assert_eq!(kv(conn, "target_checkpoint_request_id"), Some(1));
    assert_eq!(kv(conn, "last_applied_checkpoint_request_id"), Some(1));
    let rows = untyped(conn);
    assert_eq!(rows[ROW_TYPE]["thisismyrowid5"], json!({"id": "thisismyrowid5", "n": 5, "note": "edited"}));
    assert!(!rows[ROW_TYPE].contains_key("thisismyrowid6"));
    assert_eq!(rows[ROW_TYPE].len(), 1_999);
    assert_eq!(rows["notes"]["n1"], json!({"id": "n1", "text": "hello"}));
}

#[test]
fn checkpoint_requests_are_posted_as_the_service_takes_them() {
    // The host's side of POST /sync/checkpoint-request, which needs no
    // engine support: the id goes as a decimal string, the answer is the
    // larger of it and the service's record; a service without the
    // endpoint is None.
    let service = service(Dataset::Buckets(Vec::new()));
    let agent = oplite_cli::http::agent(Duration::from_secs(10));
    let post = |id| oplite_cli::http::checkpoint_request(&agent, &service.url(), "dev", "c1", id).unwrap();
    assert_eq!(post(3), Some(3));
    assert_eq!(post(2), Some(3));
    assert_eq!(post(i64::MAX), Some(i64::MAX));
    assert_eq!(service.stats().checkpoint_requests, 3);
    assert_eq!(service.stats().invalid_requests, 0);
    let elsewhere = format!("{}/not-the-service", service.url());
    assert_eq!(oplite_cli::http::checkpoint_request(&agent, &elsewhere, "dev", "c1", 1).unwrap(), None);
    assert!(matches!(
        oplite_cli::http::checkpoint_request(&agent, &service.url(), "not-a-token", "c1", 1),
        Err(oplite_cli::http::RequestError::Unauthorized(_))
    ));
}

#[test]
fn local_writes_are_confirmed_by_a_checkpoint_request_in_requests_mode() {
    use oplite_cli::checkpoint::CheckpointMode;
    let dir = scratch("requests");
    let spec = StreamSpec::benchmark(1_000);
    let service = generated(spec.clone());
    let path = dir.join("app.db");
    let db = Database::open(&path).unwrap();
    let mut requests = options(&service, dev());
    requests.checkpoint_mode = CheckpointMode::Requests;

    // The first connection probes with 1 and seeds the engine with it.
    let first = oplite_cli::run(&db, &requests).unwrap();
    assert_eq!(first.ops, 1_000);
    assert_eq!(first.checkpoint_requests, 1);
    assert_eq!(service.stats().checkpoint_requests, 1);

    let conn = db.conn();
    local::write(conn, ROW_TYPE, "thisismyrowid5", &LocalWrite::Patch(local::columns(json!({"note": "edited"})))).unwrap();
    local::write(conn, "notes", "n1", &LocalWrite::Put(local::columns(json!({"text": "hello"})))).unwrap();
    assert_eq!(kv(conn, "target_checkpoint_request_id"), Some(i64::MAX));

    // Reconnect (seed 1 again: the engine's counter is 1, the service's
    // record 1), upload, allocate 2, post it, gate on it, and the stream
    // reports 2 as its write checkpoint.
    let second = oplite_cli::run(&db, &requests).unwrap();
    assert_eq!(second.uploaded, 2);
    assert_eq!(second.checkpoint_requests, 2, "the connection's seed and the upload's request");
    assert_eq!(second.confirmed_write_checkpoint, Some(2));
    let stats = service.stats();
    assert_eq!((stats.checkpoint_requests, stats.write_checkpoints, stats.invalid_requests), (3, 0, 0));
    assert_eq!(count(conn, "SELECT count(*) FROM ps_crud"), 0);
    assert_eq!(kv(conn, "target_checkpoint_request_id"), Some(2));
    assert_eq!(kv(conn, "last_requested_checkpoint_request_id"), Some(2));
    let rows = untyped(conn);
    assert_eq!(rows[ROW_TYPE]["thisismyrowid5"], json!({"id": "thisismyrowid5", "n": 5, "note": "edited"}));
    assert_eq!(rows["notes"]["n1"], json!({"id": "n1", "text": "hello"}));

    // A fresh database (a new client id) against the same service, then a
    // write during the live stream: seeded, uploaded, confirmed on the
    // open connection.
    let fresh = dir.join("fresh.db");
    drop(Database::open(&fresh).unwrap());
    let mut wrote = false;
    let live = run_live(
        &fresh,
        requests.clone(),
        |conn| kv(conn, "last_applied_checkpoint_request_id").is_some(),
        |conn, _| {
            if count(conn, "SELECT count(*) FROM ps_sync_state") > 0 && !wrote {
                local::write(conn, "todos", "live-1", &LocalWrite::Put(local::columns(json!({"done": 0})))).unwrap();
                wrote = true;
            }
        },
    );
    assert_eq!(live.connections, 1, "the upload and its checkpoint went over the open stream");
    assert_eq!(live.confirmed_write_checkpoint, Some(2));
}

/// Runs the loop on its own thread until `done` says so (or 60 s pass).
fn run_live(
    path: &Path,
    mut options: SyncOptions,
    mut done: impl FnMut(&Connection) -> bool,
    mut during: impl FnMut(&Connection, usize),
) -> Summary {
    options.stop_when = StopWhen::Cancelled;
    options.timeout = Some(Duration::from_secs(60));
    let cancel = options.cancel.clone();
    let db_path = path.to_owned();
    let runner = std::thread::spawn(move || {
        let db = Database::open(&db_path).unwrap();
        oplite_cli::run(&db, &options)
    });
    let observer = Connection::open(path).unwrap();
    observer.busy_timeout(Duration::from_secs(10)).unwrap();
    let started = Instant::now();
    let mut polls = 0;
    while started.elapsed() < Duration::from_secs(60) && !runner.is_finished() {
        std::thread::sleep(Duration::from_millis(25));
        polls += 1;
        if observer.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'ps_crud'", [], |r| r.get::<_, i64>(0)).unwrap_or(0) == 0 {
            continue;
        }
        during(&observer, polls);
        if done(&observer) {
            break;
        }
    }
    cancel.store(true, Ordering::SeqCst);
    runner.join().unwrap().unwrap()
}

#[test]
fn a_write_during_a_live_stream_is_confirmed_by_the_next_checkpoint() {
    let dir = scratch("live");
    let service = generated(StreamSpec::benchmark(1_000));
    let path = dir.join("app.db");
    drop(Database::open(&path).unwrap());
    let mut wrote = false;
    let summary = run_live(
        &path,
        options(&service, dev()),
        |conn| kv(conn, "last_applied_checkpoint_request_id").is_some(),
        |conn, _| {
            let synced = count(conn, "SELECT count(*) FROM ps_sync_state") > 0;
            if synced && !wrote {
                oplite_cli::local::write(conn, "todos", "live-1", &LocalWrite::Put(local::columns(json!({"done": 0}))))
                    .unwrap();
                wrote = true;
            }
        },
    );
    assert!(wrote);
    assert_eq!(summary.connections, 1, "the upload and its checkpoint went over the open stream");
    assert_eq!(summary.uploaded, 1);
    assert_eq!(summary.checkpoints, 2);
    assert_eq!(summary.confirmed_write_checkpoint, Some(1));
    let conn = Connection::open(&path).unwrap();
    assert_eq!(untyped(&conn)["todos"]["live-1"], json!({"id": "live-1", "done": 0}));
    assert_eq!(count(&conn, "SELECT count(*) FROM ps_crud"), 0);
}

#[test]
fn reconnects_and_resumes_after_the_service_drops_the_stream() {
    for binary in [false, true] {
        let dir = scratch(if binary { "drop-bson" } else { "drop-json" });
        let spec = StreamSpec { ops_per_line: 50, ..StreamSpec::benchmark(10_000) };
        let service = generated(spec.clone());
        // 1 keep-alive + 1 checkpoint + 150 data lines, then the cut.
        service.drop_next_stream_after(152);
        let path = dir.join("app.db");
        let db = Database::open(&path).unwrap();
        let mut options = options(&service, dev());
        options.binary = binary;
        let summary = oplite_cli::run(&db, &options).unwrap();
        let stats = service.stats();
        assert_eq!(stats.dropped_streams, 1, "{stats:?} {summary:?}");
        assert_eq!(stats.streams, 2);
        assert_eq!(summary.connections, 2);
        assert_eq!(summary.failed_connections, 1);
        assert_eq!(summary.ops, spec.ops);
        // The second stream resumed: 200 data lines in all, not 350.
        assert_eq!(summary.lines, 152 + 2 + 50 + 1, "binary: {binary}");
        assert_benchmark_rows(&path, &spec);
    }
}

#[test]
fn a_line_the_engine_refuses_ends_the_connection_and_the_loop_reconnects() {
    for binary in [false, true] {
        let dir = scratch(if binary { "garbage-bson" } else { "garbage-json" });
        let spec = StreamSpec { ops_per_line: 100, ..StreamSpec::benchmark(2_000) };
        let service = generated(spec.clone());
        // After the keep-alive and the checkpoint.
        service.corrupt_next_stream_after(2);
        let path = dir.join("app.db");
        let db = Database::open(&path).unwrap();
        let mut options = options(&service, dev());
        options.binary = binary;
        let summary = oplite_cli::run(&db, &options).unwrap();
        assert_eq!(summary.connections, 2, "binary: {binary}");
        assert_eq!(summary.failed_connections, 1);
        assert_eq!(summary.ops, spec.ops);
        assert_benchmark_rows(&path, &spec);
    }
}

#[test]
fn a_line_refused_again_and_again_ends_the_run_with_the_error() {
    let dir = scratch("garbage-always");
    let service = generated(StreamSpec::benchmark(100));
    for _ in 0..10 {
        service.corrupt_next_stream_after(1);
    }
    let db = Database::open(&dir.join("app.db")).unwrap();
    match oplite_cli::run(&db, &options(&service, dev())) {
        Err(Error::Engine(message)) => assert!(message.contains("giving up after 5"), "{message}"),
        other => panic!("expected the engine's error, got {other:?}"),
    }
    assert_eq!(service.stats().streams, 5);
}

#[test]
fn local_writes_through_the_schema_views_are_uploaded_and_confirmed() {
    let dir = scratch("schema-round-trip");
    let service = service(Dataset::Buckets(recorded::buckets_from_lines(&recorded::todo_list_lines())));
    let db = Database::open(&dir.join("todo.db")).unwrap();
    let schema = recorded::todo_list_schema().to_string();
    // The CLI links oplite, which has had powersync_replace_schema since
    // the schema landed: `Unsupported` here is a broken build, not a skip.
    assert_eq!(db.replace_schema(&schema).unwrap(), oplite_cli::engine::SchemaOutcome::Applied);
    oplite_cli::run(&db, &options(&service, dev())).unwrap();
    let conn = db.conn();
    assert_eq!(count(conn, "SELECT count(*) FROM todos"), 4);

    // Through the views: the schema's triggers queue the uploads.
    local::write(conn, "todos", "t9", &LocalWrite::Put(local::columns(json!({"list_id": "l1", "description": "Eggs", "completed": 0})))).unwrap();
    local::write(conn, "todos", "t1", &LocalWrite::Patch(local::columns(json!({"completed": 1})))).unwrap();
    local::write(conn, "todos", "t4", &LocalWrite::Delete).unwrap();
    assert_eq!(count(conn, "SELECT count(*) FROM ps_crud"), 3);
    assert_eq!(count(conn, "SELECT count(*) FROM todos"), 4);

    let summary = oplite_cli::run(&db, &options(&service, dev())).unwrap();
    assert_eq!(summary.uploaded, 3);
    assert_eq!(summary.confirmed_write_checkpoint, Some(1));
    assert_eq!(count(conn, "SELECT count(*) FROM ps_crud"), 0);
    let todos: Vec<(String, String, i64)> = conn
        .prepare("SELECT id, description, completed FROM todos ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        todos,
        vec![
            ("t1".to_owned(), "Milk".to_owned(), 1),
            ("t2".to_owned(), "Bread".to_owned(), 1),
            ("t5".to_owned(), "Review".to_owned(), 0),
            ("t9".to_owned(), "Eggs".to_owned(), 0),
        ]
    );
    // The service holds what was uploaded.
    let rows = service.uploaded_rows();
    assert_eq!(rows[&("todos".to_owned(), "t9".to_owned())], Some(json!({"list_id": "l1", "description": "Eggs", "completed": 0})));
    assert_eq!(rows[&("todos".to_owned(), "t4".to_owned())], None);
}

/// Tokens from the service: the first with `first_ttl`, later ones valid
/// for an hour; counts how many were asked for.
fn issued_tokens(service: &TestService, first_ttl: Duration) -> (TokenSource, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let url = service.url();
    let source = TokenSource::Function(Arc::new(move || {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        let ttl = if n == 0 { first_ttl } else { Duration::from_secs(3600) };
        let mut response = ureq::get(format!("{url}/dev/token?ttl={}", ttl.as_secs())).call().map_err(|e| e.to_string())?;
        response.body_mut().read_to_string().map_err(|e| e.to_string())
    }));
    (source, asked)
}

#[test]
fn a_token_expiring_during_the_stream_is_refreshed_and_the_stream_reopened() {
    let dir = scratch("token-expires");
    let service = generated(StreamSpec::benchmark(500));
    let path = dir.join("app.db");
    drop(Database::open(&path).unwrap());
    let (credentials, asked) = issued_tokens(&service, Duration::from_secs(40));
    // The first token has 40 s: no prefetch at connect. Expire it on the
    // service: the stream sends {"token_expires_in": 0} and closes, the
    // engine asks for credentials (did_expire), the host reconnects.
    let token_holder: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
    let holder = token_holder.clone();
    let inner = credentials.clone();
    let credentials = TokenSource::Function(Arc::new(move || {
        let token = inner.fetch().map_err(|e| e.to_string())?;
        holder.lock().unwrap().get_or_insert(token.clone());
        Ok(token)
    }));
    let mut expired = false;
    let summary = run_live(
        &path,
        options(&service, credentials),
        |_| service.stats().streams >= 2 && asked.load(Ordering::SeqCst) >= 2,
        |conn, _| {
            if !expired && count(conn, "SELECT count(*) FROM ps_sync_state") > 0 {
                service.expire_token(token_holder.lock().unwrap().as_deref().unwrap());
                expired = true;
            }
        },
    );
    assert!(expired);
    assert!(summary.credential_refreshes >= 1, "{summary:?}");
    assert!(summary.connections >= 2, "{summary:?}");
    assert_eq!(service.stats().unauthorized, 0, "the new token was used");
}

#[test]
fn an_expired_token_is_refused_with_401_and_replaced() {
    let dir = scratch("token-401");
    let service = generated(StreamSpec::benchmark(300));
    let stale = service.issue_token(Duration::from_secs(3600));
    service.expire_token(&stale);
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = asked.clone();
    let fresh = service.issue_token(Duration::from_secs(3600));
    let credentials = TokenSource::Function(Arc::new(move || {
        Ok(if counter.fetch_add(1, Ordering::SeqCst) == 0 { stale.clone() } else { fresh.clone() })
    }));
    let db = Database::open(&dir.join("app.db")).unwrap();
    let summary = oplite_cli::run(&db, &options(&service, credentials)).unwrap();
    assert_eq!(service.stats().unauthorized, 1);
    assert_eq!(summary.credential_refreshes, 1);
    assert_eq!(summary.ops, 300);
    assert_eq!(asked.load(Ordering::SeqCst), 2);
}

#[test]
fn a_token_about_to_expire_is_prefetched_and_the_stream_restarted() {
    let dir = scratch("token-prefetch");
    let service = generated(StreamSpec::benchmark(300));
    // 20 s left: the first line says token_expires_in <= 30, the engine
    // asks for credentials without closing, the host fetches them and
    // sends refreshed_token, which closes the stream quietly.
    let (credentials, asked) = issued_tokens(&service, Duration::from_secs(20));
    let db = Database::open(&dir.join("app.db")).unwrap();
    let summary = oplite_cli::run(&db, &options(&service, credentials)).unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    assert_eq!(summary.credential_refreshes, 1);
    assert_eq!(summary.connections, 2);
    assert_eq!(summary.failed_connections, 0);
    assert_eq!(summary.ops, 300);
}

#[test]
fn a_fixed_token_about_to_expire_is_used_without_reconnecting() {
    let dir = scratch("token-fixed-soon");
    let service = generated(StreamSpec::benchmark(300));
    let token = service.issue_token(Duration::from_secs(20));
    let db = Database::open(&dir.join("app.db")).unwrap();
    let summary = oplite_cli::run(&db, &options(&service, TokenSource::Fixed(token))).unwrap();
    assert_eq!(summary.connections, 1, "no reconnect loop with a token that cannot be renewed");
    assert_eq!(summary.credential_refreshes, 0);
    assert_eq!(summary.ops, 300);
}

#[test]
fn a_fixed_token_the_service_refuses_is_a_clear_error() {
    let dir = scratch("token-bad");
    let service = generated(StreamSpec::benchmark(10));
    let db = Database::open(&dir.join("app.db")).unwrap();
    match oplite_cli::run(&db, &options(&service, TokenSource::Fixed("nope".into()))) {
        Err(Error::Credentials(message)) => assert!(message.contains("--token-command"), "{message}"),
        other => panic!("expected a credentials error, got {other:?}"),
    }
}

fn oplite() -> Command {
    Command::new(env!("CARGO_BIN_EXE_oplite"))
}

/// Runs an `oplite` command that must succeed; its stdout.
fn succeeds(command: &mut Command) -> String {
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout
}

#[test]
fn the_binary_syncs_with_a_token_command_and_reports_a_summary() {
    let dir = scratch("binary");
    let service = service(Dataset::Buckets(recorded::buckets_from_lines(&recorded::todo_list_lines())));
    let token_file = dir.join("token");
    std::fs::write(&token_file, service.issue_token(Duration::from_secs(3600))).unwrap();
    let db = dir.join("todo.db");
    let output = oplite()
        .args(["sync", "--once", "--no-progress", "--timeout", "60", "--endpoint", &service.url()])
        .arg("--db")
        .arg(&db)
        .arg("--schema")
        .arg(recorded::recorded_dir().join("todo-list/schema.json"))
        .arg("--token-command")
        .arg(format!("cat '{}'", token_file.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("synced into"), "{stdout}");
    assert!(stdout.contains("11 downloaded into 3 buckets"), "{stdout}");
    let conn = Connection::open(&db).unwrap();
    // --schema must give typed rows: the linked oplite has
    // powersync_replace_schema, so the untyped fallback is a failure here.
    assert!(!stderr.contains("no powersync_replace_schema"), "{stderr}");
    let typed = conn.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'todos'", [], |r| r.get::<_, i64>(0)).unwrap() > 0;
    assert!(typed, "--schema created no todos view\nstdout: {stdout}\nstderr: {stderr}");
    assert_eq!(count(&conn, "SELECT count(*) FROM todos"), 4);
    assert!(!untyped(&conn).contains_key("todos"), "todos left untyped: {:?}", untyped(&conn));

    let refused = oplite()
        .args(["sync", "--once", "--no-progress", "--endpoint", &service.url(), "--token", "wrong"])
        .arg("--db")
        .arg(dir.join("other.db"))
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("401"));

    let usage = oplite().args(["sync", "--db", "x.db", "--endpoint", "http://127.0.0.1:1"]).output().unwrap();
    assert_eq!(usage.status.code(), Some(2), "a missing token is a usage error");
}

/// The service's log of stream requests (`GET /dev/log`).
fn stream_requests(service: &TestService) -> Vec<Value> {
    let mut response = ureq::get(format!("{}/dev/log", service.url())).call().unwrap();
    let log: Value = serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
    log["streams"].as_array().unwrap().clone()
}

#[test]
fn the_binary_sends_parameters_as_an_object_the_service_accepts() {
    let dir = scratch("binary-parameters");
    let service = generated(StreamSpec::benchmark(100));
    let sync = |db: &str, extra: &[&str]| {
        let mut command = oplite();
        command
            .args(["sync", "--once", "--no-progress", "--timeout", "60", "--endpoint", &service.url(), "--token", "dev"])
            .arg("--db")
            .arg(dir.join(db))
            .args(extra);
        command
    };
    // Without --parameters: {} (the service refuses null with 400 PSYNC_S2001).
    succeeds(&mut sync("none.db", &[]));
    succeeds(&mut sync("given.db", &["--parameters", r#"{"team": "a"}"#]));
    let parameters: Vec<Value> = stream_requests(&service).iter().map(|r| r["parameters"].clone()).collect();
    assert_eq!(parameters, [json!({}), json!({"team": "a"})]);
    assert_eq!(service.stats().invalid_requests, 0);
    let not_object = sync("bad.db", &["--parameters", "[1]"]).output().unwrap();
    assert_eq!(not_object.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&not_object.stderr).contains("not a JSON object"));
}

#[test]
fn the_binary_keeps_syncing_until_interrupted_and_then_reports() {
    let dir = scratch("binary-sigint");
    let service = generated(StreamSpec::benchmark(1_000));
    let db = dir.join("app.db");
    let child = oplite()
        .args(["sync", "--no-progress", "--endpoint", &service.url(), "--token", "dev"])
        .arg("--db")
        .arg(&db)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first complete sync, then a little longer (keep-alives).
    let started = Instant::now();
    loop {
        assert!(started.elapsed() < Duration::from_secs(60), "no sync within 60 s");
        std::thread::sleep(Duration::from_millis(100));
        let synced = Connection::open(&db)
            .and_then(|c| c.query_row("SELECT count(*) FROM ps_sync_state", [], |r| r.get::<_, i64>(0)))
            .unwrap_or(0);
        if synced > 0 {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(700));
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    // Synced and idle when stopped: exit 0, and the summary says both.
    assert!(stdout.starts_with("stopped (Ctrl-C), synced into"), "{stdout}");
    assert!(stdout.contains("1,000 downloaded into 10 buckets"), "{stdout}");
}

#[test]
fn the_binary_passes_a_forced_strategy_to_the_engine_and_reports_it() {
    let dir = scratch("binary-strategy");
    let service = generated(StreamSpec::benchmark(1_000));
    let stdout = succeeds(
        oplite()
            .args(["sync", "--once", "--no-progress", "--timeout", "60", "--strategy", "incremental"])
            .args(["--endpoint", &service.url(), "--token", "dev"])
            .arg("--db")
            .arg(dir.join("app.db")),
    );
    assert!(stdout.contains("strategy    incremental"), "{stdout}");
}

#[test]
fn the_demo_runs_small() {
    let dir = scratch("demo");
    let db = dir.join("demo.db");
    let stdout = succeeds(oplite().args(["demo", "--ops", "5000", "--no-progress"]).arg("--db").arg(&db));
    assert!(stdout.contains("5,000 downloaded into 10 buckets"), "{stdout}");
    assert!(stdout.contains("write checkpoint 1 confirmed"), "{stdout}");
    // One of everything is in the singular.
    assert!(stdout.contains("uploaded 2 entries") && stdout.contains("(server copy: 1 upload batch applied)"), "{stdout}");
    // Running it again replaces the database.
    let again = oplite().args(["demo", "--ops", "100", "--no-progress", "--no-round-trip"]).arg("--db").arg(&db).output().unwrap();
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stdout).contains("100 downloaded"));
}

#[test]
fn the_wide_demo_shows_every_column_of_the_wide_rows() {
    let dir = scratch("demo-wide");
    let db = dir.join("wide.db");
    succeeds(oplite().args(["demo", "--shape", "wide", "--ops", "200", "--no-progress", "--no-round-trip"]).arg("--db").arg(&db));
    let spec = StreamSpec::wide(200);
    let conn = Connection::open(&db).unwrap();
    let mut stmt = conn.prepare(&format!("SELECT * FROM {ROW_TYPE} ORDER BY id")).unwrap();
    let names: Vec<String> = stmt.column_names().map(|n| n.to_string()).collect();
    let schema_columns = spec.schema()["tables"][0]["columns"].as_array().unwrap().len();
    assert_eq!(schema_columns, 12);
    assert_eq!(names.len(), 1 + schema_columns, "id and every column: {names:?}");
    let expected: BTreeMap<String, Value> = spec.expected_rows().into_iter().collect();
    let mut seen = 0;
    let mut rows = stmt.query([]).unwrap();
    while let Some(row) = rows.next().unwrap() {
        let id: String = row.get(0).unwrap();
        let want = &expected[&id];
        for (i, name) in names.iter().enumerate().skip(1) {
            let got: rusqlite::types::Value = row.get(i).unwrap();
            let got = match got {
                rusqlite::types::Value::Integer(n) => json!(n),
                rusqlite::types::Value::Real(f) => json!(f),
                rusqlite::types::Value::Text(t) => json!(t),
                other => panic!("{id}.{name}: {other:?}"),
            };
            assert_eq!(&got, &want[name.as_str()], "{id}.{name}");
        }
        seen += 1;
    }
    assert_eq!(seen as u64, spec.row_count());
}
