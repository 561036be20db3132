//! Differential tests of the sync behaviour core 0.5.4 changed (issue 50,
//! points 2-7, 10 and 11): the same calls go to oplite and to the 0.5.4
//! reference, whose instructions (order included) and tables must agree
//! after every call, on JSON and on BSON lines. Each test also checks the
//! instruction or row that the point is about, so that two cores agreeing
//! on something else cannot pass it.
mod common;

use common::diff::{Answer, Arg, Pair};
use serde_json::{json, Value};

#[derive(Clone, Copy, Debug)]
enum Wire {
    Json,
    Bson,
}

const WIRES: [Wire; 2] = [Wire::Json, Wire::Bson];

/// Sends a sync line in `wire`'s encoding to both cores.
fn line(pair: &mut Pair, wire: Wire, line: Value) -> Value {
    let answer = match wire {
        Wire::Json => pair.control("line_text", Arg::Text(&line.to_string())),
        Wire::Bson => pair.control("line_binary", Arg::Blob(&bson::serialize_to_vec(&line).unwrap())),
    };
    json_of(answer)
}

/// Sends a line both cores must refuse.
fn line_fails(pair: &mut Pair, wire: Wire, line: Value) {
    match wire {
        Wire::Json => pair.control_fails("line_text", Arg::Text(&line.to_string())),
        Wire::Bson => pair.control_fails("line_binary", Arg::Blob(&bson::serialize_to_vec(&line).unwrap())),
    }
}

fn control(pair: &mut Pair, op: &str, payload: Option<&str>) -> Value {
    json_of(pair.control(op, payload.map_or(Arg::Null, Arg::Text)))
}

fn json_of(answer: Answer) -> Value {
    match answer {
        Answer::Json(v) => v,
        other => panic!("expected instructions, got {other:?}"),
    }
}

/// The instruction names of an answer, in order (`LogLine:<SEVERITY>`).
fn kinds(answer: &Value) -> Vec<String> {
    answer
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let (key, body) = i.as_object().unwrap().iter().next().unwrap();
            match key.as_str() {
                "LogLine" => format!("LogLine:{}", body["severity"].as_str().unwrap()),
                "CloseSyncStream" => format!("CloseSyncStream:{}", body["hide_disconnect"]),
                other => other.to_owned(),
            }
        })
        .collect()
}

fn status_of(answer: &Value) -> Option<&Value> {
    answer.as_array().unwrap().iter().rev().find_map(|i| i.get("UpdateSyncStatus").map(|u| &u["status"]))
}

fn checkpoint(last_op: u64, buckets: &[(&str, u32, i32, u32)]) -> Value {
    let buckets: Vec<Value> = buckets
        .iter()
        .map(|(name, checksum, priority, count)| {
            json!({"bucket": name, "checksum": checksum, "priority": priority, "count": count})
        })
        .collect();
    json!({"checkpoint": {"last_op_id": last_op.to_string(), "write_checkpoint": null, "buckets": buckets}})
}

fn put(bucket: &str, op_id: u64, id: &str, checksum: u32) -> Value {
    json!({"data": {"bucket": bucket, "has_more": false, "after": null, "next_after": null, "data": [{
        "op_id": op_id.to_string(), "op": "PUT", "object_type": "items", "object_id": id,
        "checksum": checksum, "data": json!({"name": id}).to_string(),
    }]}})
}

fn complete(last_op: u64) -> Value {
    json!({"checkpoint_complete": {"last_op_id": last_op.to_string()}})
}

fn partial(last_op: u64, priority: i32) -> Value {
    json!({"partial_checkpoint_complete": {"last_op_id": last_op.to_string(), "priority": priority}})
}

/// Both cores with an `items` table.
fn pair() -> Pair {
    let mut pair = Pair::new();
    pair.replace_schema(&json!({"tables": [{"name": "items", "columns": [{"name": "name", "type": "text"}]}]}));
    pair
}

/// A local write, queued in ps_crud on both.
fn local_write(pair: &mut Pair, id: &str) {
    pair.execute(&format!("INSERT INTO items(id, name) VALUES ('{id}', 'local')"));
}

