//! A call that fails partway with a retryable error (SQLITE_BUSY) leaves
//! the sync client's memory as it was, so that after the host's ROLLBACK
//! memory and database agree again and the same iteration can go on (the
//! module docs of `sync/client.rs`); so does any other failure, as the
//! reference's does since core 0.5.4.
//!
//! A session that uses every state-changing event (subscribe, start,
//! checkpoint, data, partial and full completion, checkpoint diff, a
//! completion held back by local data, completed_upload, keep-alives, stop)
//! is run once cleanly. Then, for each call and each key the client writes
//! (in `ps_kv` and `ps_oplite_kv`), the session is run again with a TEMP
//! trigger that fails writes of that key during that call with SQLITE_BUSY
//! (a stand-in for a lock another connection took at the call's last
//! write). The host rolls back, sends a keep-alive,
//! which must report no status change, and retries the call. Every answer
//! and the final tables must be those of the clean run.
mod common;

use common::diff::{normalise, rows};
use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;
use serde_json::{json, Value};

/// The keys the client writes (table, key); a failure writing each is injected.
const KEYS: &[(&str, &str)] = &[
    ("ps_oplite_kv", "sync_iteration"),
    ("ps_kv", "last_applied_checkpoint_request_id"),
    ("ps_kv", "last_seen_checkpoint_request_id"),
    ("ps_kv", "target_checkpoint_request_id"),
];

/// `fail_busy()`: fails with SQLITE_BUSY, for the injecting triggers (with
/// SQLite's own message: rusqlite sets a message after the code, which
/// would turn the code into SQLITE_ERROR).
fn register_fail_busy(db: &Connection) {
    db.create_scalar_function("fail_busy", 0, rusqlite::functions::FunctionFlags::SQLITE_UTF8, |_| {
        Err::<i64, _>(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            None,
        ))
    })
    .unwrap();
}

