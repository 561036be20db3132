//! oplite inside SQLCipher (rusqlite's bundled SQLCipher, which this
//! workspace links in place of SQLite): a sync, the upload queue and the
//! schema's views on an encrypted file, through the static registration
//! (the `oplite` host's library) and through liboplite.so's entry point;
//! no plaintext in the stored bytes, checked against the same run
//! unencrypted, where the same search must find it; a wrong or missing key
//! refused with SQLite's own error and the file left as it was; and a
//! process killed (SIGKILL) mid-sync whose encrypted file opens with the
//! key, passes both integrity checks and syncs on, its queued upload sent.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use oplite_cipher::{cipher_version, give_key, loadable_path, open, plaintext_found, scratch, stored_bytes, LOCAL_MARKER, SQLITE_HEADER, SYNCED_MARKER};
use oplite_cli::local::{self, LocalWrite};
use oplite_cli::{Error, StopWhen, SyncOptions, TokenSource};
use oplite_test_data::recorded;
use oplite_test_data::stream::ROW_TYPE;
use oplite_test_data::StreamSpec;
use oplite_test_server::{Dataset, ServiceOptions, TestService};
use rusqlite::Connection;
use serde_json::{json, Value};

const KEY: &str = "correct horse 'battery' staple";
const CHILD_ENV: &str = "OPLITE_CIPHER_CHILD";

fn service(spec: &StreamSpec) -> TestService {
    let mut options = ServiceOptions::new(Dataset::Generated(spec.clone()));
    options.keepalive = Duration::from_millis(500);
    TestService::start(options).unwrap()
}

fn options(url: String) -> SyncOptions {
    let mut options = SyncOptions::new(url, TokenSource::Fixed("dev".into()));
    options.stop_when = StopWhen::Synced;
    options.timeout = Some(Duration::from_secs(120));
    options.backoff = oplite_cli::Backoff::new(Duration::from_millis(20), Duration::from_millis(200));
    options
}

fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

fn integrity(conn: &Connection) -> (String, Vec<String>) {
    let quick: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    // SQLCipher's own check of every page's MAC: a row per bad page.
    let mut stmt = conn.prepare("PRAGMA cipher_integrity_check").unwrap();
    let bad = stmt.query_map([], |r| r.get(0)).unwrap().collect::<Result<Vec<String>, _>>().unwrap();
    (quick, bad)
}

#[test]
fn the_build_is_sqlcipher() {
    let conn = Connection::open_in_memory().unwrap();
    let version = cipher_version(&conn);
    assert!(!version.is_empty(), "PRAGMA cipher_version is empty: not a SQLCipher build");
    let sqlite: String = conn.query_row("SELECT sqlite_version()", [], |r| r.get(0)).unwrap();
    eprintln!("SQLCipher {version}, SQLite {sqlite}");
}

/// Syncs `spec` into `dir/app.db` (keyed with `key`), uploads one local
/// write, and leaves a second one queued.
fn sync_write_and_queue(dir: &Path, spec: &StreamSpec, key: Option<&str>) -> TestService {
    let service = service(spec);
    let db = open(&dir.join("app.db"), key).unwrap();
    db.replace_schema(&spec.schema().to_string()).unwrap();
    let first = oplite_cli::run(&db, &options(service.url())).unwrap();
    assert_eq!(first.ops, spec.row_count());
    let conn = db.conn();
    assert_eq!(count(conn, &format!("SELECT count(*) FROM {ROW_TYPE}")), spec.row_count() as i64);

    local::write(conn, ROW_TYPE, "uploaded-1", &LocalWrite::Put(local::columns(json!({"name": "sent"})))).unwrap();
    let second = oplite_cli::run(&db, &options(service.url())).unwrap();
    assert_eq!((second.uploaded, second.confirmed_write_checkpoint), (1, Some(1)));
    assert_eq!(service.uploaded_rows()[&(ROW_TYPE.to_owned(), "uploaded-1".to_owned())], Some(json!({"name": "sent"})));

    local::write(conn, ROW_TYPE, "queued-1", &LocalWrite::Put(local::columns(json!({"name": LOCAL_MARKER})))).unwrap();
    let queued: String = conn.query_row("SELECT data FROM ps_crud", [], |r| r.get(0)).unwrap();
    assert!(queued.contains(LOCAL_MARKER), "{queued}");
    service
}