/// The rest of the queue is uploaded (without a new write checkpoint).
fn uploaded(pair: &mut Pair) {
    pair.execute("DELETE FROM ps_crud");
}

/// The host uploads the oldest queued write and sets the apply gate to
/// write checkpoint `wc`, as the SDKs do after an upload; newer writes stay
/// queued. A checkpoint carrying `wc` can then be retried after an upload.
fn upload_oldest(pair: &mut Pair, wc: i64) {
    pair.execute("DELETE FROM ps_crud WHERE id = (SELECT min(id) FROM ps_crud)");
    pair.control("target_checkpoint_request_id", Arg::Text(&wc.to_string()));
}

/// Two queued writes, the first uploaded with write checkpoint `wc`: local
/// data that blocks a checkpoint carrying `wc`, retried after uploads.
fn queue_with_one_uploaded(pair: &mut Pair, wc: i64) {
    local_write(pair, "l1");
    local_write(pair, "l2");
    upload_oldest(pair, wc);
}

fn with_write_checkpoint(mut checkpoint: Value, wc: i64) -> Value {
    checkpoint["checkpoint"]["write_checkpoint"] = json!(wc.to_string());
    checkpoint
}

/// Sync times have millisecond resolution: a status set again within the
/// same millisecond would not be sent again by one core and be sent by the
/// other.
fn next_millisecond() {
    std::thread::sleep(std::time::Duration::from_millis(3));
}

fn position(kinds: &[String], kind: &str) -> usize {
    kinds.iter().position(|k| k == kind).unwrap_or_else(|| panic!("no {kind} in {kinds:?}"))
}

/// Point 2: a checkpoint_complete blocked by pending uploads answers
/// CheckpointDelayedDueToLocalData, before its INFO line.
#[test]
fn a_blocked_full_checkpoint_is_reported_as_delayed() {
    for wire in WIRES {
        let mut pair = pair();
        control(&mut pair, "start", None);
        queue_with_one_uploaded(&mut pair, 5);
        line(&mut pair, wire, with_write_checkpoint(checkpoint(2, &[("a", 3, 3, 2)]), 5));
        line(&mut pair, wire, put("a", 1, "r1", 1));
        line(&mut pair, wire, put("a", 2, "r2", 2));
        let answer = line(&mut pair, wire, complete(2));
        let kinds = kinds(&answer);
        assert!(
            position(&kinds, "CheckpointDelayedDueToLocalData") < position(&kinds, "LogLine:INFO"),
            "{wire:?}: {kinds:?}"
        );
        assert!(!kinds.contains(&"DidCompleteSync".to_owned()), "{kinds:?}");
        // Not sent again by a failed retry after an upload.
        next_millisecond();
        let retry = control(&mut pair, "completed_upload", None);
        assert_eq!(kinds_of(&retry), ["LogLine:WARNING"], "{wire:?}");
        uploaded(&mut pair);
        let applied = control(&mut pair, "completed_upload", None);
        assert!(kinds_of(&applied).contains(&"DidCompleteSync".to_owned()), "{applied}");
        control(&mut pair, "stop", None);
    }
}

fn kinds_of(answer: &Value) -> Vec<String> {
    kinds(answer)
}

/// Point 2: a partial checkpoint (priority > 0) blocked by pending uploads
/// is reported as delayed too; priority 0 is never blocked.
#[test]
fn a_blocked_partial_checkpoint_is_reported_as_delayed() {
    for wire in WIRES {
        let mut pair = pair();
        control(&mut pair, "start", None);
        queue_with_one_uploaded(&mut pair, 5);
        line(&mut pair, wire, with_write_checkpoint(checkpoint(3, &[("p0", 1, 0, 1), ("p1", 2, 1, 1), ("p3", 3, 3, 1)]), 5));
        line(&mut pair, wire, put("p0", 1, "r1", 1));
        line(&mut pair, wire, put("p1", 2, "r2", 2));
        line(&mut pair, wire, put("p3", 3, "r3", 3));
        let blocked = line(&mut pair, wire, partial(3, 1));
        assert_eq!(kinds(&blocked), ["CheckpointDelayedDueToLocalData"], "{wire:?}");
        let applied = line(&mut pair, wire, partial(3, 0));
        assert!(!kinds(&applied).contains(&"CheckpointDelayedDueToLocalData".to_owned()), "{applied}");
        assert_eq!(status_of(&applied).unwrap()["priority_status"][0]["priority"], 0, "{applied}");
        let full = line(&mut pair, wire, complete(3));
        assert!(kinds(&full).contains(&"CheckpointDelayedDueToLocalData".to_owned()), "{full}");
        uploaded(&mut pair);
        let retried = control(&mut pair, "completed_upload", None);
        assert!(kinds(&retried).contains(&"DidCompleteSync".to_owned()), "{retried}");
        control(&mut pair, "stop", None);
    }
}

