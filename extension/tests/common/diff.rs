//! Differential harness: feeds the same calls to oplite and to the
//! reference core and compares what they return and store.

use oplite_test_data::session::CORE_TABLES;
use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;
use serde_json::Value;

use super::{oplite, reference};

/// What one side answered to a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A JSON array of instructions, normalised.
    Json(Value),
    /// A plain SQL value.
    Scalar(String),
    /// An error (code only: messages differ by design).
    Error(i32),
}

/// The argument to `powersync_control`.
pub enum Arg<'a> {
    Null,
    Text(&'a str),
    Blob(&'a [u8]),
    Int(i64),
    Real(f64),
}

/// Two databases, one per core, driven in lockstep.
pub struct Pair {
    pub ours: Connection,
    pub theirs: Connection,
    /// Every call so far, for failure messages.
    pub trace: Vec<String>,
    /// Queries compared after every call besides the internal tables
    /// (e.g. the app's views once a schema is installed).
    pub extra_queries: Vec<(String, String)>,
}

/// Timestamps differ between runs and cores: zero them (sync times, and
/// stream subscriptions' expiry).
pub fn normalise(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if (key == "last_synced_at" || key == "expires_at") && v.is_number() {
                    *v = Value::from(0);
                } else {
                    normalise(v);
                }
            }
        }
        Value::Array(items) => {
            // oplite's own DEBUG line about the sync_local strategy.
            items.retain(|item| {
                !item["LogLine"]["line"].as_str().is_some_and(|line| line.starts_with("sync_local:"))
            });
            items.iter_mut().for_each(normalise)
        }
        _ => {}
    }
}

fn call(db: &Connection, op: &str, arg: &Arg<'_>) -> Answer {
    match call_raw(db, op, arg) {
        Ok(SqlValue::Text(text)) if text.starts_with('[') => {
            let mut json: Value = serde_json::from_str(&text).unwrap();
            normalise(&mut json);
            Answer::Json(json)
        }
        Ok(other) => Answer::Scalar(format!("{other:?}")),
        Err(code) => Answer::Error(code & 0xff),
    }
}

/// One call in its own transaction (rolled back when it fails): the value,
/// or the extended error code.
fn call_raw(db: &Connection, op: &str, arg: &Arg<'_>) -> Result<SqlValue, i32> {
    db.execute_batch("BEGIN").unwrap();
    let result = match arg {
        Arg::Null => db.query_row("SELECT powersync_control(?1, NULL)", [op], |r| r.get::<_, SqlValue>(0)),
        Arg::Text(t) => db.query_row("SELECT powersync_control(?1, ?2)", (op, t), |r| r.get::<_, SqlValue>(0)),
        Arg::Blob(b) => db.query_row("SELECT powersync_control(?1, ?2)", (op, b), |r| r.get::<_, SqlValue>(0)),
        Arg::Int(i) => db.query_row("SELECT powersync_control(?1, ?2)", (op, i), |r| r.get::<_, SqlValue>(0)),
        Arg::Real(x) => db.query_row("SELECT powersync_control(?1, ?2)", (op, x), |r| r.get::<_, SqlValue>(0)),
    };
    match result {
        Ok(value) => {
            db.execute_batch("COMMIT").unwrap();
            Ok(value)
        }
        Err(err) => {
            db.execute_batch("ROLLBACK").unwrap();
            Err(super::error_code(&err))
        }
    }
}

/// The internal tables compared after every call, as sorted rows: the
/// core's layout (shared with the web package's recorded sessions), and
/// the stream subscriptions.
fn snapshot_queries<'a>() -> impl Iterator<Item = (&'a str, &'a str)> {
    CORE_TABLES.iter().copied().chain([STREAM_SUBSCRIPTIONS])
}

/// Times come from each core's clock: compare whether they are set, and
/// that an expiry is about now + ttl (within a minute).
const STREAM_SUBSCRIPTIONS: (&str, &str) = (
    "ps_stream_subscriptions",
    "SELECT id, stream_name, active, is_default, local_priority, local_params, ttl,
            CASE WHEN expires_at IS NULL THEN 'none'
                 WHEN ttl IS NULL THEN 'set'
                 WHEN abs(expires_at - ttl * 1000000 - unixepoch('subsec') * 1000000) < 60000000 THEN 'now+ttl'
                 ELSE 'other' END,
            last_synced_at IS NOT NULL
     FROM ps_stream_subscriptions ORDER BY id",
);

