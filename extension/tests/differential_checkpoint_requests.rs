//! Differential tests of checkpoint requests (`checkpoint_mode: "requests"`,
//! the Node SDK 1.1.0's `connect({ checkpointMode: 'requests' })`): `start`
//! in each mode, `seed_checkpoint_request_id`, `next_checkpoint_request_id`,
//! `current_checkpoint_request_id` and `target_checkpoint_request_id` with
//! every kind of payload, the upload gate across a local write, an upload
//! and checkpoints carrying `write_checkpoint`, retries at
//! `completed_upload`, and `powersync_clear`. The same calls go to oplite
//! and to the reference core; answers, error codes and every internal table
//! (ps_kv included) must agree after each call.
mod common;

use common::diff::{Answer, Arg, Pair};
use rusqlite::ffi;
use serde_json::{json, Value};

const CLIENT_ID: &str = "00000000-0000-4000-8000-000000000000";

fn int(i: i64) -> Answer {
    Answer::Scalar(format!("Integer({i})"))
}

fn null() -> Answer {
    Answer::Scalar("Null".into())
}

fn instructions(answer: Answer) -> Vec<Value> {
    match answer {
        Answer::Json(Value::Array(items)) => items,
        other => panic!("expected instructions, got {other:?}"),
    }
}

/// The instruction named `name`, if the answer has one.
fn find<'a>(items: &'a [Value], name: &str) -> Option<&'a Value> {
    items.iter().find_map(|i| i.get(name))
}

/// `start` with `payload` (NULL when None); returns its EstablishSyncStream.
fn start(pair: &mut Pair, payload: Option<Value>) -> Value {
    let text = payload.map(|p| p.to_string());
    let answer = match &text {
        Some(t) => pair.control("start", Arg::Text(t)),
        None => pair.control("start", Arg::Null),
    };
    find(&instructions(answer), "EstablishSyncStream").expect("start establishes a stream").clone()
}

fn requests_mode() -> Option<Value> {
    Some(json!({"checkpoint_mode": "requests"}))
}

fn line(pair: &mut Pair, line: Value) -> Vec<Value> {
    instructions(pair.control("line_text", Arg::Text(&line.to_string())))
}

fn kv(pair: &Pair, key: &str) -> Option<String> {
    pair.ours
        .query_row("SELECT CAST(value AS TEXT) FROM ps_kv WHERE key = ?1", [key], |r| r.get(0))
        .ok()
}

/// A state error (no iteration, not seeded): SQLITE_MISUSE in both;
/// `Pair::control` has compared the codes.
fn assert_misuse(pair: &mut Pair, op: &str, arg: Arg<'_>) {
    assert_eq!(pair.control(op, arg), Answer::Error(ffi::SQLITE_MISUSE), "{op}");
}

/// A refused payload: SQLITE_CONSTRAINT_DATATYPE in both, as for every
/// invalid argument.
fn assert_bad_argument(pair: &mut Pair, op: &str, arg: Arg<'_>) {
    let (ours, theirs) = pair.control_error_codes(op, arg);
    assert_eq!(theirs, ffi::SQLITE_CONSTRAINT_DATATYPE, "reference's code for {op}");
    assert_eq!(ours, theirs, "oplite's code for {op}");
}

#[test]
fn start_sends_a_checkpoint_request_only_in_requests_mode() {
    let mut pair = Pair::new();
    for payload in [None, Some(json!({})), Some(json!({"checkpoint_mode": "legacy"}))] {
        let establish = start(&mut pair, payload);
        assert!(establish.get("checkpoint_request").is_none(), "{establish}");
    }
    let establish = start(&mut pair, requests_mode());
    assert_eq!(establish["checkpoint_request"], json!({"client_id": CLIENT_ID, "checkpoint_request_id": "1"}));
    assert_eq!(establish["request"]["client_id"], CLIENT_ID);

    // Other modes, and a mode that is not a string, are refused.
    for bad in [json!({"checkpoint_mode": "Requests"}), json!({"checkpoint_mode": null}), json!({"checkpoint_mode": 1})]
    {
        assert_bad_argument(&mut pair, "start", Arg::Text(&bad.to_string()));
    }
}