/// Point 2: a write checkpoint the server has not confirmed yet is local
/// data too.
#[test]
fn an_unconfirmed_write_checkpoint_delays_the_checkpoint() {
    for wire in WIRES {
        let mut pair = pair();
        control(&mut pair, "start", None);
        local_write(&mut pair, "l1");
        // The upload finished and asked for write checkpoint 7.
        uploaded(&mut pair);
        pair.execute("INSERT OR REPLACE INTO ps_kv(key, value) VALUES ('target_checkpoint_request_id', 7)");
        line(&mut pair, wire, checkpoint(1, &[("a", 1, 3, 1)]));
        line(&mut pair, wire, put("a", 1, "r1", 1));
        let answer = line(&mut pair, wire, complete(1));
        assert_eq!(kinds(&answer)[0], "CheckpointDelayedDueToLocalData", "{wire:?}: {answer}");
        let mut confirmed = checkpoint(1, &[("a", 1, 3, 1)]);
        confirmed["checkpoint"]["write_checkpoint"] = json!("7");
        line(&mut pair, wire, confirmed);
        let answer = line(&mut pair, wire, complete(1));
        assert!(kinds(&answer).contains(&"DidCompleteSync".to_owned()), "{answer}");
        control(&mut pair, "stop", None);
    }
}

/// Point 3: a blocked full checkpoint whose buckets are all of priority 0
/// is applied as a priority-0 partial checkpoint, and stays pending: the
/// retry after an upload applies priority 0 again while still blocked, and
/// the whole checkpoint once uploads are done.
#[test]
fn priority_zero_is_applied_under_pending_uploads() {
    for wire in WIRES {
        let mut pair = pair();
        control(&mut pair, "start", None);
        queue_with_one_uploaded(&mut pair, 5);
        line(&mut pair, wire, with_write_checkpoint(checkpoint(2, &[("a", 1, 0, 1), ("b", 2, 0, 1)]), 5));
        line(&mut pair, wire, put("a", 1, "r1", 1));
        line(&mut pair, wire, put("b", 2, "r2", 2));
        let answer = line(&mut pair, wire, complete(2));
        let kinds = kinds(&answer);
        assert_eq!(kinds, ["CheckpointDelayedDueToLocalData", "LogLine:INFO", "UpdateSyncStatus"], "{wire:?}");
        let status = status_of(&answer).unwrap();
        assert_eq!(status["priority_status"].as_array().unwrap().len(), 1, "{status}");
        assert_eq!(status["priority_status"][0]["priority"], 0, "{status}");
        let visible = pair.ours.query_row("SELECT count(*) FROM items WHERE id IN ('r1', 'r2')", [], |r| r.get::<_, i64>(0));
        assert_eq!(visible.unwrap(), 2, "priority-0 rows are applied");

        // The retry after an upload: still blocked, priority 0 again.
        next_millisecond();
        let retry = control(&mut pair, "completed_upload", None);
        assert_eq!(kinds_of(&retry), ["LogLine:WARNING", "UpdateSyncStatus"], "{wire:?}");

        uploaded(&mut pair);
        next_millisecond();
        let applied = control(&mut pair, "completed_upload", None);
        assert!(kinds_of(&applied).contains(&"DidCompleteSync".to_owned()), "{applied}");
        control(&mut pair, "stop", None);
    }
}

