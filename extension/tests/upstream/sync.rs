//! A sync session as the Dart sync tests drive one: a database initialised
//! with the `items` test schema and client id `test-test-test-test`, calls
//! to `powersync_control` each in a transaction (checking no statement is
//! left running), lines sent as JSON text or BSON, and builders for the
//! protocol lines the tests send.

use rusqlite::types::{Null, Value as SqlValue};
use rusqlite::Connection;
use serde_json::{json, Value};

use super::{busy_statements, exec, init, replace_schema, sql_to_json, test_schema, Core};

pub struct Session {
    pub db: Connection,
    /// Send lines as `line_binary` BSON instead of `line_text` JSON.
    pub bson: bool,
    /// The status of the last `UpdateSyncStatus` instruction seen.
    pub last_status: Option<Value>,
}

impl Session {
    /// The Dart set-up: init, the test schema, a fixed client id.
    pub fn new(core: Core, bson: bool) -> Session {
        Session::with_db(core.open(), bson)
    }

    pub fn with_db(db: Connection, bson: bool) -> Session {
        init(&db);
        replace_schema(&db, &test_schema());
        exec(&db, "UPDATE ps_kv SET value = ?2 WHERE key = ?1", &[&"client_id", &"test-test-test-test"]);
        Session { db, bson, last_status: None }
    }

    /// One `powersync_control` call in a transaction, rolled back when it
    /// fails; its raw SQL result.
    pub fn try_scalar(&mut self, op: &str, data: impl Into<SqlValue>) -> rusqlite::Result<SqlValue> {
        let data = data.into();
        self.db.execute_batch("BEGIN")?;
        let result = self.db.query_row("SELECT powersync_control(?, ?)", (op, &data), |row| row.get::<_, SqlValue>(0));
        match result {
            Ok(value) => {
                let busy = busy_statements(&self.db);
                assert!(busy.is_empty(), "powersync_control({op}) left statements running: {busy:?}");
                self.db.execute_batch("COMMIT")?;
                Ok(value)
            }
            Err(e) => {
                self.db.execute_batch("ROLLBACK")?;
                Err(e)
            }
        }
    }

    /// The raw result of a call that must succeed, as JSON.
    pub fn scalar(&mut self, op: &str, data: impl Into<SqlValue>) -> Value {
        sql_to_json(self.try_scalar(op, data).unwrap_or_else(|e| panic!("powersync_control({op}): {e}")))
    }

    /// A call's instructions (an empty list for a non-text result).
    pub fn try_control_raw(&mut self, op: &str, data: impl Into<SqlValue>) -> rusqlite::Result<Value> {
        let instructions = match self.try_scalar(op, data)? {
            SqlValue::Text(text) => serde_json::from_str(&text).unwrap(),
            _ => json!([]),
        };
        for instruction in instructions.as_array().unwrap() {
            if let Some(status) = instruction.get("UpdateSyncStatus") {
                self.last_status = Some(status["status"].clone());
            }
        }
        Ok(instructions)
    }

    pub fn control_raw(&mut self, op: &str, data: impl Into<SqlValue>) -> Value {
        self.try_control_raw(op, data).unwrap_or_else(|e| panic!("powersync_control({op}): {e}"))
    }

    /// `control_raw`, and after a `start` that opens a stream, seeds the
    /// checkpoint request counter with 1 as the Dart helper does.
    pub fn control(&mut self, op: &str, data: impl Into<SqlValue>) -> Value {
        let instructions = self.control_raw(op, data);
        if op == "start" && find(&instructions, "EstablishSyncStream").is_some() {
            self.scalar("seed_checkpoint_request_id", 1);
        }
        instructions
    }

    /// `control` with a JSON payload given as text.
    pub fn control_json(&mut self, op: &str, payload: &Value) -> Value {
        self.control(op, payload.to_string())
    }

    pub fn start(&mut self) -> Value {
        self.control("start", Null)
    }

    /// The encoded form of a sync line for this session.
    pub fn encode(&self, line: &Value) -> (&'static str, SqlValue) {
        if self.bson {
            ("line_binary", SqlValue::Blob(bson::serialize_to_vec(&dart_bson(line)).unwrap()))
        } else {
            ("line_text", SqlValue::Text(line.to_string()))
        }
    }

    pub fn try_line(&mut self, line: &Value) -> rusqlite::Result<Value> {
        let (op, payload) = self.encode(line);
        self.try_control_raw(op, payload)
    }

    pub fn line(&mut self, line: &Value) -> Value {
        let (op, payload) = self.encode(line);
        self.control(op, payload)
    }

    /// A data line with one operation on `items` (or `object_type`).
    pub fn push_data(&mut self, bucket: &str, op_id: &str, row_id: &str, op: &str, data: Value) -> Value {
        self.line(&data_line(bucket, op_id, row_id, op, data, 0, "items"))
    }

    pub fn push_checkpoint(&mut self, last_op_id: i64, buckets: Vec<Value>) -> Value {
        self.line(&checkpoint(last_op_id, buckets, None, vec![]))
    }