#[test]
fn initial_id_is_the_largest_of_counter_concrete_target_and_one() {
    let mut pair = Pair::new();
    pair.replace_schema(&json!({"tables": [{"name": "items", "columns": [{"name": "name", "type": "text"}]}]}));
    let id = |establish: Value| establish["checkpoint_request"]["checkpoint_request_id"].clone();

    assert_eq!(id(start(&mut pair, requests_mode())), "1");
    assert_eq!(pair.control("seed_checkpoint_request_id", Arg::Int(5)), int(5));
    assert_eq!(id(start(&mut pair, requests_mode())), "5");
    // A concrete target above the counter raises it.
    assert_eq!(pair.control("target_checkpoint_request_id", Arg::Int(9)), null());
    assert_eq!(id(start(&mut pair, requests_mode())), "9");
    // A local write's sentinel is no id.
    pair.execute("BEGIN; INSERT INTO items(id, name) VALUES ('a', 'x'); COMMIT;");
    assert_eq!(kv(&pair, "target_checkpoint_request_id").as_deref(), Some("9223372036854775807"));
    assert_eq!(id(start(&mut pair, requests_mode())), "5");
    // A target below the counter does not lower it.
    assert_eq!(pair.control("target_checkpoint_request_id", Arg::Int(3)), int(i64::MAX));
    assert_eq!(id(start(&mut pair, requests_mode())), "5");
    // Cleared target, seeded counter.
    assert_eq!(pair.control("target_checkpoint_request_id", Arg::Int(0)), int(3));
    assert_eq!(pair.control("seed_checkpoint_request_id", Arg::Text("12")), int(12));
    assert_eq!(id(start(&mut pair, requests_mode())), "12");
}

#[test]
fn seed_next_and_current() {
    let mut pair = Pair::new();
    // Without an iteration: seeding and allocating are state errors,
    // reading is not.
    assert_misuse(&mut pair, "seed_checkpoint_request_id", Arg::Int(5));
    assert_misuse(&mut pair, "next_checkpoint_request_id", Arg::Null);
    // The iteration check comes before the payload's.
    assert_misuse(&mut pair, "seed_checkpoint_request_id", Arg::Int(-1));
    assert_eq!(pair.control("current_checkpoint_request_id", Arg::Null), null());

    start(&mut pair, requests_mode());
    assert_misuse(&mut pair, "next_checkpoint_request_id", Arg::Null);
    assert_eq!(pair.control("current_checkpoint_request_id", Arg::Null), null());

    // Payloads seeding refuses.
    for arg in [
        Arg::Null,
        Arg::Int(0),
        Arg::Int(-1),
        Arg::Int(i64::MIN),
        Arg::Real(1.5),
        Arg::Real(2.0),
        Arg::Blob(b"7"),
        Arg::Text("abc"),
        Arg::Text(" 7"),
        Arg::Text("7 "),
        Arg::Text(""),
        Arg::Text("0"),
        Arg::Text("-3"),
        Arg::Text("9223372036854775808"),
    ] {
        assert_bad_argument(&mut pair, "seed_checkpoint_request_id", arg);
    }
    assert_eq!(kv(&pair, "last_requested_checkpoint_request_id"), None);

    assert_eq!(pair.control("seed_checkpoint_request_id", Arg::Text("+7")), int(7));
    assert_eq!(pair.control("current_checkpoint_request_id", Arg::Null), int(7));
    assert_eq!(pair.control("next_checkpoint_request_id", Arg::Null), int(8));
    // The payload of next and current is ignored.
    assert_eq!(pair.control("next_checkpoint_request_id", Arg::Text("whatever")), int(9));
    assert_eq!(pair.control("current_checkpoint_request_id", Arg::Int(100)), int(9));
    assert_eq!(kv(&pair, "last_requested_checkpoint_request_id").as_deref(), Some("9"));
    // A seed is stored as given, even when lower.
    assert_eq!(pair.control("seed_checkpoint_request_id", Arg::Int(3)), int(3));
    assert_eq!(pair.control("next_checkpoint_request_id", Arg::Null), int(4));
    // The largest id: the next one saturates.
    assert_eq!(pair.control("seed_checkpoint_request_id", Arg::Int(i64::MAX)), int(i64::MAX));
    assert_eq!(pair.control("next_checkpoint_request_id", Arg::Null), int(i64::MAX));

    // A rolled-back allocation is allocated again.
    assert_eq!(pair.control("seed_checkpoint_request_id", Arg::Int(20)), int(20));
    for db in [&pair.ours, &pair.theirs] {
        db.execute_batch("BEGIN").unwrap();
        let id: i64 = db.query_row("SELECT powersync_control('next_checkpoint_request_id', NULL)", [], |r| r.get(0)).unwrap();
        assert_eq!(id, 21);
        db.execute_batch("ROLLBACK").unwrap();
    }
    assert_eq!(pair.control("next_checkpoint_request_id", Arg::Null), int(21));

    // The legacy mode allows them too: they need only an iteration.
    start(&mut pair, None);
    assert_eq!(pair.control("next_checkpoint_request_id", Arg::Null), int(22));

    // After stop, and after the stream ended, there is no iteration.
    pair.control("stop", Arg::Null);
    assert_misuse(&mut pair, "next_checkpoint_request_id", Arg::Null);
    assert_misuse(&mut pair, "seed_checkpoint_request_id", Arg::Int(1));
    start(&mut pair, requests_mode());
    pair.control("connection", Arg::Text("end"));
    assert_misuse(&mut pair, "next_checkpoint_request_id", Arg::Null);
    assert_eq!(pair.control("current_checkpoint_request_id", Arg::Null), int(22));
}