/// Point 3 with a stream: the priority-0 apply under pending uploads marks
/// the stream synced (ps_stream_subscriptions compared by Pair, and the
/// status), and a stop keeps the priority-0 entry in the disconnected status.
#[test]
fn priority_zero_under_pending_uploads_marks_streams_synced() {
    for wire in WIRES {
        let mut pair = pair();
        let change = json!({"subscribe": {"stream": {"name": "s"}, "ttl": 60}}).to_string();
        pair.control("subscriptions", Arg::Text(&change));
        control(&mut pair, "start", Some(&json!({"active_streams": [{"name": "s"}]}).to_string()));
        queue_with_one_uploaded(&mut pair, 5);
        let mut cp = with_write_checkpoint(checkpoint(1, &[("a", 1, 0, 1)]), 5);
        cp["checkpoint"]["buckets"][0]["subscriptions"] = json!([{"sub": 0}]);
        cp["checkpoint"]["streams"] = json!([{"name": "s", "is_default": false, "errors": []}]);
        line(&mut pair, wire, cp);
        line(&mut pair, wire, put("a", 1, "r1", 1));
        let answer = line(&mut pair, wire, complete(1));
        let status = status_of(&answer).expect("the partial apply changes the status");
        assert!(status["streams"][0]["last_synced_at"].is_number(), "{status}");
        let stopped = control(&mut pair, "stop", None);
        let status = status_of(&stopped).unwrap();
        assert_eq!(status["priority_status"][0]["priority"], 0, "{status}");
    }
}

/// Point 3: only a checkpoint of priority-0 buckets, and not an empty one.
#[test]
fn mixed_or_empty_checkpoints_stay_blocked() {
    for wire in WIRES {
        for buckets in [&[("a", 1, 0, 1), ("b", 2, 3, 1)][..], &[][..]] {
            let mut pair = pair();
            control(&mut pair, "start", None);
            line(&mut pair, wire, checkpoint(2, buckets));
            if !buckets.is_empty() {
                line(&mut pair, wire, put("a", 1, "r1", 1));
                line(&mut pair, wire, put("b", 2, "r2", 2));
            }
            local_write(&mut pair, "l1");
            let answer = line(&mut pair, wire, complete(2));
            assert_eq!(kinds(&answer), ["CheckpointDelayedDueToLocalData", "LogLine:INFO"], "{wire:?} {buckets:?}");
            control(&mut pair, "stop", None);
        }
    }
}

/// Point 4: a pending checkpoint survives failed retries (0.5.3 retried it
/// once) and is cleared once a checkpoint is applied, a partial one
/// included.
#[test]
fn a_pending_checkpoint_is_kept_across_failed_retries() {
    for wire in WIRES {
        let mut pair = pair();
        control(&mut pair, "start", None);
        queue_with_one_uploaded(&mut pair, 5);
        line(&mut pair, wire, with_write_checkpoint(checkpoint(1, &[("a", 1, 3, 1)]), 5));
        line(&mut pair, wire, put("a", 1, "r1", 1));
        line(&mut pair, wire, complete(1));
        for _ in 0..3 {
            let retry = control(&mut pair, "completed_upload", None);
            assert_eq!(kinds(&retry), ["LogLine:WARNING"], "{wire:?}");
        }
        uploaded(&mut pair);
        let applied = control(&mut pair, "completed_upload", None);
        assert_eq!(kinds(&applied)[0], "LogLine:DEBUG", "{applied}");
        assert!(kinds(&applied).contains(&"DidCompleteSync".to_owned()), "{applied}");
        // Applied: nothing pending any more.
        assert_eq!(control(&mut pair, "completed_upload", None), json!([]));
        // A checkpoint older than the gate is not retried, and stays pending.
        queue_with_one_uploaded(&mut pair, 6);
        line(&mut pair, wire, with_write_checkpoint(checkpoint(1, &[("a", 1, 3, 1)]), 6));
        line(&mut pair, wire, complete(1));
        upload_oldest(&mut pair, 7);
        assert_eq!(control(&mut pair, "completed_upload", None), json!([]));
        pair.control("target_checkpoint_request_id", Arg::Text("6"));
        let retry = control(&mut pair, "completed_upload", None);
        assert!(kinds(&retry).contains(&"DidCompleteSync".to_owned()), "{wire:?}: {retry}");
        control(&mut pair, "stop", None);

        // An applied partial checkpoint clears it too.
        control(&mut pair, "start", None);
        queue_with_one_uploaded(&mut pair, 8);
        line(&mut pair, wire, with_write_checkpoint(checkpoint(3, &[("a", 1, 3, 1), ("z", 3, 0, 1)]), 8));
        line(&mut pair, wire, put("z", 2, "r2", 3));
        let blocked = line(&mut pair, wire, complete(3));
        assert!(kinds(&blocked).contains(&"CheckpointDelayedDueToLocalData".to_owned()), "{blocked}");
        line(&mut pair, wire, partial(3, 0));
        uploaded(&mut pair);
        assert_eq!(control(&mut pair, "completed_upload", None), json!([]), "{wire:?}");
        control(&mut pair, "stop", None);
    }
}

