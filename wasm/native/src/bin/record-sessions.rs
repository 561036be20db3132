//! Records seeded protocol sessions on the native build, for the web
//! package's Node tests to replay against the wasm build, and checks the
//! recordings against the reference core.
//!
//! The sessions are `oplite_test_data::session`'s with the schema and the
//! local writes of `extension/tests/differential_sync.rs`, which checks the
//! native build against the reference core call by call: several buckets
//! and priorities, PUT/REMOVE/MOVE/CLEAR, rows shared by buckets, checksum
//! mismatches, checkpoint diffs, interrupted streams and restarts, local
//! writes through the app's views and write checkpoints, JSON or BSON lines.
//! Each file holds one seed: every call with the native answer (for SQL,
//! the rows it returned or how many rows it changed), then two dumps: every
//! internal table of oplite's (`tables`), and what both cores keep alike
//! (`shared`: the tables of the core's layout, by the columns they share,
//! and the app's views). `wasm/test/node.test.mjs` feeds the same calls to
//! the wasm build and requires the same answers and dumps; `--check`
//! replays each file on the reference core and requires the same answers
//! and the same `shared` dump.
//!
//!     record-sessions <out-dir> [seeds]
//!     record-sessions --check <reference core library> <dir>

use std::io::Write;
use std::path::Path;

use oplite_test_data::session::{Host, Payload, Session, CORE_TABLES};
use oplite_test_data::{ServerModel, ServerOptions};
use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;
use serde_json::{json, Value};

const CLIENT_ID: &str = "00000000-0000-4000-8000-000000000000";

/// differential_sync's schema: items and lists have tables; rows of type
/// "other" stay untyped.
const SCHEMA: &str = r#"{"tables": [{"name": "items", "columns": [{"name": "name", "type": "text"}, {"name": "n", "type": "integer"}]}, {"name": "lists", "columns": [{"name": "name", "type": "text"}]}]}"#;

/// The app's views, which the recordings dump beside the core's tables.
const VIEWS: &[(&str, &str)] = &[("items", "SELECT * FROM items ORDER BY id"), ("lists", "SELECT * FROM lists ORDER BY id")];

/// What both cores keep alike, each query valid on either: the internal
/// tables of the core's layout by their shared columns (as the native
/// differential harness compares them), and the app's views.
fn shared_queries() -> impl Iterator<Item = (&'static str, &'static str)> {
    CORE_TABLES.iter().chain(VIEWS).copied()
}

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

/// `powersync_control(op, payload)` in a transaction of its own, as the
/// recording stores its answer.
fn control(db: &Connection, call: &Value) -> Value {
    db.execute_batch("BEGIN").unwrap();
    let op = call["op"].as_str().unwrap();
    let result = if let Some(hex) = call["bson"].as_str() {
        let bytes: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
        db.query_row("SELECT powersync_control(?1, ?2)", (op, bytes), |r| r.get::<_, SqlValue>(0))
    } else {
        let payload = call["payload"].as_str();
        db.query_row("SELECT powersync_control(?1, ?2)", (op, payload), |r| r.get::<_, SqlValue>(0))
    };
    db.execute_batch(if result.is_ok() { "COMMIT" } else { "ROLLBACK" }).unwrap();
    match result {
        Ok(SqlValue::Text(text)) if text.starts_with('[') => {
            let mut v: Value = serde_json::from_str(&text).unwrap();
            normalise(&mut v);
            v
        }
        Ok(other) => json!({"value": sql_json(other)}),
        Err(e) => json!({"error": error_code(&e)}),
    }
}

fn error_code(e: &rusqlite::Error) -> i32 {
    match e {
        rusqlite::Error::SqliteFailure(e, _) => e.extended_code,
        other => panic!("unexpected error {other:?}"),
    }
}

/// Runs a SQL step: a SELECT's rows, or how many rows a batch changed.
fn sql(db: &Connection, sql: &str) -> Value {
    if sql.starts_with("SELECT") {
        return json!({"rows": rows(db, sql)});
    }
    let before = db.total_changes();
    match db.execute_batch(sql) {
        Ok(()) => json!({"sql": "ok", "changes": db.total_changes() - before}),
        Err(e) => json!({"error": error_code(&e)}),
    }
}