#[test]
fn target_null_zero_negative_positive() {
    let mut pair = Pair::new();
    // No iteration needed.
    assert_eq!(pair.control("target_checkpoint_request_id", Arg::Null), null());
    assert_eq!(pair.control("target_checkpoint_request_id", Arg::Int(0)), null());
    assert_eq!(kv(&pair, "target_checkpoint_request_id"), None);
    assert_eq!(pair.control("target_checkpoint_request_id", Arg::Int(4)), null());
    assert_eq!(pair.control("target_checkpoint_request_id", Arg::Null), int(4));
    assert_eq!(pair.control("target_checkpoint_request_id", Arg::Text("6")), int(4));
    for arg in [
        Arg::Int(-1),
        Arg::Text("-6"),
        Arg::Text("six"),
        Arg::Text(" 6"),
        Arg::Real(6.0),
        Arg::Blob(b"6"),
    ] {
        assert_bad_argument(&mut pair, "target_checkpoint_request_id", arg);
    }
    assert_eq!(kv(&pair, "target_checkpoint_request_id").as_deref(), Some("6"));
    assert_eq!(pair.control("target_checkpoint_request_id", Arg::Text("0")), int(6));
    assert_eq!(kv(&pair, "target_checkpoint_request_id"), None);
    assert_eq!(pair.control("target_checkpoint_request_id", Arg::Null), null());
    assert_eq!(pair.control("target_checkpoint_request_id", Arg::Int(i64::MAX)), null());
    // The target is separate from the counter.
    assert_eq!(pair.control("current_checkpoint_request_id", Arg::Null), null());
}

/// A database with an items table, in a requests-mode iteration seeded
/// with 1, holding one synced row.
fn synced_pair() -> Pair {
    let mut pair = Pair::new();
    pair.replace_schema(&json!({"tables": [{"name": "items", "columns": [{"name": "name", "type": "text"}]}]}));
    let establish = start(&mut pair, requests_mode());
    let initial = establish["checkpoint_request"]["checkpoint_request_id"].as_str().unwrap().to_owned();
    // The service accepts the hint as it is.
    assert_eq!(pair.control("seed_checkpoint_request_id", Arg::Text(&initial)), int(1));
    line(&mut pair, checkpoint(1, None, 1));
    line(&mut pair, put(1, "row1", "server1"));
    let done = line(&mut pair, json!({"checkpoint_complete": {"last_op_id": "1"}}));
    assert_eq!(find(&done, "DidCompleteSync"), Some(&json!({})), "no write checkpoint, no id");
    pair
}

fn checkpoint(last_op: i64, write_checkpoint: Option<i64>, checksum: u32) -> Value {
    json!({"checkpoint": {"last_op_id": last_op.to_string(), "write_checkpoint": write_checkpoint.map(|w| w.to_string()),
        "buckets": [{"bucket": "b", "checksum": checksum, "priority": 3, "count": last_op}]}})
}