/// Point 5: a failed call keeps the iteration as it was: a line that does
/// not decode, a protocol error, and an apply that fails in its own
/// (rolled-back) transaction; the next lines go on from there, and a later
/// stop closes the stream as usual (0.5.3 had ended the iteration, so its
/// stop answered []).
#[test]
fn errors_leave_the_iteration_running() {
    for wire in WIRES {
        let mut pair = pair();
        control(&mut pair, "start", None);
        match wire {
            Wire::Json => pair.control_fails("line_text", Arg::Text("not json")),
            Wire::Bson => pair.control_fails("line_binary", Arg::Blob(b"\x05\x00\x00")),
        }
        line_fails(&mut pair, wire, json!({"checkpoint_diff": {"last_op_id": "1", "updated_buckets": [], "removed_buckets": []}}));
        line_fails(&mut pair, wire, complete(1));
        line(&mut pair, wire, checkpoint(2, &[("a", 3, 3, 2)]));
        line(&mut pair, wire, put("a", 1, "r1", 1));
        line_fails(&mut pair, wire, json!({"data": {"bucket": "a", "data": [{"op_id": "x"}]}}));
        line(&mut pair, wire, put("a", 2, "r2", 2));
        // The apply fails (an app trigger refuses the row), in its own
        // transaction, which the harness rolls back.
        for db in [&pair.ours, &pair.theirs] {
            db.execute_batch(
                "CREATE TEMP TRIGGER refuse BEFORE INSERT ON ps_data__items BEGIN SELECT RAISE(ABORT, 'refused'); END",
            )
            .unwrap();
        }
        line_fails(&mut pair, wire, complete(2));
        pair.execute("DROP TRIGGER temp.refuse");
        let applied = line(&mut pair, wire, complete(2));
        assert!(kinds(&applied).contains(&"DidCompleteSync".to_owned()), "{wire:?}: {applied}");
        let stopped = control(&mut pair, "stop", None);
        assert_eq!(kinds(&stopped), ["UpdateSyncStatus", "CloseSyncStream:false"], "{wire:?}");
    }
}

/// Point 5: a failed completed_upload and a failed start keep the
/// iteration too.
#[test]
fn a_failed_start_keeps_the_running_iteration() {
    let mut pair = pair();
    control(&mut pair, "start", None);
    line(&mut pair, Wire::Json, checkpoint(1, &[("a", 1, 3, 1)]));
    pair.control_fails("start", Arg::Text("{"));
    line(&mut pair, Wire::Json, put("a", 1, "r1", 1));
    let applied = line(&mut pair, Wire::Json, complete(1));
    assert!(kinds(&applied).contains(&"DidCompleteSync".to_owned()), "{applied}");
    control(&mut pair, "stop", None);
}