/// One value as text: `Text("...")` when it is UTF-8, its bytes otherwise.
fn render(value: rusqlite::types::ValueRef<'_>) -> String {
    match value {
        rusqlite::types::ValueRef::Text(t) => match std::str::from_utf8(t) {
            Ok(text) => format!("Text({text:?})"),
            Err(_) => format!("Text(bytes {t:?})"),
        },
        other => format!("{other:?}"),
    }
}

/// Rows of `sql`, rendered as text.
pub fn rows(db: &Connection, sql: &str) -> Vec<String> {
    let mut stmt = db.prepare(sql).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |row| {
        // get_ref: text that is not UTF-8 (a lone surrogate escape decoded
        // by json_extract) is compared byte for byte.
        Ok((0..n).map(|i| render(row.get_ref(i).unwrap())).collect::<Vec<_>>().join("|"))
    })
    .unwrap()
    .map(|r| r.unwrap())
    .collect()
}

/// An argument as the trace shows it.
fn shown(arg: &Arg<'_>) -> String {
    match arg {
        Arg::Null => "NULL".to_owned(),
        Arg::Text(t) => t.chars().take(300).collect(),
        Arg::Blob(b) => format!("<{} bytes of BSON>", b.len()),
        Arg::Int(i) => i.to_string(),
        Arg::Real(x) => x.to_string(),
    }
}

impl Pair {
    /// Both cores, initialised.
    pub fn new() -> Pair {
        let ours = oplite();
        let theirs = reference();
        for db in [&ours, &theirs] {
            super::init_fixed_client_id(db);
        }
        Pair { ours, theirs, trace: Vec::new(), extra_queries: Vec::new() }
    }