#[test]
fn an_encrypted_file_syncs_uploads_and_holds_no_plaintext() {
    let spec = StreamSpec::wide(3_000);
    let needles = [SYNCED_MARKER, LOCAL_MARKER, SQLITE_HEADER];
    // Unencrypted first: the same search finds every marker, so it can fail.
    let plain = scratch("plain");
    drop(sync_write_and_queue(&plain, &spec, None));
    assert_eq!(plaintext_found(&plain, &needles).len(), needles.len(), "{:?}", plaintext_found(&plain, &needles));

    let encrypted = scratch("encrypted");
    drop(sync_write_and_queue(&encrypted, &spec, Some(KEY)));
    assert_eq!(plaintext_found(&encrypted, &needles), Vec::<String>::new());

    // The key is all it takes to read it back, queue included.
    let db = open(&encrypted.join("app.db"), Some(KEY)).unwrap();
    let conn = db.conn();
    assert_eq!(count(conn, &format!("SELECT count(*) FROM {ROW_TYPE}")), spec.row_count() as i64 + 2);
    assert_eq!(count(conn, "SELECT count(*) FROM ps_crud"), 1);
    assert_eq!(integrity(conn), ("ok".to_owned(), vec![]));
}

#[test]
fn a_wrong_or_missing_key_is_refused_and_the_file_is_left_as_it_was() {
    let dir = scratch("wrong-key");
    drop(sync_write_and_queue(&dir, &StreamSpec::wide(500), Some(KEY)));
    let before = stored_bytes(&dir);
    for key in [Some("not the key"), None] {
        match open(&dir.join("app.db"), key) {
            Err(Error::LocalDatabase(message)) => assert!(message.contains("file is not a database"), "{message}"),
            Err(other) => panic!("key {key:?}: {other}"),
            Ok(_) => panic!("key {key:?}: opened"),
        }
        assert!(stored_bytes(&dir) == before, "key {key:?}: the files changed");
    }
    let db = open(&dir.join("app.db"), Some(KEY)).unwrap();
    assert_eq!(count(db.conn(), "SELECT count(*) FROM ps_crud"), 1);
}

/// liboplite.so loaded into a keyed connection, with the entry point the
/// SDKs use.
fn load_oplite(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    give_key(&conn, KEY).unwrap();
    let library = loadable_path();
    assert!(library.exists(), "{} is missing: build it (cargo build --release --manifest-path loadable/Cargo.toml) or set OPLITE_SO", library.display());
    // SAFETY: the library is oplite's own build, loaded as the SDKs load it.
    unsafe {
        conn.load_extension_enable().unwrap();
        conn.load_extension(&library, Some("sqlite3_powersync_init")).unwrap();
        conn.load_extension_disable().unwrap();
    }
    conn
}

/// `sql`'s one value, in a transaction as the SDKs call oplite.
fn in_transaction(conn: &Connection, sql: &str, arg: &str) -> Option<String> {
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    let out = conn.query_row(sql, [arg], |r| r.get(0)).unwrap();
    conn.execute_batch("COMMIT").unwrap();
    out
}

