//! Records seeded protocol sessions on the native build, for the web
//! package's Node tests to replay against the wasm build.
//!
//! The sessions are `oplite_test_data::session`'s, which
//! `extension/tests/differential_sync.rs` also runs to check the native
//! build against the reference core: several buckets and
//! priorities, PUT/REMOVE/MOVE/CLEAR, rows shared by buckets, checksum
//! mismatches, checkpoint diffs, interrupted streams and restarts, pending
//! local writes and write checkpoints, JSON or BSON lines. Each file holds
//! one seed: every call with the native answer, then a dump of the internal
//! tables. `wasm/test/node.test.mjs` feeds the same calls to the wasm build
//! and requires the same answers and tables.
//!
//!     cargo run -p oplite-wasm-native --bin record-sessions -- <out-dir> [seeds]

use std::io::Write;

use oplite_test_data::session::{Host, Payload, Session};
use oplite_test_data::{ServerModel, ServerOptions};
use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;
use serde_json::{json, Value};

const CLIENT_ID: &str = "00000000-0000-4000-8000-000000000000";

fn sql_json(value: SqlValue) -> Value {
    match value {
        SqlValue::Null => Value::Null,
        SqlValue::Integer(i) => json!(i),
        SqlValue::Real(r) => json!(r),
        SqlValue::Text(t) => json!(t),
        SqlValue::Blob(b) => json!(format!("<{} bytes>", b.len())),
    }
}

/// The golden harness's normalisation: timestamps zeroed, oplite's own
/// sync_local DEBUG line dropped.
fn normalise(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if key == "last_synced_at" && v.is_number() {
                    *v = Value::from(0);
                } else {
                    normalise(v);
                }
            }
        }
        Value::Array(items) => {
            items.retain(|item| !item["LogLine"]["line"].as_str().is_some_and(|line| line.starts_with("sync_local:")));
            items.iter_mut().for_each(normalise)
        }
        _ => {}
    }
}

struct Recorder {
    db: Connection,
    steps: Vec<Value>,
}

impl Recorder {
    fn record_control(&mut self, op: &str, arg: Payload<'_>) -> Value {
        let (call, result) = match arg {
            Payload::Null => (
                json!({"op": op, "payload": null}),
                self.run(|db| db.query_row("SELECT powersync_control(?1, NULL)", [op], |r| r.get::<_, SqlValue>(0))),
            ),
            Payload::Text(t) => (
                json!({"op": op, "payload": t}),
                self.run(|db| db.query_row("SELECT powersync_control(?1, ?2)", (op, t), |r| r.get::<_, SqlValue>(0))),
            ),
            Payload::Blob(b) => (
                json!({"op": op, "bson": b.iter().map(|x| format!("{x:02x}")).collect::<String>()}),
                self.run(|db| db.query_row("SELECT powersync_control(?1, ?2)", (op, b), |r| r.get::<_, SqlValue>(0))),
            ),
        };
        let expect = match result {
            Ok(SqlValue::Text(text)) if text.starts_with('[') => {
                let mut v: Value = serde_json::from_str(&text).unwrap();
                normalise(&mut v);
                v
            }
            Ok(other) => json!({"value": sql_json(other)}),
            Err(rusqlite::Error::SqliteFailure(e, _)) => json!({"error": e.extended_code}),
            Err(other) => panic!("unexpected error {other:?}"),
        };
        self.steps.push(json!({"call": call, "expect": expect}));
        expect
    }

    fn run(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<SqlValue>) -> rusqlite::Result<SqlValue> {
        self.db.execute_batch("BEGIN").unwrap();
        let result = f(&self.db);
        self.db.execute_batch(if result.is_ok() { "COMMIT" } else { "ROLLBACK" }).unwrap();
        result
    }

    fn record_sql(&mut self, sql: &str) {
        self.db.execute_batch(sql).unwrap();
        self.steps.push(json!({"call": {"sql": sql}, "expect": {"sql": "ok"}}));
    }

    /// Every ps_ table, rows sorted; timestamps, the client id and random tokens left out.
    fn tables(&self) -> Value {
        let mut names: Vec<String> = self
            .db
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'ps\\_%' ESCAPE '\\' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        names.retain(|n| n != "ps_migration");
        let mut out = serde_json::Map::new();
        for name in names {
            out.insert(name.clone(), dump(&self.db, &dump_query(&self.db, &name)));
        }
        Value::Object(out)
    }
}