/// Point 6: every close sends the disconnected status first.
#[test]
fn every_close_sends_a_disconnected_status_first() {
    for wire in WIRES {
        // A checksum failure (full, then partial: point 10's wording).
        for last in [complete(1), partial(1, 0)] {
            let mut pair = pair();
            control(&mut pair, "start", None);
            line(&mut pair, wire, checkpoint(1, &[("a", 99, 0, 1)]));
            line(&mut pair, wire, put("a", 1, "r1", 1));
            let answer = line(&mut pair, wire, last);
            assert_eq!(kinds(&answer), ["LogLine:WARNING", "UpdateSyncStatus", "CloseSyncStream:false"], "{wire:?}");
            let text = answer[0]["LogLine"]["line"].as_str().unwrap();
            assert!(text.starts_with("Could not apply checkpoint, Checksums didn't match"), "{text}");
            assert_eq!(status_of(&answer).unwrap()["connected"], false);
        }
        // An expired token.
        let mut pair = pair();
        control(&mut pair, "start", None);
        line(&mut pair, wire, checkpoint(1, &[("a", 1, 3, 1)]));
        let answer = line(&mut pair, wire, json!({"token_expires_in": 0}));
        assert_eq!(kinds(&answer), ["FetchCredentials", "UpdateSyncStatus", "CloseSyncStream:false"], "{wire:?}");
        // A refreshed token.
        control(&mut pair, "start", None);
        line(&mut pair, wire, checkpoint(1, &[("a", 1, 3, 1)]));
        let answer = control(&mut pair, "refreshed_token", None);
        assert_eq!(kinds(&answer), ["UpdateSyncStatus", "CloseSyncStream:true"], "{wire:?}");
        // The end of the stream, and a stop.
        for (op, payload) in [("connection", Some("end")), ("stop", None)] {
            control(&mut pair, "start", None);
            line(&mut pair, wire, checkpoint(1, &[("a", 1, 3, 1)]));
            let answer = control(&mut pair, op, payload);
            assert_eq!(kinds(&answer), ["UpdateSyncStatus", "CloseSyncStream:false"], "{wire:?} {op}");
        }
        // Changed subscriptions, on update_subscriptions and on a keep-alive.
        for via_keepalive in [false, true] {
            control(&mut pair, "start", None);
            line(&mut pair, wire, checkpoint(1, &[("a", 1, 3, 1)]));
            let change = json!({"subscribe": {"stream": {"name": "s"}, "ttl": 60}}).to_string();
            assert_eq!(pair.control("subscriptions", Arg::Text(&change)), Answer::Scalar("Null".into()));
            let answer = if via_keepalive {
                line(&mut pair, wire, json!({"token_expires_in": 100}))
            } else {
                control(&mut pair, "update_subscriptions", Some("[]"))
            };
            assert_eq!(kinds(&answer), ["UpdateSyncStatus", "CloseSyncStream:true"], "{wire:?}");
            let change = json!({"unsubscribe": {"name": "s", "params": null}}).to_string();
            pair.control("subscriptions", Arg::Text(&change));
        }
    }
}

/// Point 6: which events mark the status connected since 0.5.4: a
/// keep-alive, an unknown line, a checkpoint and `connection established`
/// do; a data line does not (0.5.3 marked every line).
#[test]
fn connected_is_marked_by_some_events_only() {
    for wire in WIRES {
        for first in [
            json!({"token_expires_in": 100}),
            json!({"token_expires_in": 10}),
            json!({"something_new": {}}),
            checkpoint(1, &[("a", 1, 3, 1)]),
            put("a", 1, "r1", 1),
        ] {
            let mut pair = pair();
            control(&mut pair, "start", None);
            let answer = line(&mut pair, wire, first.clone());
            let is_data = first.get("data").is_some();
            assert_eq!(status_of(&answer).is_none(), is_data, "{wire:?} {first}: {answer}");
            if let Some(status) = status_of(&answer) {
                assert_eq!(status["connected"], true, "{status}");
            }
            let answer = control(&mut pair, "connection", Some("established"));
            assert_eq!(status_of(&answer).is_some(), is_data, "{answer}");
            control(&mut pair, "stop", None);
        }
    }
}