enum Step {
    /// A `powersync_control` call (NULL payload when None).
    Call(&'static str, Option<String>),
    /// SQL the app runs between calls.
    Sql(&'static str),
}

fn line(line: Value) -> Step {
    Step::Call("line_text", Some(line.to_string()))
}

fn put(bucket: &str, op_id: u64, checksum: u32) -> Step {
    line(json!({"data": {"bucket": bucket, "data": [{
        "op_id": op_id.to_string(), "op": "PUT", "object_type": "items", "object_id": format!("row{op_id}"),
        "checksum": checksum, "data": json!({"n": op_id}).to_string(),
    }]}}))
}

const KEEP_ALIVE: &str = r#"{"token_expires_in": 100}"#;

fn session() -> Vec<Step> {
    vec![
        Step::Call("subscriptions", Some(json!({"subscribe": {"stream": {"name": "s"}}}).to_string())),
        Step::Call("start", Some(json!({"active_streams": [{"name": "s"}]}).to_string())),
        Step::Call("line_text", Some(KEEP_ALIVE.into())),
        line(json!({"checkpoint": {"last_op_id": "3", "write_checkpoint": "5", "buckets": [
            {"bucket": "b0", "checksum": 1, "priority": 0, "count": 1, "subscriptions": [{"sub": 0}]},
            {"bucket": "b1", "checksum": 5, "count": 2, "subscriptions": [{"sub": 0}]},
        ], "streams": [{"name": "s", "is_default": false, "errors": []}]}})),
        put("b0", 1, 1),
        line(json!({"partial_checkpoint_complete": {"last_op_id": "3", "priority": 0}})),
        put("b1", 2, 2),
        put("b1", 3, 3),
        line(json!({"checkpoint_complete": {"last_op_id": "3"}})),
        Step::Sql("INSERT INTO ps_crud(data, tx_id) VALUES ('{}', 1)"),
        line(json!({"checkpoint_diff": {"last_op_id": "4", "write_checkpoint": "6", "removed_buckets": [],
            "updated_buckets": [{"bucket": "b1", "checksum": 9, "count": 3, "subscriptions": [{"sub": 0}]}]}})),
        put("b1", 4, 4),
        // Held back: an upload is pending.
        line(json!({"checkpoint_complete": {"last_op_id": "4"}})),
        Step::Sql("DELETE FROM ps_crud"),
        Step::Call("target_checkpoint_request_id", Some("6".into())),
        Step::Call("completed_upload", None),
        Step::Call("line_text", Some(KEEP_ALIVE.into())),
        Step::Call("stop", None),
    ]
}

/// `powersync_control(op, payload)` in whatever transaction is open.
fn control(db: &Connection, op: &str, payload: impl rusqlite::ToSql) -> rusqlite::Result<SqlValue> {
    db.query_row("SELECT powersync_control(?1, ?2)", (op, payload), |r| r.get(0))
}

/// BEGIN IMMEDIATE; the call; COMMIT, or ROLLBACK when it fails.
fn host_call(db: &Connection, op: &str, payload: &Option<String>) -> rusqlite::Result<Value> {
    db.execute_batch("BEGIN IMMEDIATE").unwrap();
    match control(db, op, payload.as_deref()) {
        Ok(value) => {
            db.execute_batch("COMMIT").unwrap();
            let mut value = match value {
                SqlValue::Text(text) if text.starts_with('[') => serde_json::from_str(&text).unwrap(),
                other => Value::String(format!("{other:?}")),
            };
            normalise(&mut value);
            Ok(value)
        }
        Err(err) => {
            db.execute_batch("ROLLBACK").unwrap();
            Err(err)
        }
    }
}

/// What the tests compare at the end (the iteration token aside).
fn tables(db: &Connection) -> Vec<String> {
    [
        "SELECT name, last_applied_op, last_op, add_checksum, op_checksum, count_at_last, count_since_last FROM ps_buckets ORDER BY name",
        "SELECT type, id, data FROM ps_untyped ORDER BY 1, 2",
        "SELECT priority FROM ps_sync_state ORDER BY 1",
        "SELECT key, value FROM ps_kv WHERE key NOT IN ('client_id', 'oplite_sync_iteration') ORDER BY 1",
        "SELECT stream_name, active, last_synced_at IS NOT NULL FROM ps_stream_subscriptions ORDER BY id",
    ]
    .iter()
    .flat_map(|sql| rows(db, sql))
    .collect()
}

/// Runs the session; with `fault = Some((i, key))`, writes of `key` fail
/// during step i. Returns the answers of the steps (a failed and retried
/// step answers with its retry) and whether the fault fired.
fn run(fault: Option<(usize, (&str, &str))>) -> (Vec<Value>, Vec<String>, bool) {
    let db = common::oplite_initialised();
    register_fail_busy(&db);
    db.execute_batch("UPDATE ps_kv SET value = '00000000-0000-4000-8000-000000000000' WHERE key = 'client_id'")
        .unwrap();
    let mut answers = Vec::new();
    let mut fired = false;
    let keep_alive = Some(KEEP_ALIVE.to_owned());
    for (i, step) in session().iter().enumerate() {
        let (op, payload) = match step {
            Step::Sql(sql) => {
                db.execute_batch(sql).unwrap();
                continue;
            }
            Step::Call(op, payload) => (*op, payload),
        };
        if let Some((at, (table, key))) = fault.filter(|(at, _)| *at == i) {
            db.execute_batch(&format!(
                "CREATE TEMP TRIGGER fail_kv BEFORE INSERT ON {table} WHEN NEW.key = '{key}'
                 BEGIN SELECT fail_busy(); END;"
            ))
            .unwrap();
            let result = host_call(&db, op, payload);
            db.execute_batch("DROP TRIGGER fail_kv").unwrap();
            match result {
                Ok(answer) => answers.push(answer),
                Err(err) => {
                    fired = true;
                    assert!(err.to_string().contains("database is locked"), "step {at} ({op}), {key}: {err}");
                    assert_eq!(common::error_code(&err) & 0xff, rusqlite::ffi::SQLITE_BUSY, "{err}");
                    // The first keep-alive connects; later ones must find the
                    // status exactly as it was before the failed call.
                    if i > 2 && op != "stop" {
                        let answer = host_call(&db, "line_text", &keep_alive)
                            .unwrap_or_else(|e| panic!("keep-alive after step {at} ({op}) failed on {key}: {e}"));
                        assert_eq!(
                            answer,
                            json!([]),
                            "after step {at} ({op}) failed writing {key} and was rolled back, memory still changed"
                        );
                    }
                    let answer = host_call(&db, op, payload)
                        .unwrap_or_else(|e| panic!("retry of step {at} ({op}) after a failure on {key}: {e}"));
                    answers.push(answer);
                }
            }
            continue;
        }
        answers.push(host_call(&db, op, payload).unwrap_or_else(|e| panic!("step {i} ({op}): {e}")));
    }
    (answers, tables(&db), fired)
}

#[test]
fn a_call_that_fails_at_any_write_leaves_memory_as_it_was() {
    let (clean, clean_tables, _) = run(None);
    // The clean run applies both checkpoints, the second after the upload.
    let completions: Vec<&Value> = clean
        .iter()
        .flat_map(|a| a.as_array().into_iter().flatten())
        .filter_map(|i| i.get("DidCompleteSync"))
        .collect();
    assert_eq!(completions.len(), 2, "{clean:#?}");
    let mut fired = 0;
    for i in 0..session().len() {
        for key in KEYS {
            let (answers, tables, did_fire) = run(Some((i, *key)));
            fired += usize::from(did_fire);
            for (n, (ours, expected)) in answers.iter().zip(&clean).enumerate() {
                assert_eq!(ours, expected, "answer {n} differs after a failure at step {i} writing {key:?}");
            }
            assert_eq!(tables, clean_tables, "tables differ after a failure at step {i} writing {key:?}");
        }
    }
    // Every call that writes sync state writes the iteration key (the
    // session's checkpoint_diff writes none, so has none to fail), and the
    // checkpoint keys fail the completions (the retry at completed_upload
    // records last_seen again, as the reference does) and the target.
    assert_eq!(fired, 16, "faults that fired");
}

/// A failure that retrying cannot fix (here a write refused by a trigger,
/// as SQLITE_FULL or an I/O error would be) keeps the iteration, as the
/// reference's does since core 0.5.4 (PR #218): the host rolls the call
/// back, and the next event goes on from the state before the failed call.
#[test]
fn a_call_that_fails_for_good_keeps_the_iteration() {
    let db = common::oplite_initialised();
    host_call(&db, "start", &None).unwrap();
    db.execute_batch(
        "CREATE TEMP TRIGGER fail_kv BEFORE INSERT ON ps_oplite_kv
         BEGIN SELECT RAISE(ABORT, 'injected: database or disk is full'); END;",
    )
    .unwrap();
    let checkpoint = Some(r#"{"checkpoint":{"last_op_id":"1","buckets":[{"bucket":"b","checksum":5}]}}"#.to_owned());
    // The data line writes sync state, so its call records itself in
    // ps_oplite_kv, and fails there.
    let data = Some(
        json!({"data": {"bucket": "b", "data": [{"op_id": "1", "op": "PUT", "object_type": "items",
            "object_id": "row1", "checksum": 5, "data": "{}"}]}})
        .to_string(),
    );
    host_call(&db, "line_text", &checkpoint).unwrap();
    let err = host_call(&db, "line_text", &data).unwrap_err();
    assert!(err.to_string().contains("injected"), "{err}");
    db.execute_batch("DROP TRIGGER fail_kv").unwrap();
    // The same line again goes on from the state before the failure: the
    // checkpoint then validates (a line stored twice would not).
    host_call(&db, "line_text", &data).unwrap();
    let complete = Some(r#"{"checkpoint_complete":{"last_op_id":"1"}}"#.to_owned());
    let answer = host_call(&db, "line_text", &complete).unwrap();
    assert!(answer.as_array().unwrap().iter().any(|i| i.get("DidCompleteSync").is_some()), "{answer}");
    let stopped = host_call(&db, "stop", &None).unwrap();
    assert_eq!(stopped.as_array().unwrap().last().unwrap(), &json!({"CloseSyncStream": {"hide_disconnect": false}}));
}

/// oplite's own guard (docs/differences.md, "The sync engine"): when the
/// host rolls back a transaction that held calls which succeeded (a batch
/// of lines whose last one failed), memory remembers writes the database
/// no longer has, so the next call ends the iteration with an error
/// instead of going on; the next `start` resumes from the database. A
/// failed call in a transaction of its own goes on (above).
#[test]
fn a_rolled_back_batch_of_calls_ends_the_iteration() {
    let db = common::oplite_initialised();
    host_call(&db, "start", &None).unwrap();
    db.execute_batch("BEGIN").unwrap();
    control(&db, "line_text", r#"{"checkpoint":{"last_op_id":"1","buckets":[{"bucket":"b","checksum":5}]}}"#).unwrap();
    let data = json!({"data": {"bucket": "b", "data": [{"op_id": "1", "op": "PUT", "object_type": "items",
        "object_id": "row1", "checksum": 5, "data": "{}"}]}});
    control(&db, "line_text", &data.to_string()).unwrap();
    control(&db, "line_text", "not a line").unwrap_err();
    db.execute_batch("ROLLBACK").unwrap();
    let err = host_call(&db, "line_text", &Some(KEEP_ALIVE.to_owned())).unwrap_err();
    assert!(err.to_string().contains("rolled back"), "{err}");
    let err = host_call(&db, "line_text", &Some(KEEP_ALIVE.to_owned())).unwrap_err();
    assert!(err.to_string().contains("No iteration is active"), "{err}");
    host_call(&db, "start", &None).unwrap();
    host_call(&db, "line_text", &Some(KEEP_ALIVE.to_owned())).unwrap();
}

/// A rolled-back transaction whose calls wrote no row (a checkpoint with
/// no bucket to drop, a checkpoint_diff) took nothing from the database,
/// so the iteration goes on: the data and the completion that follow
/// apply the checkpoint the rolled-back lines announced.
#[test]
fn a_rolled_back_batch_that_wrote_nothing_keeps_the_iteration() {
    let db = common::oplite_initialised();
    host_call(&db, "start", &None).unwrap();
    db.execute_batch("BEGIN").unwrap();
    control(&db, "line_text", r#"{"checkpoint":{"last_op_id":"1","buckets":[{"bucket":"b","checksum":0}]}}"#).unwrap();
    control(
        &db,
        "line_text",
        r#"{"checkpoint_diff":{"last_op_id":"2","updated_buckets":[{"bucket":"b","checksum":5}],"removed_buckets":[]}}"#,
    )
    .unwrap();
    db.execute_batch("ROLLBACK").unwrap();
    let data = json!({"data": {"bucket": "b", "data": [{"op_id": "2", "op": "PUT", "object_type": "items",
        "object_id": "row2", "checksum": 5, "data": "{}"}]}});
    host_call(&db, "line_text", &Some(data.to_string())).unwrap();
    let answer = host_call(&db, "line_text", &Some(r#"{"checkpoint_complete":{"last_op_id":"2"}}"#.to_owned())).unwrap();
    assert!(answer.as_array().unwrap().iter().any(|i| i.get("DidCompleteSync").is_some()), "{answer}");
    assert_eq!(common::schema::texts(&db, "SELECT id FROM ps_untyped"), ["row2"]);
}