/// One core whose every answer is recorded.
impl Host for Recorder {
    fn control(&mut self, op: &str, payload: Payload<'_>) -> Option<Value> {
        Some(self.record_control(op, payload)).filter(Value::is_array)
    }

    fn execute(&mut self, sql: &str) {
        self.record_sql(sql);
    }

    /// A local write in SQL, as a host without a schema would do it.
    fn local_write(&mut self, id: &str, n: u32, _kind: u64) {
        self.record_sql(&format!(
            "BEGIN;
             INSERT INTO ps_crud(data, tx_id) VALUES('{{\"op\":\"PUT\",\"id\":\"{id}\",\"type\":\"items\",\"data\":{{\"local\":{n}}}}}', {n});
             INSERT OR REPLACE INTO ps_kv(key, value) VALUES('target_checkpoint_request_id', 9223372036854775807);
             DELETE FROM ps_kv WHERE key IN ('last_seen_checkpoint_request_id', 'last_applied_checkpoint_request_id');
             INSERT OR IGNORE INTO ps_updated_rows(row_type, row_id) VALUES('items', '{id}');
             INSERT OR REPLACE INTO ps_untyped(type, id, data) VALUES('items', '{id}', '{{\"local\":{n}}}');
             COMMIT;"
        ));
    }
}

/// The query that dumps `table` the same way here and in the Node test.
fn dump_query(db: &Connection, table: &str) -> String {
    let n: usize = db.prepare(&format!("SELECT * FROM {table}")).unwrap().column_count();
    let order = (1..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    match table {
        // client_id is fixed by the session.
        "ps_kv" => format!("SELECT * FROM ps_kv WHERE key != 'client_id' ORDER BY {order}"),
        // The sync iteration's token is random: its call count is compared.
        "ps_oplite_kv" => "SELECT key, substr(value, instr(value, '/') + 1) FROM ps_oplite_kv ORDER BY 1".to_owned(),
        "ps_sync_state" => "SELECT priority FROM ps_sync_state ORDER BY 1".to_owned(),
        "ps_stream_subscriptions" => format!("SELECT * FROM {table} ORDER BY {order}"),
        _ => format!("SELECT * FROM {table} ORDER BY {order}"),
    }
}

fn dump(db: &Connection, sql: &str) -> Value {
    let mut stmt = db.prepare(sql).unwrap();
    let n = stmt.column_count();
    let rows: Vec<Value> = stmt
        .query_map([], |r| Ok(Value::Array((0..n).map(|i| sql_json(r.get(i).unwrap())).collect())))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    json!({"sql": sql, "rows": rows})
}

fn record(seed: u64) -> Vec<Value> {
    let db = Connection::open_in_memory().unwrap();
    oplite::register(&db).unwrap();
    db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
    let mut rec = Recorder { db, steps: Vec::new() };
    rec.record_sql(&format!("UPDATE ps_kv SET value = '{CLIENT_ID}' WHERE key = 'client_id'"));
    let strategy = ["incremental", "from_scratch", "auto"][(seed % 3) as usize];
    rec.steps.push(json!({"call": {"sql": format!("SELECT oplite_sync_local_strategy('{strategy}')")}, "expect": null}));
    rec.db.query_row(&format!("SELECT oplite_sync_local_strategy('{strategy}')"), [], |_| Ok(())).unwrap();
    let options = ServerOptions { buckets: 1 + (seed % 4) as usize, ..Default::default() };
    let mut session = Session::new(rec, ServerModel::new(seed, options), seed);
    session.run();
    let tables = session.host.tables();
    let mut steps = session.host.steps;
    steps.push(json!({"tables": tables}));
    steps
}

fn main() {
    let mut args = std::env::args().skip(1);
    let out = std::path::PathBuf::from(args.next().expect("usage: record-sessions <out-dir> [seeds]"));
    let seeds: u64 = args.next().map(|s| s.parse().expect("seeds")).unwrap_or(40);
    std::fs::create_dir_all(&out).unwrap();
    for seed in 0..seeds {
        let steps = record(seed);
        let mut file = std::fs::File::create(out.join(format!("seed-{seed:03}.jsonl"))).unwrap();
        for step in steps {
            writeln!(file, "{step}").unwrap();
        }
    }
    println!("recorded {seeds} sessions in {}", out.display());
}