#[test]
fn the_loadable_entry_point_syncs_and_queues_on_an_encrypted_file() {
    let dir = scratch("loadable");
    let path = dir.join("todo.db");
    {
        let conn = load_oplite(&path);
        conn.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
        in_transaction(&conn, "SELECT powersync_replace_schema(?1)", &recorded::todo_list_schema().to_string());
        let started = in_transaction(&conn, "SELECT powersync_control('start', ?1)", r#"{"parameters": {}}"#).unwrap();
        assert!(started.contains("EstablishSyncStream"), "{started}");
        for line in recorded::todo_list_lines() {
            in_transaction(&conn, "SELECT powersync_control('line_text', ?1)", &line.to_string());
        }
        assert_eq!(count(&conn, "SELECT count(*) FROM todos"), 4);
        conn.execute("INSERT INTO todos(id, list_id, description, completed) VALUES ('t9', 'l1', ?1, 0)", [LOCAL_MARKER]).unwrap();
        let queued: String = conn.query_row("SELECT data FROM ps_crud", [], |r| r.get(0)).unwrap();
        let queued: Value = serde_json::from_str(&queued).unwrap();
        assert_eq!((queued["op"].as_str(), queued["id"].as_str()), (Some("PUT"), Some("t9")));
    }
    assert_eq!(plaintext_found(&dir, &["Groceries", "Work (shared)", LOCAL_MARKER, SQLITE_HEADER]), Vec::<String>::new());
    let conn = load_oplite(&path);
    let todos: BTreeMap<String, String> = conn
        .prepare("SELECT id, description FROM todos")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(todos.get("t9").map(String::as_str), Some(LOCAL_MARKER));
    assert_eq!(todos.len(), 5);
    assert_eq!(count(&conn, "SELECT count(*) FROM ps_crud"), 1);
    assert_eq!(integrity(&conn), ("ok".to_owned(), vec![]));
}

/// The child of the kill test: syncs `path` from `url` until killed.
#[test]
fn kill_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else { return };
    let (path, url) = spec.split_once('|').unwrap();
    let db = open(Path::new(path), Some(KEY)).unwrap();
    println!("opened");
    oplite_cli::run(&db, &options(url.to_owned())).unwrap();
    println!("synced");
}

#[test]
fn a_process_killed_mid_sync_leaves_an_encrypted_file_that_syncs_on() {
    let spec = StreamSpec { ops_per_line: 100, ..StreamSpec::wide(60_000) };
    let service = service(&spec);
    let dir = scratch("kill");
    let path = dir.join("app.db");
    {
        let db = open(&path, Some(KEY)).unwrap();
        db.replace_schema(&spec.schema().to_string()).unwrap();
        local::write(db.conn(), ROW_TYPE, "queued-1", &LocalWrite::Put(local::columns(json!({"name": LOCAL_MARKER})))).unwrap();
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["kill_child", "--exact", "--nocapture", "--test-threads=1", "-q"])
        .env(CHILD_ENV, format!("{}|{}", path.display(), service.url()))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.join("child.stderr")).unwrap())
        .spawn()
        .unwrap();
    // Kill once a third of the ops are stored, mid-download: the parent
    // reads the child's commits through a keyed connection of its own.
    let watcher = Connection::open(&path).unwrap();
    give_key(&watcher, KEY).unwrap();
    watcher.busy_timeout(Duration::from_secs(5)).unwrap();
    let started = Instant::now();
    while watcher.query_row("SELECT count(*) FROM ps_oplog", [], |r| r.get::<_, i64>(0)).unwrap_or(0) < spec.ops as i64 / 3 {
        assert!(started.elapsed() < Duration::from_secs(60), "the child stored too little in 60 s");
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the child ended ({status}) before it was killed: {}", std::fs::read_to_string(dir.join("child.stderr")).unwrap());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    drop(watcher);
    child.kill().unwrap();
    assert_eq!(child.wait().unwrap().signal(), Some(9));

    let db = open(&path, Some(KEY)).unwrap();
    let conn = db.conn();
    assert_eq!(integrity(conn), ("ok".to_owned(), vec![]));
    let held = count(conn, "SELECT count(*) FROM ps_oplog");
    let summary = oplite_cli::run(&db, &options(service.url())).unwrap();
    eprintln!("killed with {held} ops stored; the next run downloaded {} ops", summary.ops);
    // It resumed from the stored positions: what was stored is not sent
    // again (the one op more is the queued write, uploaded and synced back).
    assert!(held > 0 && summary.ops as i64 <= spec.ops as i64 - held + 1, "{held} ops held, {} downloaded", summary.ops);
    assert_eq!(count(conn, &format!("SELECT count(*) FROM {ROW_TYPE}")), spec.row_count() as i64 + 1);
    assert_eq!(count(conn, "SELECT count(*) FROM ps_crud"), 0);
    assert_eq!(service.uploaded_rows()[&(ROW_TYPE.to_owned(), "queued-1".to_owned())], Some(json!({"name": LOCAL_MARKER})));
    assert_eq!(integrity(conn), ("ok".to_owned(), vec![]));
    drop(db);
    assert_eq!(plaintext_found(&dir, &[SYNCED_MARKER, LOCAL_MARKER, SQLITE_HEADER]), Vec::<String>::new());
}