/// Point 7: a bucket whose count shrank below what it holds gets its
/// progress counters reset, the other buckets keep theirs.
#[test]
fn progress_is_reset_for_the_shrunk_bucket_only() {
    for wire in WIRES {
        let mut pair = pair();
        control(&mut pair, "start", None);
        line(&mut pair, wire, checkpoint(4, &[("a", 3, 3, 2), ("b", 7, 3, 2)]));
        line(&mut pair, wire, put("a", 1, "r1", 1));
        line(&mut pair, wire, put("a", 2, "r2", 2));
        line(&mut pair, wire, put("b", 3, "r3", 3));
        line(&mut pair, wire, put("b", 4, "r4", 4));
        line(&mut pair, wire, complete(4));
        // Compaction left bucket a with one op; b grew.
        line(&mut pair, wire, checkpoint(6, &[("a", 3, 3, 1), ("b", 12, 3, 3)]));
        let counters = |db: &rusqlite::Connection| {
            common::diff::rows(db, "SELECT name, count_at_last, count_since_last FROM ps_buckets ORDER BY name")
        };
        let ours = counters(&pair.ours);
        assert!(ours[0].contains("\"a\")|Integer(0)|Integer(0)"), "{ours:?}");
        assert!(ours[1].contains("\"b\")|Integer(2)|Integer(0)"), "{ours:?}");
        // Progress continues from there (compared by Pair).
        line(&mut pair, wire, put("b", 5, "r5", 5));
        line(&mut pair, wire, complete(6));
        control(&mut pair, "stop", None);
    }
}

/// Point 11: the version reports 0.5.4, as the reference does.
#[test]
fn version_reports_core_0_5_4() {
    let pair = Pair::new();
    let version = |db: &rusqlite::Connection| db.query_row("SELECT powersync_rs_version()", [], |r| r.get::<_, String>(0)).unwrap();
    let (ours, theirs) = (version(&pair.ours), version(&pair.theirs));
    assert!(ours.starts_with("0.5.4/"), "{ours}");
    assert_eq!(ours.split('/').next(), theirs.split('/').next(), "{ours} vs {theirs}");
}

/// The error of a failed call, as text, on both cores (the call in its own
/// transaction, rolled back).
fn error_texts(pair: &Pair, op: &str, payload: &str) -> (String, String) {
    let text = |db: &rusqlite::Connection| {
        db.execute_batch("BEGIN").unwrap();
        let err = db
            .query_row("SELECT powersync_control(?1, ?2)", (op, payload), |r| r.get::<_, rusqlite::types::Value>(0))
            .expect_err("the call should fail");
        db.execute_batch("ROLLBACK").unwrap();
        err.to_string()
    };
    (text(&pair.ours), text(&pair.theirs))
}

/// The `(context: ...)` part of an error text.
fn context_of(text: &str) -> &str {
    text.rfind("(context: ").map_or("", |at| &text[at..])
}

/// Point 10: sync_local's write errors name the type, id and data of the
/// row (0.5.4 writes JSON tables through the statement raw tables use).
#[test]
fn sync_local_write_errors_name_the_row() {
    let mut pair = pair();
    control(&mut pair, "start", None);
    line(&mut pair, Wire::Json, checkpoint(2, &[("a", 3, 3, 2)]));
    line(&mut pair, Wire::Json, put("a", 1, "r1", 1));
    line(&mut pair, Wire::Json, put("a", 2, "r2", 2));
    let refuse = |pair: &Pair, event: &str| {
        for db in [&pair.ours, &pair.theirs] {
            db.execute_batch(&format!(
                "CREATE TEMP TRIGGER refuse BEFORE {event} ON ps_data__items BEGIN SELECT RAISE(ABORT, 'refused'); END"
            ))
            .unwrap();
        }
    };
    refuse(&pair, "INSERT");
    let (ours, theirs) = error_texts(&pair, "line_text", &complete(2).to_string());
    assert!(context_of(&theirs).starts_with("(context: replacing into items, id = r1, data = "), "{theirs}");
    assert_eq!(context_of(&ours), context_of(&theirs), "ours: {ours}\ntheirs: {theirs}");
    pair.execute("DROP TRIGGER temp.refuse");
    line(&mut pair, Wire::Json, complete(2));
    line(&mut pair, Wire::Json, checkpoint(3, &[("a", 6, 3, 3)]));
    let remove = json!({"data": {"bucket": "a", "data": [
        {"op_id": "3", "op": "REMOVE", "object_type": "items", "object_id": "r1", "checksum": 3}]}});
    line(&mut pair, Wire::Json, remove);
    refuse(&pair, "DELETE");
    let (ours, theirs) = error_texts(&pair, "line_text", &complete(3).to_string());
    assert_eq!(context_of(&theirs), "(context: deleting from items, id = r1)", "{theirs}");
    assert_eq!(context_of(&ours), context_of(&theirs), "ours: {ours}\ntheirs: {theirs}");
}