    pub fn push_checkpoint_complete(&mut self, priority: Option<i64>) -> Value {
        self.line(&checkpoint_complete(priority, "1"))
    }

    /// The rows of the `items` view.
    pub fn items(&self) -> Vec<Value> {
        super::select(&self.db, "SELECT * FROM items", &[])
    }
}

/// A JSON value as the Dart `bson` package encodes it: integers that fit
/// in 32 bits as int32 (serde would write every integer as int64).
pub fn dart_bson(value: &Value) -> bson::Bson {
    match value {
        Value::Null => bson::Bson::Null,
        Value::Bool(b) => bson::Bson::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i32::try_from(i).map(bson::Bson::Int32).unwrap_or(bson::Bson::Int64(i)),
            None => bson::Bson::Double(n.as_f64().unwrap()),
        },
        Value::String(s) => bson::Bson::String(s.clone()),
        Value::Array(items) => bson::Bson::Array(items.iter().map(dart_bson).collect()),
        Value::Object(map) => {
            bson::Bson::Document(map.iter().map(|(k, v)| (k.clone(), dart_bson(v))).collect())
        }
    }
}

/// The first instruction of kind `kind` (e.g. `EstablishSyncStream`).
pub fn find<'a>(instructions: &'a Value, kind: &str) -> Option<&'a Value> {
    instructions.as_array().unwrap().iter().find_map(|i| i.get(kind))
}

/// Whether a `LogLine` instruction has exactly this line.
pub fn logs(instructions: &Value, line: &str) -> bool {
    instructions.as_array().unwrap().iter().any(|i| i["LogLine"]["line"] == line)
}

pub fn data_line(
    bucket: &str,
    op_id: &str,
    row_id: &str,
    op: &str,
    data: Value,
    checksum: i64,
    object_type: &str,
) -> Value {
    json!({"data": {"bucket": bucket, "has_more": false, "after": null, "next_after": null,
        "data": [{"op_id": op_id, "op": op, "object_type": object_type, "object_id": row_id,
                  "checksum": checksum, "data": data.to_string()}]}})
}

pub fn checkpoint(last_op_id: i64, buckets: Vec<Value>, write_checkpoint: Option<&str>, streams: Vec<Value>) -> Value {
    json!({"checkpoint": {"last_op_id": last_op_id.to_string(), "write_checkpoint": write_checkpoint,
        "buckets": buckets, "streams": streams}})
}

pub fn stream(name: &str, is_default: bool, errors: Value) -> Value {
    json!({"name": name, "is_default": is_default, "errors": errors})
}

pub fn checkpoint_complete(priority: Option<i64>, last_op_id: &str) -> Value {
    match priority {
        None => json!({"checkpoint_complete": {"last_op_id": last_op_id}}),
        Some(p) => json!({"partial_checkpoint_complete": {"last_op_id": last_op_id, "priority": p}}),
    }
}

/// A bucket of a checkpoint line (checksum 0, priority 3 and count 1 in
/// the Dart helper's defaults).
pub fn bucket(name: &str, priority: i64) -> Value {
    json!({"bucket": name, "checksum": 0, "priority": priority, "count": 1})
}

/// `bucket` with a count of ops.
pub fn counted(name: &str, count: i64, priority: i64) -> Value {
    let mut b = bucket(name, priority);
    b["count"] = json!(count);
    b
}

/// The statuses of the `UpdateSyncStatus` instructions among `instructions`.
pub fn statuses(instructions: &Value) -> Vec<&Value> {
    instructions.as_array().unwrap().iter().filter_map(|i| i["UpdateSyncStatus"].get("status")).collect()
}

/// `bucket` with stream subscriptions.
pub fn bucket_with_subscriptions(name: &str, priority: i64, subscriptions: Value) -> Value {
    let mut b = bucket(name, priority);
    b["subscriptions"] = subscriptions;
    b
}

/// The buckets `prio0` .. `prio3`, each of its priority.
pub fn priority_buckets() -> Vec<Value> {
    (0..4).map(|i| bucket(&format!("prio{i}"), i)).collect()
}

/// A value of `ps_kv` (null when absent).
pub fn kv(s: &Session, key: &str) -> Value {
    super::select(&s.db, "SELECT value FROM ps_kv WHERE key = ?", &[&key])
        .first()
        .map(|r| r["value"].clone())
        .unwrap_or(Value::Null)
}

/// The last checkpoint request id the client asked for (`ps_kv`).
pub fn last_requested(s: &Session) -> Value {
    kv(s, "last_requested_checkpoint_request_id")
}

/// `powersync_control('target_checkpoint_request_id', op_id)`.
pub fn target(s: &mut Session, op_id: impl Into<SqlValue>) -> Value {
    s.scalar("target_checkpoint_request_id", op_id)
}

/// A row of the `items` test table.
pub fn row(id: &str, col: &str) -> Value {
    json!({"id": id, "col": col})
}
