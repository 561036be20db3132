//! The way back (src/uninstall/): a database oplite synced, uninstalled with
//! `oplite_uninstall()`, goes on with the PowerSync core as if the core had
//! synced it all along. Differential: two files get the same calls, one
//! through oplite and the other through the core; at a point of the session
//! oplite's file is uninstalled and opened with the core, and from then on
//! both files must hold the same tables, buckets, upload queue, offline
//! sync status, and schema (`sqlite_master`, SQL with its spacing
//! normalised), and answer the same calls alike: the core's first `start`
//! on the uninstalled file asks for the same buckets from the same
//! positions. A second round adopts the uninstalled file with oplite again
//! and goes on, compared with the core as every differential test is.
//! Scripted sessions stop at chosen points; seeded ones (the shared
//! `oplite_test_data::session`) wherever their seed leaves them.
mod common;

use std::path::{Path, PathBuf};

use common::cores::Cores;
use common::diff::{normalise, rows, Answer, Arg, Pair};
use common::lines::op;
use common::driver::{open_file, stored_crud, TempDir};
use common::{error_code, load, reference_so};
use oplite_test_data::session::{requested_buckets, Session};
use oplite_test_data::{ServerModel, ServerOptions};
use rusqlite::Connection;
use serde_json::{json, Value};

/// Typed tables with an index and include_old, a local-only table.
const SCHEMA: &str = r#"{"tables":[
  {"name":"items","columns":[{"name":"name","type":"text"},{"name":"n","type":"integer"},{"name":"x","type":"real"}],
   "indexes":[{"name":"by_name","columns":[{"name":"name","ascending":true,"type":"text"}]}]},
  {"name":"lists","include_old":true,"columns":[{"name":"title","type":"text"}]},
  {"name":"drafts","local_only":true,"columns":[{"name":"text","type":"text"}]}
]}"#;

/// The app's own table, synced as a raw table.
const THINGS: &str = "CREATE TABLE things(id TEXT PRIMARY KEY NOT NULL, label TEXT)";

fn raw_tables() -> Value {
    json!([{"name": "things", "put": {"sql": "INSERT OR REPLACE INTO things(id, label) VALUES (?, ?)",
            "params": ["Id", {"Column": "label"}]},
            "delete": {"sql": "DELETE FROM things WHERE id = ?", "params": ["Id"]}}])
}

fn open_core(path: &Path) -> Connection {
    let db = Connection::open(path).unwrap();
    db.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;").unwrap();
    load(&db, &reference_so(), "sqlite3_powersync_init").unwrap();
    db
}

fn in_tx<T>(db: &Connection, body: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    db.execute_batch("BEGIN")?;
    let result = body(db);
    db.execute_batch(if result.is_ok() { "COMMIT" } else { "ROLLBACK" })?;
    result
}

fn replace_schema(db: &Connection) {
    in_tx(db, |db| db.query_row("SELECT powersync_replace_schema(?1)", [SCHEMA], |_| Ok(()))).unwrap();
}

fn checksum(ops: &[Value]) -> u32 {
    ops.iter().map(|o| o["checksum"].as_u64().unwrap() as u32).fold(0, u32::wrapping_add)
}