fn rows(db: &Connection, sql: &str) -> Vec<Value> {
    let mut stmt = db.prepare(sql).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |r| Ok(Value::Array((0..n).map(|i| sql_json(r.get(i).unwrap())).collect())))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

fn dump(db: &Connection, sql: &str) -> Value {
    json!({"sql": sql, "rows": rows(db, sql)})
}

struct Recorder {
    db: Connection,
    steps: Vec<Value>,
}

impl Recorder {
    fn record(&mut self, call: Value) -> Value {
        let expect = match call["sql"].as_str() {
            Some(text) => sql(&self.db, text),
            None => control(&self.db, &call),
        };
        self.steps.push(json!({"call": call, "expect": expect}));
        expect
    }

    fn record_sql(&mut self, text: &str) {
        let expect = self.record(json!({"sql": text}));
        assert!(expect["error"].is_null(), "{text}: {expect}");
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

fn shared(db: &Connection) -> Value {
    Value::Object(shared_queries().map(|(name, sql)| (name.to_owned(), dump(db, sql))).collect())
}

/// One core whose every answer is recorded.
impl Host for Recorder {
    fn control(&mut self, op: &str, payload: Payload<'_>) -> Option<Value> {
        let call = match payload {
            Payload::Null => json!({"op": op, "payload": null}),
            Payload::Text(t) => json!({"op": op, "payload": t}),
            Payload::Blob(b) => json!({"op": op, "bson": b.iter().map(|x| format!("{x:02x}")).collect::<String>()}),
        };
        Some(self.record(call)).filter(Value::is_array)
    }

    fn execute(&mut self, sql: &str) {
        self.record_sql(sql);
    }

    /// A local write through the app's view, as differential_sync makes it
    /// (its triggers queue the upload): update, delete or insert.
    fn local_write(&mut self, id: &str, n: u32, kind: u64) {
        let exists: bool = self.db.query_row("SELECT EXISTS(SELECT 1 FROM items WHERE id = ?1)", [id], |r| r.get(0)).unwrap();
        let write = match (exists, kind) {
            (true, 0) => format!("DELETE FROM items WHERE id = '{id}'"),
            (true, _) => format!("UPDATE items SET name = 'local{n}', n = {n} WHERE id = '{id}'"),
            (false, _) => format!("INSERT INTO items(id, name, n) VALUES ('{id}', 'local{n}', {n})"),
        };
        self.record_sql(&format!("BEGIN; {write}; COMMIT;"));
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
        _ => format!("SELECT * FROM {table} ORDER BY {order}"),
    }
}

/// The steps that set a session up, the same on every core: its client id
/// and the schema.
fn set_up(rec: &mut Recorder) {
    rec.record_sql(&format!("UPDATE ps_kv SET value = '{CLIENT_ID}' WHERE key = 'client_id'"));
    rec.record_sql(&format!("BEGIN; SELECT powersync_replace_schema('{SCHEMA}'); COMMIT;"));
}

/// oplite's own SQL, which the reference core does not have.
fn oplite_only(sql: &str) -> bool {
    sql.starts_with("SELECT oplite_")
}

fn record(seed: u64) -> Vec<Value> {
    let db = Connection::open_in_memory().unwrap();
    oplite::register(&db).unwrap();
    db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
    let mut rec = Recorder { db, steps: Vec::new() };
    set_up(&mut rec);
    let strategy = ["incremental", "from_scratch", "auto"][(seed % 3) as usize];
    rec.record(json!({"sql": format!("SELECT oplite_sync_local_strategy('{strategy}')")}));
    let options = ServerOptions { buckets: 1 + (seed % 4) as usize, ..Default::default() };
    let mut session = Session::new(rec, ServerModel::new(seed, options), seed);
    session.run();
    let tables = session.host.tables();
    let shared = shared(&session.host.db);
    let mut steps = session.host.steps;
    steps.push(json!({"tables": tables}));
    steps.push(json!({"shared": shared}));
    steps
}

/// An answer as the two cores must agree on it: an error by its primary
/// code (extended codes may differ), a SQL batch without its count of
/// changed rows (each core's triggers and functions write its own tables;
/// the `shared` dump compares what they store).
fn comparable(mut answer: Value) -> Value {
    if let Some(code) = answer["error"].as_i64() {
        answer["error"] = json!(code & 0xff);
    }
    if let Some(fields) = answer.as_object_mut() {
        fields.remove("changes");
    }
    answer
}

/// Instructions without an UpdateSyncStatus equal to the last one seen, as
/// the Node test compares them: a core sends a status only when it changed,
/// and its last_synced_at (seconds) changes it or not depending on whether
/// the recording and the replay cross a second there.
fn without_repeated_status(answer: &Value, seen: &mut Option<Value>) -> Value {
    let Some(items) = answer.as_array() else { return answer.clone() };
    let kept = items.iter().filter(|item| {
        if item.get("UpdateSyncStatus").is_none() {
            return true;
        }
        if seen.as_ref() == Some(*item) {
            return false;
        }
        *seen = Some((*item).clone());
        true
    });
    Value::Array(kept.cloned().collect())
}

/// Replays a recorded session on the reference core: the first call whose
/// answer differs, or the first shared table that does, if any.
fn check(reference: &Path, file: &Path) -> Result<(), String> {
    let db = Connection::open_in_memory().unwrap();
    // SAFETY: the reference core is a library the test set-up built or verified.
    unsafe {
        db.load_extension_enable().unwrap();
        db.load_extension(reference, Some("sqlite3_powersync_init")).map_err(|e| format!("loading the reference: {e}"))?;
        db.load_extension_disable().unwrap();
    }
    db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    let mut compared = 0;
    let (mut seen_actual, mut seen_expected) = (None, None);
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let step: Value = serde_json::from_str(line).unwrap();
        if let Some(expected) = step.get("shared") {
            let actual = shared(&db);
            for (name, _) in shared_queries() {
                if actual[name] != expected[name] {
                    return Err(format!("{name} differs after {compared} calls: reference {} / recorded {}", actual[name], expected[name]));
                }
            }
            return if compared > 0 { Ok(()) } else { Err("no calls compared".into()) };
        }
        let Some(call) = step.get("call") else { continue };
        let actual = match call["sql"].as_str() {
            Some(text) if oplite_only(text) => continue,
            Some(text) => sql(&db, text),
            None => control(&db, call),
        };
        let actual = comparable(without_repeated_status(&actual, &mut seen_actual));
        let expected = comparable(without_repeated_status(&step["expect"], &mut seen_expected));
        if actual != expected {
            let call: String = call.to_string().chars().take(300).collect();
            return Err(format!("step {}: {call}: reference {actual} / recorded {expected}", i + 1));
        }
        compared += 1;
    }
    Err("no shared dump at the end".into())
}

fn check_all(reference: &Path, dir: &Path) -> bool {
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "jsonl")).collect();
    files.sort();
    let mut failed = 0;
    for file in &files {
        if let Err(why) = check(reference, file) {
            println!("FAILED - {} on the reference core: {why}", file.display());
            failed += 1;
        } else {
            println!("ok - {} answers and stores alike on the reference core", file.display());
        }
    }
    println!("recorded-sessions: {} passed, {failed} failed", files.len() - failed);
    failed == 0 && !files.is_empty()
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--check") {
        let [_, reference, dir] = &args[..] else { panic!("usage: record-sessions --check <reference core> <dir>") };
        return if check_all(Path::new(reference), Path::new(dir)) { 0.into() } else { 1.into() };
    }
    let out = std::path::PathBuf::from(args.first().expect("usage: record-sessions <out-dir> [seeds]"));
    let seeds: u64 = args.get(1).map(|s| s.parse().expect("seeds")).unwrap_or(40);
    std::fs::create_dir_all(&out).unwrap();
    for seed in 0..seeds {
        let steps = record(seed);
        let mut file = std::fs::File::create(out.join(format!("seed-{seed:03}.jsonl"))).unwrap();
        for step in steps {
            writeln!(file, "{step}").unwrap();
        }
    }
    println!("recorded {seeds} sessions in {}", out.display());
    0.into()
}