fn put(op_id: i64, id: &str, name: &str) -> Value {
    json!({"data": {"bucket": "b", "has_more": false, "after": null, "next_after": null, "data": [{
        "op_id": op_id.to_string(), "op": "PUT", "object_type": "items", "object_id": id,
        "checksum": op_id, "data": json!({"name": name}).to_string(),
    }]}})
}

fn complete(pair: &mut Pair, last_op: i64) -> Vec<Value> {
    line(pair, json!({"checkpoint_complete": {"last_op_id": last_op.to_string()}}))
}

fn has_log(items: &[Value], text: &str) -> bool {
    items.iter().any(|i| i["LogLine"]["line"].as_str().is_some_and(|l| l.contains(text)))
}

fn item_name(pair: &Pair, id: &str) -> Option<String> {
    pair.ours.query_row("SELECT name FROM items WHERE id = ?1", [id], |r| r.get(0)).ok()
}

#[test]
fn upload_round_trip_applies_once_the_target_is_seen() {
    let mut pair = synced_pair();
    pair.execute("BEGIN; INSERT INTO items(id, name) VALUES ('local', 'mine'); COMMIT;");
    assert_eq!(kv(&pair, "target_checkpoint_request_id").as_deref(), Some("9223372036854775807"));

    // A checkpoint arrives while the upload is pending: held back.
    line(&mut pair, checkpoint(2, None, 3));
    line(&mut pair, put(2, "row2", "server2"));
    let held = complete(&mut pair, 2);
    assert!(has_log(&held, "Could not apply checkpoint due to local data"), "{held:?}");
    assert_eq!(item_name(&pair, "row2"), None);

    // The upload: allocate, post, set the gate.
    pair.execute("DELETE FROM ps_crud");
    assert_eq!(pair.control("next_checkpoint_request_id", Arg::Null), int(2));
    assert_eq!(pair.control("target_checkpoint_request_id", Arg::Int(2)), int(i64::MAX));
    // The held checkpoint has no write checkpoint: older than the gate.
    let retried = instructions(pair.control("completed_upload", Arg::Null));
    assert!(find(&retried, "DidCompleteSync").is_none(), "{retried:?}");
    assert_eq!(item_name(&pair, "row2"), None);

    // An older write checkpoint does not open the gate.
    line(&mut pair, checkpoint(2, Some(1), 3));
    let held = complete(&mut pair, 2);
    assert!(find(&held, "DidCompleteSync").is_none(), "{held:?}");
    assert_eq!(kv(&pair, "last_seen_checkpoint_request_id").as_deref(), Some("1"));
    assert_eq!(item_name(&pair, "row2"), None);

    // The one posted does.
    line(&mut pair, checkpoint(3, Some(2), 6));
    line(&mut pair, put(3, "row3", "server3"));
    let applied = complete(&mut pair, 3);
    assert_eq!(find(&applied, "DidCompleteSync"), Some(&json!({"applied_checkpoint_request_id": "2"})));
    let status = applied.iter().rev().find_map(|i| i.get("UpdateSyncStatus")).expect("a status update");
    assert_eq!(status["status"]["internal_last_applied_checkpoint_request_id"], "2");
    assert!(has_log(&applied, "Applied checkpoint request id 2"), "{applied:?}");
    assert_eq!(kv(&pair, "last_seen_checkpoint_request_id").as_deref(), Some("2"));
    assert_eq!(kv(&pair, "last_applied_checkpoint_request_id").as_deref(), Some("2"));
    assert_eq!(item_name(&pair, "row2").as_deref(), Some("server2"));
    assert_eq!(item_name(&pair, "row3").as_deref(), Some("server3"));
    // The local row was uploaded but the service never sent it back.
    assert_eq!(item_name(&pair, "local"), None);

    // A later checkpoint without a write checkpoint applies without an id;
    // the status keeps the field until an apply or a disconnect changes it.
    line(&mut pair, checkpoint(3, None, 6));
    let again = complete(&mut pair, 3);
    assert_eq!(find(&again, "DidCompleteSync"), Some(&json!({})));
    let stopped = instructions(pair.control("stop", Arg::Null));
    let status = find(&stopped, "UpdateSyncStatus").expect("stop reports a status");
    assert!(status["status"].get("internal_last_applied_checkpoint_request_id").is_none(), "{status}");
    // Both keys survive the iteration; a local write clears them.
    assert_eq!(kv(&pair, "last_applied_checkpoint_request_id").as_deref(), Some("2"));
    pair.execute("BEGIN; UPDATE items SET name = 'changed' WHERE id = 'row2'; COMMIT;");
    assert_eq!(kv(&pair, "last_applied_checkpoint_request_id"), None);
    assert_eq!(kv(&pair, "last_seen_checkpoint_request_id"), None);
    // The next connection asks to confirm the counter.
    let establish = start(&mut pair, requests_mode());
    assert_eq!(establish["checkpoint_request"]["checkpoint_request_id"], "2");
}