/// The session's two buckets: b1 (priority 3) and b2 (priority 1), first
/// their initial ops, then (`later`) what the server has next.
fn ops(bucket: &str, later: bool) -> Vec<Value> {
    match (bucket, later) {
        ("b1", false) => vec![
            op(1, "items", "i1", Some(r#"{"n": 1, "name": "one", "x": 1.5, "extra": "kept"}"#)),
            op(2, "items", "i2", Some(r#"{"name":"two","n":2}"#)),
            op(3, "lists", "l1", Some(r#"{"title":"groceries"}"#)),
            op(4, "things", "t1", Some(r#"{"label":"raw"}"#)),
            op(5, "other", "o1", Some(r#"{"untyped":true}"#)),
        ],
        ("b2", false) => vec![op(6, "items", "i3", Some(r#"{"name":"three","n":3.0}"#)), op(7, "lists", "l2", Some(r#"{"title":"work"}"#))],
        ("b1", true) => vec![
            op(8, "items", "i2", Some(r#"{"name":"two again","n":22}"#)),
            op(9, "items", "i1", None),
            op(10, "items", "i4", Some(r#"{"name":"four"}"#)),
        ],
        (_, _) => vec![op(11, "lists", "l3", Some(r#"{"title":"new"}"#))],
    }
}

/// Both files and the calls they get alike.
struct Twin {
    dir: TempDir,
    pair: Pair,
}

impl Twin {
    fn new(tag: &str) -> Twin {
        let dir = TempDir::new(tag);
        let ours = open_file(&dir.join("ours.db"), None);
        let theirs = open_core(&dir.join("theirs.db"));
        for db in [&ours, &theirs] {
            db.execute_batch(THINGS).unwrap();
            common::init_fixed_client_id(db);
            replace_schema(db);
        }
        let mut twin = Twin { dir, pair: Pair { ours, theirs, trace: Vec::new(), extra_queries: Vec::new() } };
        twin.compare_views();
        twin
    }

    fn path(&self, which: &str) -> PathBuf {
        self.dir.join(&format!("{which}.db"))
    }

    /// Queries compared after every call, besides the internal tables.
    fn compare_views(&mut self) {
        self.pair.extra_queries = [
            ("items", "SELECT id, name, n, typeof(n), x FROM items ORDER BY id"),
            ("lists", "SELECT * FROM lists ORDER BY id"),
            ("drafts", "SELECT * FROM drafts ORDER BY id"),
            ("things", "SELECT * FROM things ORDER BY id"),
            ("sqlite_sequence", "SELECT name, seq FROM sqlite_sequence ORDER BY name"),
        ]
        .iter()
        .map(|(name, sql)| (name.to_string(), sql.to_string()))
        .collect();
    }

    /// Also the data tables' raw rows and the migration history, once both
    /// are in the core's layout.
    /// `exact_text`: the `data` texts must be equal, else the members they
    /// hold (sorted, nulls left out): a row whose op was superseded by one
    /// downloaded but not applied yet has its values, not its text, in
    /// ps_oplog.
    fn compare_data_tables(&mut self, exact_text: bool) {
        self.pair.extra_queries.push(("ps_migration".into(), "SELECT id, down_migrations FROM ps_migration ORDER BY id".into()));
        let members = "(SELECT group_concat(key || '=' || type || ':' || coalesce(atom, value), ',') \
                       FROM (SELECT * FROM json_each(data) WHERE type != 'null' ORDER BY key))";
        let data = if exact_text { "data" } else { members };
        for table in ["ps_data__items", "ps_data__lists", "ps_data_local__drafts"] {
            self.pair.extra_queries.push((table.into(), format!("SELECT id, {data} FROM {table} ORDER BY id")));
        }
    }

    fn control(&mut self, op: &str, payload: Value) -> Answer {
        match payload {
            Value::Null => self.pair.control(op, Arg::Null),
            payload => self.pair.control(op, Arg::Text(&payload.to_string())),
        }
    }

    fn start(&mut self, options: Value) -> Answer {
        let mut options = options;
        options["schema"] = json!({"tables": [], "raw_tables": raw_tables()});
        self.control("start", options)
    }

    fn line(&mut self, line: Value) -> Answer {
        self.control("line_text", line)
    }

    fn checkpoint(&mut self, last: u32, buckets: &[(&str, u32, i64)]) {
        let buckets: Vec<Value> = buckets
            .iter()
            .map(|(name, sum, priority)| json!({"bucket": name, "checksum": sum, "priority": priority}))
            .collect();
        self.line(json!({"checkpoint": {"last_op_id": last.to_string(), "buckets": buckets}}));
    }

    fn data(&mut self, bucket: &str, ops: Vec<Value>) {
        self.line(json!({"data": {"bucket": bucket, "data": ops}}));
    }

    fn complete(&mut self, last: u32) -> Answer {
        self.line(json!({"checkpoint_complete": {"last_op_id": last.to_string()}}))
    }

    /// Runs local writes through the views in one transaction on both.
    fn write(&mut self, sql: &str) {
        self.pair.execute(&format!("BEGIN; {sql}; COMMIT"));
        self.pair.assert_same_tables();
    }

    /// The first checkpoint, downloaded and applied.
    fn initial_sync(&mut self) {
        self.start(json!({}));
        let (b1, b2) = (ops("b1", false), ops("b2", false));
        self.checkpoint(7, &[("b1", checksum(&b1), 3), ("b2", checksum(&b2), 1)]);
        self.data("b1", b1);
        self.data("b2", b2);
        self.complete(7);
        self.control("stop", Value::Null);
    }

    /// What the server has next: uploads the queue (as the SDK does:
    /// delete the entries, then a write checkpoint), then the next
    /// checkpoint, downloaded from the positions `start` asks for.
    fn sync_on(&mut self) {
        let answer = self.start(json!({}));
        let Answer::Json(instructions) = &answer else { panic!("start: {answer:?}") };
        let requested = requested_buckets(instructions);
        let queued = stored_crud(&self.pair.ours);
        if let Some(max) = queued.keys().last() {
            self.pair.execute(&format!("BEGIN; DELETE FROM ps_crud WHERE id <= {max}; COMMIT"));
            self.pair.control("target_checkpoint_request_id", Arg::Text("5"));
            self.control("completed_upload", Value::Null);
        }
        let all = |bucket| ops(bucket, false).into_iter().chain(ops(bucket, true)).collect::<Vec<_>>();
        let (b1, b2) = (all("b1"), all("b2"));
        let mut checkpoint = json!({"checkpoint": {"last_op_id": "11", "buckets": [
            {"bucket": "b1", "checksum": checksum(&b1), "priority": 3},
            {"bucket": "b2", "checksum": checksum(&b2), "priority": 1},
        ]}});
        if !queued.is_empty() {
            checkpoint["checkpoint"]["write_checkpoint"] = json!("5");
        }
        self.line(checkpoint);
        for (name, ops) in [("b1", b1), ("b2", b2)] {
            let after = requested.get(name).copied().unwrap_or(0);
            let missing: Vec<Value> =
                ops.into_iter().filter(|o| o["op_id"].as_str().unwrap().parse::<i64>().unwrap() > after).collect();
            if !missing.is_empty() {
                self.data(name, missing);
            }
        }
        self.complete(11);
        self.control("stop", Value::Null);
    }

    /// `powersync_offline_sync_status()` of both, compared.
    fn same_offline_status(&self) {
        let read = |db: &Connection| {
            let text: String =
                in_tx(db, |db| db.query_row("SELECT powersync_offline_sync_status()", [], |r| r.get(0))).unwrap();
            let mut value: Value = serde_json::from_str(&text).unwrap();
            normalise(&mut value);
            value
        };
        assert_eq!(read(&self.pair.ours), read(&self.pair.theirs), "powersync_offline_sync_status() differs");
    }

    /// Uninstalls oplite from our file and opens it with the core; returns
    /// the report.
    fn uninstall(self) -> (Twin, Value) {
        let Twin { dir, pair } = self;
        let crud = stored_crud(&pair.ours);
        let client_id = |db: &Connection| -> String {
            db.query_row("SELECT value FROM ps_kv WHERE key = 'client_id'", [], |r| r.get(0)).unwrap()
        };
        let id = client_id(&pair.ours);
        let report: String =
            in_tx(&pair.ours, |db| db.query_row("SELECT oplite_uninstall()", [], |r| r.get(0))).unwrap();
        drop(pair.ours);
        let ours = open_core(&dir.join("ours.db"));
        assert_eq!(stored_crud(&ours), crud, "the queued uploads survive, with their ids and transactions");
        assert_eq!(client_id(&ours), id, "the client id survives");
        let mut twin = Twin { dir, pair: Pair { ours, theirs: pair.theirs, trace: pair.trace, extra_queries: Vec::new() } };
        twin.compare_views();
        (twin, serde_json::from_str(&report).unwrap())
    }

    /// Opens our file with oplite again, which adopts it.
    fn adopt(self) -> Twin {
        let Twin { dir, pair } = self;
        drop(pair.ours);
        let ours = open_file(&dir.join("ours.db"), None);
        replace_schema(&ours);
        let mut twin = Twin { dir, pair: Pair { ours, theirs: pair.theirs, trace: pair.trace, extra_queries: Vec::new() } };
        twin.compare_views();
        twin
    }
}

/// `sqlite_master` with SQL whitespace normalised: runs collapsed to one
/// space, none next to punctuation.
fn schema(db: &Connection, views_too: bool) -> Vec<String> {
    let filter = if views_too {
        ""
    } else {
        " AND type IN ('table', 'index') AND NOT (type = 'index' AND tbl_name LIKE 'ps_data%')"
    };
    rows(db, &format!("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE 1{filter} ORDER BY type, name"))
        .into_iter()
        .map(|row| normalise_sql(&row))
        .collect()
}

fn normalise_sql(sql: &str) -> String {
    let collapsed = sql.replace("\\n", " ").split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = collapsed;
    for p in ["(", ")", ","] {
        out = out.replace(&format!(" {p}"), p).replace(&format!("{p} "), p);
    }
    out
}

/// Uninstalls our file and checks that it is the core's: the internal
/// layout before the core's replace_schema, all of `sqlite_master` after
/// it, and every table and status.
fn uninstall_and_compare(twin: Twin, exact_text: bool) -> Twin {
    let (mut twin, report) = twin.uninstall();
    assert_eq!(report["changed"], true, "{report}");
    assert_eq!(report["core_version"], 14, "{report}");
    assert!(report["data_tables"].as_array().unwrap().len() >= 3, "{report}");
    // Before the core's replace_schema: the tables and indexes (but the
    // data tables', which come from the schema) are the core's already.
    assert_eq!(schema(&twin.pair.ours, false), schema(&twin.pair.theirs, false), "the internal layout differs from the core's");
    let ours_path = twin.path("ours");
    assert!(ours_path.exists());
    for db in [&twin.pair.ours, &twin.pair.theirs] {
        in_tx(db, |db| db.query_row("SELECT powersync_init()", [], |_| Ok(()))).unwrap();
        replace_schema(db);
    }
    assert_eq!(schema(&twin.pair.ours, true), schema(&twin.pair.theirs, true), "sqlite_master differs from the core's");
    twin.compare_data_tables(exact_text);
    twin.pair.assert_same_tables();
    twin.same_offline_status();
    twin
}

/// The steps after a scripted session: uninstall and compare, sync on with
/// the core, adopt with oplite again, sync on again.
fn uninstall_and_go_on(twin: Twin) {
    let mut twin = uninstall_and_compare(twin, true);

    // The core goes on from the stored positions, uploads the queue once.
    twin.sync_on();
    twin.same_offline_status();
    assert!(stored_crud(&twin.pair.ours).is_empty());

    // Back to oplite: adopted again, and on with the core as the yardstick.
    let mut twin = twin.adopt();
    twin.write("INSERT INTO items(id, name, n) VALUES ('i9', 'nine', 9)");
    twin.sync_on();
    twin.pair.assert_same_tables();
    twin.same_offline_status();
}

#[test]
fn after_the_initial_sync() {
    let mut twin = Twin::new("uninstall-initial");
    twin.initial_sync();
    uninstall_and_go_on(twin);
}

#[test]
fn mid_download() {
    let mut twin = Twin::new("uninstall-mid");
    twin.start(json!({}));
    let (b1, b2) = (ops("b1", false), ops("b2", false));
    twin.checkpoint(7, &[("b1", checksum(&b1), 3), ("b2", checksum(&b2), 1)]);
    twin.data("b1", b1);
    // The connection drops before b2 and the completion.
    twin.control("stop", Value::Null);
    uninstall_and_go_on(twin);
}

#[test]
fn with_pending_uploads() {
    let mut twin = Twin::new("uninstall-uploads");
    twin.initial_sync();
    twin.write("INSERT INTO items(id, name, n, x) VALUES ('i7', 'seven', 7, 0.5); UPDATE items SET name = 'uno' WHERE id = 'i1'");
    twin.write("DELETE FROM lists WHERE id = 'l1'; INSERT INTO drafts(id, text) VALUES ('d1', 'local only')");
    twin.write("UPDATE lists SET title = 'office' WHERE id = 'l2'");
    assert_eq!(stored_crud(&twin.pair.ours).len(), 4, "drafts is local-only: no upload");
    uninstall_and_go_on(twin);
}

#[test]
fn with_a_partial_priority_checkpoint() {
    let mut twin = Twin::new("uninstall-partial");
    twin.start(json!({}));
    let (b1, b2) = (ops("b1", false), ops("b2", false));
    twin.checkpoint(7, &[("b1", checksum(&b1), 3), ("b2", checksum(&b2), 1)]);
    twin.data("b2", b2);
    twin.line(json!({"partial_checkpoint_complete": {"last_op_id": "7", "priority": 1}}));
    twin.data("b1", b1);
    twin.control("stop", Value::Null);
    uninstall_and_go_on(twin);
}

#[test]
fn with_stream_subscriptions() {
    let mut twin = Twin::new("uninstall-streams");
    twin.control("subscriptions", json!({"subscribe": {"stream": {"name": "s1", "params": {"p": 1}}, "ttl": 3600}}));
    twin.control("subscriptions", json!({"subscribe": {"stream": {"name": "s2"}, "priority": 1}}));
    twin.start(json!({"active_streams": [{"name": "s1", "params": {"p": 1}}]}));
    let (b1, b2) = (ops("b1", false), ops("b2", false));
    twin.line(json!({"checkpoint": {"last_op_id": "7", "buckets": [
        {"bucket": "b1", "checksum": checksum(&b1), "priority": 3, "subscriptions": [{"sub": 0}]},
        {"bucket": "b2", "checksum": checksum(&b2), "priority": 1, "subscriptions": [{"sub": 1}, {"default": 0}]},
    ], "streams": [
        {"name": "d", "is_default": true, "errors": []},
        {"name": "s1", "is_default": false, "errors": []},
        {"name": "s2", "is_default": false, "errors": []},
    ]}}));
    twin.data("b1", b1);
    twin.data("b2", b2);
    twin.complete(7);
    twin.control("stop", Value::Null);
    uninstall_and_go_on(twin);
}

/// Seeded sessions (`oplite_test_data::session`: several buckets and
/// priorities, checkpoint diffs, dropped streams, checksum failures, local
/// writes and uploads) end wherever the seed leaves them, often mid-download
/// or with uploads queued; then the uninstall, and more of the session on
/// both files with the core, then with oplite adopting ours again.
#[test]
fn seeded_sessions_uninstall_and_go_on() {
    let seeds = std::env::var("OPLITE_UNINSTALL_SEEDS").ok().and_then(|n| n.parse().ok()).unwrap_or(12u64);
    for seed in 0..seeds {
        let twin = Twin::new(&format!("uninstall-seed-{seed}"));
        let options = ServerOptions { buckets: 1 + (seed % 4) as usize, ..Default::default() };
        let mut session = Session::new(Cores(twin.pair), ServerModel::new(seed, options), seed);
        session.run();
        // The app disconnects first (the session may end with a stream open).
        let mut twin = Twin { dir: twin.dir, pair: session.host.0 };
        twin.control("stop", Value::Null);
        let twin = uninstall_and_compare(twin, false);
        session.host = Cores(twin.pair);
        for _ in 0..2 {
            session.server.mutate(10);
            session.iteration();
        }
        let twin = Twin { dir: twin.dir, pair: session.host.0 }.adopt();
        session.host = Cores(twin.pair);
        session.server.mutate(10);
        session.iteration();
        session.host.0.assert_same_tables();
        eprintln!("seed {seed}: uninstalled, synced on with the core, adopted again");
    }
}

/// The refusals: outside a transaction, during a sync iteration. Each
/// leaves the database as it was.
#[test]
fn refusals_change_nothing() {
    let dir = TempDir::new("uninstall-refused");
    let db = open_file(&dir.join("a.db"), None);
    let before = |db: &Connection| schema(db, true);
    in_tx(&db, |db| db.query_row("SELECT powersync_init()", [], |_| Ok(()))).unwrap();
    replace_schema(&db);
    let initial = before(&db);

    let err = db.query_row("SELECT oplite_uninstall()", [], |r| r.get::<_, String>(0)).unwrap_err();
    assert_eq!(error_code(&err) & 0xff, 21, "outside a transaction: SQLITE_MISUSE ({err})");

    db.execute_batch("BEGIN").unwrap();
    db.query_row("SELECT powersync_control('start', NULL)", [], |_| Ok(())).unwrap();
    let err = db.query_row("SELECT oplite_uninstall()", [], |r| r.get::<_, String>(0)).unwrap_err();
    assert!(err.to_string().contains("a sync iteration is active"), "{err}");
    db.query_row("SELECT powersync_control('stop', NULL)", [], |_| Ok(())).unwrap();
    db.execute_batch("COMMIT").unwrap();

    assert_eq!(before(&db), initial, "a refused uninstall changes nothing");
}

/// A database the core wrote needs nothing; one oplite uninstalled twice
/// neither.
#[test]
fn a_core_database_is_left_alone() {
    let dir = TempDir::new("uninstall-core");
    let path = dir.join("core.db");
    {
        let core = open_core(&path);
        in_tx(&core, |db| db.query_row("SELECT powersync_init()", [], |_| Ok(()))).unwrap();
        replace_schema(&core);
    }
    let db = open_file(&path, None);
    let initial = schema(&db, true);
    let report: String = in_tx(&db, |db| db.query_row("SELECT oplite_uninstall()", [], |r| r.get(0))).unwrap();
    let report: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["changed"], false, "{report}");
    assert_eq!(schema(&db, true), initial);
}