    fn context(&self) -> String {
        let tail: Vec<&String> = self.trace.iter().rev().take(12).collect();
        let tail: Vec<&String> = tail.into_iter().rev().collect();
        format!("last calls:\n  {}", tail.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n  "))
    }

    /// Calls `powersync_control` on both and asserts the answers and the
    /// internal tables agree. Returns oplite's answer.
    pub fn control(&mut self, op: &str, arg: Arg<'_>) -> Answer {
        self.trace.push(format!("{op}({})", shown(&arg)));
        let ours = call(&self.ours, op, &arg);
        let theirs = call(&self.theirs, op, &arg);
        assert_eq!(ours, theirs, "answers differ for {op}\n{}", self.context());
        self.assert_same_tables();
        ours
    }

    /// Calls `powersync_control` on both, expecting both to fail (error
    /// codes differ by design), and asserts the tables are unchanged alike.
    pub fn control_fails(&mut self, op: &str, arg: Arg<'_>) {
        let shown = match &arg {
            Arg::Text(t) => t.chars().take(300).collect(),
            _ => "<non-text>".to_owned(),
        };
        self.trace.push(format!("{op}({shown}) [expected to fail]"));
        let ours = call(&self.ours, op, &arg);
        let theirs = call(&self.theirs, op, &arg);
        assert!(
            matches!((&ours, &theirs), (Answer::Error(_), Answer::Error(_))),
            "expected both to fail: ours {ours:?}, theirs {theirs:?}\n{}",
            self.context()
        );
        self.assert_same_tables();
    }

    /// Calls `powersync_control` on both, expecting both to fail, asserts
    /// the tables are unchanged alike, and returns the extended error codes
    /// (oplite's, the reference's) for the caller to compare.
    pub fn control_error_codes(&mut self, op: &str, arg: Arg<'_>) -> (i32, i32) {
        self.trace.push(format!("{op}({}) [expected to fail]", shown(&arg)));
        let ours = call_raw(&self.ours, op, &arg);
        let theirs = call_raw(&self.theirs, op, &arg);
        let (Err(ours), Err(theirs)) = (&ours, &theirs) else {
            panic!("expected both to fail: ours {ours:?}, theirs {theirs:?}\n{}", self.context());
        };
        self.assert_same_tables();
        (*ours, *theirs)
    }

    /// Runs the same SQL on both.
    pub fn execute(&mut self, sql: &str) {
        self.trace.push(format!("SQL: {sql}"));
        self.ours.execute_batch(sql).unwrap();
        self.theirs.execute_batch(sql).unwrap();
    }

    /// Installs the same schema in both and compares every table's view
    /// from then on.
    pub fn replace_schema(&mut self, schema: &Value) {
        let json = schema.to_string();
        for db in [&self.ours, &self.theirs] {
            db.execute_batch("BEGIN").unwrap();
            db.query_row("SELECT powersync_replace_schema(?1)", [&json], |_| Ok(())).unwrap();
            db.execute_batch("COMMIT").unwrap();
        }
        for table in schema["tables"].as_array().unwrap() {
            let name = table["name"].as_str().unwrap();
            self.extra_queries.push((name.to_owned(), format!("SELECT * FROM \"{name}\" ORDER BY id")));
        }
    }

    /// Asserts the internal tables (and the extra queries) hold the same rows.
    pub fn assert_same_tables(&self) {
        let extra = self.extra_queries.iter().map(|(t, q)| (t.as_str(), q.as_str()));
        for (table, sql) in snapshot_queries().chain(extra) {
            let ours = rows(&self.ours, sql);
            let theirs = rows(&self.theirs, sql);
            if ours != theirs {
                panic!(
                    "{table} differs\n ours:   {ours:#?}\n theirs: {theirs:#?}\n{}",
                    self.context()
                );
            }
        }
    }
}

/// One bucket `b` of ops, sent to a [`Pair`] a checkpoint at a time, as
/// JSON lines or (`bson`) BSON ones: op ids count up across checkpoints,
/// each op's checksum derived from its id, the bucket's checksum their
/// running sum.
#[derive(Default)]
pub struct Checkpoints {
    next_op: u32,
    sum: u32,
    pub bson: bool,
}

impl Checkpoints {
    /// Lines in BSON when `bson` is set.
    pub fn encoded(bson: bool) -> Checkpoints {
        Checkpoints { bson, ..Checkpoints::default() }
    }

    /// A checkpoint with one PUT per `(row_type, id, data)`, its data line
    /// and its completion.
    pub fn send(&mut self, pair: &mut Pair, rows: &[(&str, &str, &str)]) {
        let ops: Vec<_> = rows.iter().map(|(row_type, id, data)| ("PUT", *row_type, *id, Some(*data))).collect();
        self.send_ops(pair, &ops);
    }

    /// A checkpoint with one op per `(op, row_type, id, data)` (no data:
    /// none sent), its data line and its completion.
    pub fn send_ops(&mut self, pair: &mut Pair, ops: &[(&str, &str, &str, Option<&str>)]) {
        let mut entries = Vec::new();
        for (op, row_type, id, data) in ops {
            self.next_op += 1;
            let checksum = self.next_op.wrapping_mul(2_654_435_761);
            self.sum = self.sum.wrapping_add(checksum);
            let mut entry = serde_json::json!({"op_id": self.next_op.to_string(), "op": op, "object_type": row_type,
                "object_id": id, "checksum": checksum});
            if let Some(data) = data {
                entry["data"] = (*data).into();
            }
            entries.push(entry);
        }
        let last = self.next_op.to_string();
        self.line(pair, serde_json::json!({"checkpoint": {"last_op_id": last, "buckets": [{"bucket": "b", "checksum": self.sum}]}}));
        self.line(pair, serde_json::json!({"data": {"bucket": "b", "data": entries}}));
        self.line(pair, serde_json::json!({"checkpoint_complete": {"last_op_id": last}}));
    }

    fn line(&self, pair: &mut Pair, line: Value) {
        if self.bson {
            pair.control("line_binary", Arg::Blob(&bson::serialize_to_vec(&line).unwrap()));
        } else {
            pair.control("line_text", Arg::Text(&line.to_string()));
        }
    }
}