#[test]
fn completed_upload_retries_a_pending_checkpoint_until_it_applies() {
    let mut pair = synced_pair();
    pair.execute("BEGIN; INSERT INTO items(id, name) VALUES ('local', 'mine'); COMMIT;");
    // The service already confirms write checkpoint 2 (the SDK allocated
    // and posted it before the upload finished).
    assert_eq!(pair.control("next_checkpoint_request_id", Arg::Null), int(2));
    line(&mut pair, checkpoint(2, Some(2), 3));
    line(&mut pair, put(2, "row2", "server2"));
    let held = complete(&mut pair, 2);
    assert!(find(&held, "DidCompleteSync").is_none(), "{held:?}");

    // While the gate is the sentinel, the held checkpoint (2 < i64::MAX)
    // cannot confirm the upload: dropped without a try.
    let retried = instructions(pair.control("completed_upload", Arg::Null));
    assert_eq!(retried, Vec::<Value>::new());
    line(&mut pair, checkpoint(2, Some(2), 3));
    complete(&mut pair, 2);
    // The gate at 2 but ps_crud still holding the row: one try, a warning.
    assert_eq!(pair.control("target_checkpoint_request_id", Arg::Int(2)), int(i64::MAX));
    let retried = instructions(pair.control("completed_upload", Arg::Null));
    assert!(has_log(&retried, "Could not apply pending checkpoint even after completed upload"), "{retried:?}");
    // Since core 0.5.4 the checkpoint stays pending (0.5.3 tried once):
    // the next upload retries it again, and once ps_crud is empty, applies it.
    let retried = instructions(pair.control("completed_upload", Arg::Null));
    assert!(has_log(&retried, "Could not apply pending checkpoint even after completed upload"), "{retried:?}");
    pair.execute("DELETE FROM ps_crud");
    let retried = instructions(pair.control("completed_upload", Arg::Null));
    assert_eq!(find(&retried, "DidCompleteSync"), Some(&json!({"applied_checkpoint_request_id": "2"})));
    assert_eq!(item_name(&pair, "row2").as_deref(), Some("server2"));
    // Applied: nothing is pending any more.
    let retried = instructions(pair.control("completed_upload", Arg::Null));
    assert_eq!(retried, Vec::<Value>::new());

    // Held again by a new local write; this time the upload completes
    // first, then completed_upload applies it.
    pair.execute("BEGIN; INSERT INTO items(id, name) VALUES ('local2', 'mine'); COMMIT;");
    line(&mut pair, checkpoint(2, Some(3), 3));
    let held = complete(&mut pair, 2);
    assert!(find(&held, "DidCompleteSync").is_none(), "{held:?}");
    pair.execute("DELETE FROM ps_crud");
    assert_eq!(pair.control("next_checkpoint_request_id", Arg::Null), int(3));
    assert_eq!(pair.control("target_checkpoint_request_id", Arg::Int(3)), int(i64::MAX));
    let applied = instructions(pair.control("completed_upload", Arg::Null));
    assert!(has_log(&applied, "Applied pending checkpoint after completed upload"), "{applied:?}");
    assert_eq!(find(&applied, "DidCompleteSync"), Some(&json!({"applied_checkpoint_request_id": "3"})));
    assert_eq!(kv(&pair, "last_applied_checkpoint_request_id").as_deref(), Some("3"));
    assert_eq!(item_name(&pair, "row2").as_deref(), Some("server2"));

    // A local write after the checkpoint was seen clears last_seen; with
    // the gate cleared by hand the retry records it again and applies.
    pair.execute("BEGIN; INSERT INTO items(id, name) VALUES ('local3', 'mine'); COMMIT;");
    line(&mut pair, checkpoint(3, Some(4), 6));
    line(&mut pair, put(3, "row3", "server3"));
    complete(&mut pair, 3);
    assert_eq!(kv(&pair, "last_seen_checkpoint_request_id").as_deref(), Some("4"));
    pair.execute("BEGIN; INSERT INTO items(id, name) VALUES ('local4', 'mine'); COMMIT;");
    assert_eq!(kv(&pair, "last_seen_checkpoint_request_id"), None);
    pair.execute("DELETE FROM ps_crud");
    assert_eq!(pair.control("target_checkpoint_request_id", Arg::Int(0)), int(i64::MAX));
    let applied = instructions(pair.control("completed_upload", Arg::Null));
    assert_eq!(find(&applied, "DidCompleteSync"), Some(&json!({"applied_checkpoint_request_id": "4"})));
    assert_eq!(kv(&pair, "last_seen_checkpoint_request_id").as_deref(), Some("4"));
    assert_eq!(item_name(&pair, "row3").as_deref(), Some("server3"));
}

