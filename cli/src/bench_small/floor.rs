//! The floor of `oplite-small`: plain SQLite doing the writes any core must
//! make for a small sync, in the transactions the SDKs give a core, and
//! nothing else. The lines are the ones the cores get, parsed from text as
//! they parse them; the floor keeps the pending checkpoint's ops in memory
//! (a core may read them back from its oplog) and checks no checksum.

use std::collections::HashMap;
use std::time::Instant;

use oplite_test_data::lines::encode;
use oplite_test_data::stream::ROW_TYPE;
use oplite_test_data::{Encoding, StreamSpec};
use rusqlite::{params, Connection};
use serde_json::Value;

use super::bench_stream::{row_id, Stream};
use super::Run;

const SCHEMA: &str = "
    CREATE TABLE buckets(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, last_op INTEGER NOT NULL DEFAULT 0,
        last_applied_op INTEGER NOT NULL DEFAULT 0, checksum INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE oplog(bucket INTEGER NOT NULL, row_id TEXT NOT NULL, op_id INTEGER NOT NULL, data TEXT,
        PRIMARY KEY (bucket, row_id));
    CREATE TABLE crud(id INTEGER PRIMARY KEY AUTOINCREMENT, data TEXT NOT NULL);
    CREATE TABLE kv(key TEXT PRIMARY KEY, value);
    CREATE TABLE thisisatable(id TEXT PRIMARY KEY NOT NULL, n INTEGER);";

/// One op of a data line.
struct Op {
    row_id: String,
    op_id: i64,
    checksum: i64,
    data: Option<String>,
}

/// A data line: its bucket and ops.
fn data_line(line: &Value) -> Option<(String, Vec<Op>)> {
    let data = line.get("data")?;
    let ops = data["data"].as_array()?.iter().map(|op| Op {
        row_id: op["object_id"].as_str().unwrap_or_default().to_owned(),
        op_id: op["op_id"].as_str().and_then(|id| id.parse().ok()).unwrap_or(0),
        checksum: op["checksum"].as_i64().unwrap_or(0),
        data: op["data"].as_str().map(str::to_owned),
    });
    Some((data["bucket"].as_str()?.to_owned(), ops.collect()))
}

/// Stores a data line's ops; returns its bucket's id.
fn store(conn: &Connection, bucket: &str, ops: &[Op]) -> rusqlite::Result<i64> {
    let id: i64 = conn
        .prepare_cached("INSERT INTO buckets(name) VALUES (?1) ON CONFLICT(name) DO UPDATE SET name = name RETURNING id")?
        .query_row([bucket], |r| r.get(0))?;
    let mut insert = conn.prepare_cached("INSERT OR REPLACE INTO oplog(bucket, row_id, op_id, data) VALUES (?1, ?2, ?3, ?4)")?;
    let mut sum = 0i64;
    for op in ops {
        insert.execute(params![id, op.row_id, op.op_id, op.data])?;
        sum = sum.wrapping_add(op.checksum);
    }
    let last = ops.last().map_or(0, |op| op.op_id);
    conn.prepare_cached("UPDATE buckets SET last_op = ?2, checksum = checksum + ?3 WHERE id = ?1")?.execute(params![id, last, sum])?;
    Ok(id)
}

/// Applies the ops of a complete checkpoint to the app's table.
fn apply(conn: &Connection, pending: &[(i64, Vec<Op>)]) -> rusqlite::Result<()> {
    let mut put = conn.prepare_cached(&format!("INSERT OR REPLACE INTO {ROW_TYPE}(id, n) VALUES (?1, json_extract(?2, '$.n'))"))?;
    let mut delete = conn.prepare_cached(&format!("DELETE FROM {ROW_TYPE} WHERE id = ?1"))?;
    let mut applied = conn.prepare_cached("UPDATE buckets SET last_applied_op = last_op WHERE id = ?1")?;
    for (bucket, ops) in pending {
        for op in ops {
            match &op.data {
                Some(data) => put.execute(params![op.row_id, data])?,
                None => delete.execute([&op.row_id])?,
            };
        }
        applied.execute([bucket])?;
    }
    Ok(())
}

/// The benchmark stream's first sync of `spec`, in one transaction.
pub fn build(conn: &Connection, spec: &StreamSpec) -> rusqlite::Result<()> {
    conn.execute_batch(SCHEMA)?;
    conn.execute_batch("BEGIN")?;
    for line in spec.lines(Encoding::Json, &HashMap::new()) {
        let line: Value = serde_json::from_slice(&line).expect("the stream writes JSON");
        if let Some((bucket, ops)) = data_line(&line) {
            let id = store(conn, &bucket, &ops)?;
            apply(conn, &[(id, ops)])?;
        }
    }
    conn.execute_batch("COMMIT")
}

fn tx<T>(conn: &Connection, body: impl FnOnce() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    let value = body()?;
    conn.prepare_cached("COMMIT")?.execute([])?;
    Ok(value)
}

/// A checkpoint's lines, one transaction each; the time of the last.
fn checkpoint(conn: &Connection, lines: &[Value]) -> rusqlite::Result<f64> {
    let mut pending = Vec::new();
    let mut last = 0.0;
    for line in lines {
        let text = String::from_utf8(encode(Encoding::Json, line)).expect("JSON");
        let started = Instant::now();
        let line: Value = serde_json::from_str(&text).expect("JSON");
        tx(conn, || {
            if let Some((bucket, ops)) = data_line(&line) {
                pending.push((store(conn, &bucket, &ops)?, ops));
            } else if line.get("checkpoint_complete").is_some() {
                apply(conn, &pending)?;
            }
            Ok(())
        })?;
        last = started.elapsed().as_secs_f64() * 1e3;
    }
    Ok(last)
}

/// The measured phase of a run on the floor.
pub fn measure(conn: &Connection, stream: &mut Stream, checkpoints: u64, round_trips: u64, run: &mut Run) -> rusqlite::Result<()> {
    for _ in 0..checkpoints {
        let lines = stream.checkpoint(1);
        let started = Instant::now();
        run.complete.push(checkpoint(conn, &lines)?);
        run.checkpoint.push(started.elapsed().as_secs_f64() * 1e3);
    }
    for i in 0..round_trips {
        let row = stream.new_row();
        let data = format!("{{\"n\":{i}}}");
        let started = Instant::now();
        tx(conn, || {
            conn.prepare_cached(&format!("INSERT INTO {ROW_TYPE}(id, n) VALUES (?1, ?2)"))?.execute(params![row_id(row), i as i64])?;
            let entry = format!("{{\"op\":\"PUT\",\"type\":\"{ROW_TYPE}\",\"id\":\"{}\",\"data\":{data}}}", row_id(row));
            conn.prepare_cached("INSERT INTO crud(data) VALUES (?1)")?.execute([entry])
        })?;
        tx(conn, || {
            let last: i64 = conn.prepare_cached("SELECT max(id) FROM crud")?.query_row([], |r| r.get(0))?;
            conn.prepare_cached("DELETE FROM crud WHERE id <= ?1")?.execute([last])?;
            conn.prepare_cached("INSERT OR REPLACE INTO kv(key, value) VALUES ('target', ?1)")?.execute([i as i64 + 1])
        })?;
        checkpoint(conn, &stream.echo(row, &data, i as i64 + 1))?;
        run.round_trip.push(started.elapsed().as_secs_f64() * 1e3);
    }
    Ok(())
}