#[test]
fn partial_checkpoints_neither_see_nor_apply_a_request() {
    let mut pair = Pair::new();
    pair.replace_schema(&json!({"tables": [{"name": "items", "columns": [{"name": "name", "type": "text"}]}]}));
    start(&mut pair, requests_mode());
    line(
        &mut pair,
        json!({"checkpoint": {"last_op_id": "1", "write_checkpoint": "5",
            "buckets": [{"bucket": "b", "checksum": 1, "priority": 1, "count": 1}]}}),
    );
    line(&mut pair, put(1, "row1", "server1"));
    let partial = line(&mut pair, json!({"partial_checkpoint_complete": {"last_op_id": "1", "priority": 1}}));
    assert!(find(&partial, "DidCompleteSync").is_none(), "{partial:?}");
    assert_eq!(kv(&pair, "last_seen_checkpoint_request_id"), None);
    assert_eq!(item_name(&pair, "row1").as_deref(), Some("server1"));
    let done = complete(&mut pair, 1);
    assert_eq!(find(&done, "DidCompleteSync"), Some(&json!({"applied_checkpoint_request_id": "5"})));
}

#[test]
fn clear_resets_checkpoint_request_state() {
    let mut pair = synced_pair();
    pair.execute("BEGIN; INSERT INTO items(id, name) VALUES ('local', 'mine'); COMMIT;");
    assert_eq!(pair.control("next_checkpoint_request_id", Arg::Null), int(2));
    pair.execute("DELETE FROM ps_crud");
    assert_eq!(pair.control("target_checkpoint_request_id", Arg::Int(2)), int(i64::MAX));
    line(&mut pair, checkpoint(1, Some(2), 1));
    complete(&mut pair, 1);
    assert_eq!(kv(&pair, "last_applied_checkpoint_request_id").as_deref(), Some("2"));
    pair.control("stop", Arg::Null);

    for flags in [0, 1] {
        pair.execute(&format!("BEGIN; SELECT powersync_clear({flags}); COMMIT;"));
        for key in [
            "last_requested_checkpoint_request_id",
            "target_checkpoint_request_id",
            "last_seen_checkpoint_request_id",
            "last_applied_checkpoint_request_id",
        ] {
            assert_eq!(kv(&pair, key), None, "{key} after powersync_clear({flags})");
        }
        assert_eq!(pair.control("current_checkpoint_request_id", Arg::Null), null());
        assert_eq!(pair.control("target_checkpoint_request_id", Arg::Null), null());
        // The next connection starts from 1; the service's answer hydrates it.
        let establish = start(&mut pair, requests_mode());
        assert_eq!(establish["checkpoint_request"]["checkpoint_request_id"], "1");
        assert_eq!(pair.control("seed_checkpoint_request_id", Arg::Int(2)), int(2));
        assert_eq!(pair.control("next_checkpoint_request_id", Arg::Null), int(3));
        pair.control("stop", Arg::Null);
    }
}
