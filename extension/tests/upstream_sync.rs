//! Port of the reference core's `dart/test/sync_test.dart`, each test run
//! with JSON text lines and with BSON lines: publishing checkpoints (by
//! priority, with pending local writes), sync state and times on the fake
//! clock, checkpoint request ids, clearing and resyncing (pending write
//! checkpoints, errors, recovery, open files and diagnostics:
//! `upstream_sync_recovery.rs`; progress and raw tables:
//! `upstream_sync_progress.rs`, `upstream_sync_raw_tables.rs`). The golden
//! sessions are in `upstream_sync_goldens.rs`.
mod common;
mod upstream;

use std::time::Duration;

use rusqlite::types::{Null, Value as SqlValue};
use serde_json::{json, Value};
use upstream::clock::{advance, timestamp_micros as ts};
use upstream::sync::{
    bucket, checkpoint, checkpoint_complete, find, kv, last_requested, priority_buckets, row, statuses, target, Session,
};
use upstream::{assert_fails_containing, exec, scalar, select, tx, Core};

fn last_applied(s: &Session) -> Value {
    kv(s, "last_applied_checkpoint_request_id")
}

fn next_request_id(s: &mut Session) -> Value {
    s.scalar("next_checkpoint_request_id", Null)
}

fn current_request_id(s: &mut Session) -> Value {
    s.scalar("current_checkpoint_request_id", Null)
}

fn seed(s: &mut Session, id: impl Into<SqlValue>) -> Value {
    s.scalar("seed_checkpoint_request_id", id)
}

fn stream_checkpoint_request(instructions: &Value) -> Value {
    find(instructions, "EstablishSyncStream").expect("a stream is opened").get("checkpoint_request").cloned().unwrap_or(Value::Null)
}

fn requests_mode() -> String {
    json!({"checkpoint_mode": "requests"}).to_string()
}

fn expected_request(id: &str) -> Value {
    json!({"client_id": "test-test-test-test", "checkpoint_request_id": id})
}

/// Whether any `UpdateSyncStatus` in `instructions` has this status key.
fn status_has(instructions: &Value, key: &str) -> bool {
    instructions.as_array().unwrap().iter().any(|i| i["UpdateSyncStatus"]["status"].get(key).is_some())
}

fn offline_status(s: &Session) -> Value {
    serde_json::from_str(scalar(&s.db, "SELECT powersync_offline_sync_status()", &[]).as_str().unwrap()).unwrap()
}

fn requested_buckets(instructions: &Value) -> Value {
    find(instructions, "EstablishSyncStream").expect("a stream is opened")["request"]["buckets"].clone()
}

fn app_metadata_in_request(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    let start = s.control_raw("start", json!({"app_metadata": {"key1": "value1", "key2": "value2"}}).to_string());
    assert_eq!(
        find(&start, "EstablishSyncStream").unwrap()["request"]["app_metadata"],
        json!({"key1": "value1", "key2": "value2"})
    );
}

fn initial_checkpoint_request_state(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    let initial = s.control_raw("start", requests_mode());
    assert_eq!(stream_checkpoint_request(&initial), expected_request("1"));
    target(&mut s, 4);
    assert_eq!(stream_checkpoint_request(&s.control_raw("start", requests_mode())), expected_request("4"));
    assert_eq!(seed(&mut s, 7), 7);
    assert_eq!(stream_checkpoint_request(&s.control_raw("start", requests_mode())), expected_request("7"));
    target(&mut s, i64::MAX);
    assert_eq!(stream_checkpoint_request(&s.control_raw("start", requests_mode())), expected_request("7"));
}

fn no_checkpoint_request_in_legacy_mode(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    let start = s.control_raw("start", Null);
    assert!(find(&start, "EstablishSyncStream").unwrap().get("checkpoint_request").is_none());
}

fn connection_events(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.start();
    let established = s.control("connection", "established".to_string());
    assert_eq!(established.as_array().unwrap().len(), 1);
    assert_eq!(established[0]["UpdateSyncStatus"]["status"]["connected"], true);
    let end = s.control("connection", "end".to_string());
    assert_eq!(end.as_array().unwrap().len(), 2, "{end}");
    assert_eq!(end[0]["UpdateSyncStatus"].as_object().unwrap().len(), 1);
    assert_eq!(end[0]["UpdateSyncStatus"]["status"]["connected"], false);
    assert_eq!(end[1], json!({"CloseSyncStream": {"hide_disconnect": false}}));
}

/// Core PR #218 (0.5.4): a keepalive line marks the stream connected.
fn connected_on_keepalive(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.start();
    let instructions = s.line(&json!({"token_expires_in": 60}));
    let list = instructions.as_array().unwrap();
    assert_eq!(list.len(), 1, "{instructions}");
    assert_eq!(list[0]["UpdateSyncStatus"]["status"]["connected"], true, "{instructions}");
}

fn no_publish_before_checkpoint(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.start();
    s.push_checkpoint(1, priority_buckets());
    assert!(s.items().is_empty());
    exec(&s.db, "INSERT INTO items (id, col) VALUES ('local', 'data')", &[]);
    s.push_data("prio1", "1", "row-0", "PUT", json!({"col": "hi"}));
    s.push_checkpoint_complete(None);
    assert_eq!(s.items(), vec![row("local", "data")]);
}

fn publishes_prio0_with_local_data(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.start();
    s.push_checkpoint(1, priority_buckets());
    assert!(s.items().is_empty());
    exec(&s.db, "INSERT INTO items (id, col) VALUES ('local', 'data')", &[]);
    s.push_data("prio0", "1", "row-0", "PUT", json!({"col": "hi"}));
    s.push_checkpoint_complete(Some(0));
    assert_eq!(s.items(), vec![row("local", "data"), row("row-0", "hi")]);
}

fn no_publish_with_pending_local_data(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.start();
    s.push_checkpoint(1, priority_buckets());
    exec(&s.db, "INSERT INTO items (id, col) VALUES ('local', 'data')", &[]);
    assert!(!s.items().is_empty());
    s.push_checkpoint(1, priority_buckets());
    s.push_data("prio1", "1", "row-0", "PUT", json!({"col": "hi"}));
    s.push_checkpoint_complete(None);
    assert_eq!(s.items(), vec![row("local", "data")]);
}

fn partial_checkpoints_by_priority(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.start();
    s.push_checkpoint(1, priority_buckets());
    for i in 0..4 {
        s.push_data(&format!("prio{i}"), "1", &format!("row-{i}"), "PUT", json!({"col": i.to_string()}));
    }
    assert!(s.items().is_empty());
    for i in 0..4i64 {
        s.push_checkpoint_complete(Some(i));
        let want: Vec<Value> = (0..=i).map(|j| row(&format!("row-{j}"), &j.to_string())).collect();
        assert_eq!(s.items(), want);
        assert!(!select(&s.db, "SELECT 1 FROM ps_sync_state WHERE priority = ?", &[&i]).is_empty());
        assert!(select(&s.db, "SELECT 1 FROM ps_sync_state WHERE priority < ?", &[&i]).is_empty());
    }
}

fn sync_multiple_times(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.start();
    for i in 0..10 {
        s.push_checkpoint(1, priority_buckets());
        for priority in [Some(1), Some(2), Some(3), None] {
            s.push_checkpoint_complete(priority);
            assert_eq!(
                select(
                    &s.db,
                    "SELECT datetime(last_synced_at / 1000000, 'unixepoch') AS last_synced_at FROM ps_sync_state WHERE priority = ?",
                    &[&priority.unwrap_or(2147483647)],
                ),
                vec![json!({"last_synced_at": format!("2025-03-01 {}:00:00", 10 + i)})]
            );
        }
        advance(Duration::from_secs(3600));
    }
}

fn remembers_sync_state(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.start();
    s.line(&checkpoint(1, priority_buckets(), Some("1"), vec![]));
    let complete = s.push_checkpoint_complete(None);
    assert_eq!(find(&complete, "DidCompleteSync"), Some(&json!({"applied_checkpoint_request_id": "1"})));

    advance(Duration::from_secs(600));
    s.push_checkpoint(1, priority_buckets());
    s.push_checkpoint_complete(Some(2));
    s.control("stop", Null);

    let start = s.start();
    assert!(!status_has(&start, "internal_last_applied_checkpoint_request_id"));
    let priorities = json!([
        {"priority": 2, "last_synced_at": ts(0), "has_synced": true},
        {"priority": 2147483647, "last_synced_at": ts(-600), "has_synced": true},
    ]);
    assert!(statuses(&start).iter().any(|st| st["priority_status"] == priorities), "{start}");
    assert_eq!(
        offline_status(&s),
        json!({"connected": false, "connecting": false, "priority_status": priorities, "downloading": null, "streams": []})
    );
}

fn allocates_request_ids(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.start();
    assert_eq!(next_request_id(&mut s), 2);
    assert_eq!(last_requested(&s), 2);
    assert_eq!(next_request_id(&mut s), 3);
    assert_eq!(last_requested(&s), 3);
}

fn current_request_id_without_increment(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    assert_eq!(current_request_id(&mut s), Value::Null);
    s.control_raw("start", Null);
    assert_eq!(seed(&mut s, 1), 1);
    assert_eq!(current_request_id(&mut s), 1);
    assert_eq!(current_request_id(&mut s), 1);
    assert_eq!(next_request_id(&mut s), 2);
    assert_eq!(current_request_id(&mut s), 2);
    assert_eq!(last_requested(&s), 2);

    s.line(&checkpoint(1, priority_buckets(), Some("2"), vec![]));
    s.push_checkpoint_complete(None);
    assert_eq!(last_applied(&s), 2);
    assert_eq!(current_request_id(&mut s), 2);

    exec(&s.db, "INSERT INTO items (id, col) VALUES ('local', 'data')", &[]);
    assert_eq!(last_applied(&s), Value::Null);
    assert_eq!(current_request_id(&mut s), 2);
    assert_eq!(next_request_id(&mut s), 3);
    assert_eq!(current_request_id(&mut s), 3);
}

fn seeds_request_ids_from_service(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    let start = s.control_raw("start", requests_mode());
    assert_eq!(stream_checkpoint_request(&start), expected_request("1"));
    assert_eq!(seed(&mut s, 41), 41);
    assert_eq!(next_request_id(&mut s), 42);
    assert_eq!(last_requested(&s), 42);
    let restart = s.control_raw("start", requests_mode());
    assert_eq!(stream_checkpoint_request(&restart), expected_request("42"));
    assert_eq!(seed(&mut s, 100), 100);
    assert_eq!(next_request_id(&mut s), 101);
    assert_eq!(last_requested(&s), 101);
}

fn stores_seeded_ids_verbatim(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.control_raw("start", Null);
    assert_eq!(seed(&mut s, 41), 41);
    assert_eq!(last_requested(&s), 41);
    assert_eq!(seed(&mut s, 5), 5);
    assert_eq!(last_requested(&s), 5);
    assert_eq!(next_request_id(&mut s), 6);
}

fn rejects_absent_seed(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.control_raw("start", Null);
    assert_fails_containing(
        s.try_control_raw("seed_checkpoint_request_id", Null),
        3091,
        "checkpoint request id must be an integer or integer string",
    );
    assert_eq!(last_requested(&s), Value::Null);
}

fn rejects_zero_seed(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.control_raw("start", Null);
    assert_fails_containing(s.try_control_raw("seed_checkpoint_request_id", 0), 3091, "checkpoint request id must be a positive integer");
    assert_eq!(last_requested(&s), Value::Null);
}

fn accepts_text_seed(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.control_raw("start", Null);
    assert_eq!(seed(&mut s, "41".to_string()), 41);
    assert_eq!(last_requested(&s), 41);
    assert_eq!(next_request_id(&mut s), 42);
}

fn seeding_needs_iteration(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    assert_fails_containing(s.try_scalar("seed_checkpoint_request_id", 1), 21, "No iteration is active");
    assert_eq!(last_requested(&s), Value::Null);
}

fn allocating_needs_seed(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.control_raw("start", Null);
    assert_fails_containing(s.try_control_raw("next_checkpoint_request_id", Null), 21, "Checkpoint request state has not been seeded");
    assert_eq!(target(&mut s, Null), Value::Null);
}

fn target_without_iteration(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    assert_eq!(target(&mut s, Null), Value::Null);
    assert_eq!(target(&mut s, 1), Value::Null);
    assert_eq!(last_requested(&s), Value::Null);
    assert_eq!(target(&mut s, Null), 1);
    assert_eq!(target(&mut s, 2), 1);
    assert_eq!(last_requested(&s), Value::Null);
    assert_eq!(target(&mut s, Null), 2);
}

fn target_accepts_text(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    assert_eq!(target(&mut s, "1".to_string()), Value::Null);
    assert_eq!(last_requested(&s), Value::Null);
    assert_eq!(target(&mut s, Null), 1);
}

fn target_rejects_negative(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    assert_fails_containing(
        s.try_control_raw("target_checkpoint_request_id", -1),
        3091,
        "target checkpoint request id must be a non-negative integer",
    );
}

fn target_leaves_request_id(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.control_raw("start", Null);
    assert_eq!(seed(&mut s, 10), 10);
    assert_eq!(last_requested(&s), 10);
    assert_eq!(target(&mut s, 7), Value::Null);
    assert_eq!(target(&mut s, Null), 7);
    assert_eq!(last_requested(&s), 10);
}

fn target_ops_not_request_ids(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    assert_eq!(target(&mut s, 0), Value::Null);
    assert_eq!(last_requested(&s), Value::Null);
    assert_eq!(target(&mut s, Null), Value::Null);
    assert_eq!(target(&mut s, 1), Value::Null);
    assert_eq!(last_requested(&s), Value::Null);
    assert_eq!(target(&mut s, Null), 1);
    assert_eq!(target(&mut s, 0), 1);
    assert_eq!(target(&mut s, Null), Value::Null);
    assert_eq!(target(&mut s, i64::MAX), Value::Null);
    assert_eq!(last_requested(&s), Value::Null);
    assert_eq!(target(&mut s, Null), i64::MAX);
}

fn no_placeholder_request_id(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    exec(&s.db, "INSERT INTO items (id, col) VALUES ('local', 'data')", &[]);
    s.control_raw("start", Null);
    assert_eq!(last_requested(&s), Value::Null);
}

fn no_applied_id_for_partial(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.start();
    s.line(&checkpoint(1, priority_buckets(), Some("1"), vec![]));
    let instructions = s.push_checkpoint_complete(Some(2));
    assert!(find(&instructions, "DidCompleteSync").is_none_or(|d| d.get("applied_checkpoint_request_id").is_none()));
    assert!(!status_has(&instructions, "internal_last_applied_checkpoint_request_id"));
    assert_eq!(last_applied(&s), Value::Null);
    assert!(offline_status(&s).get("last_applied_checkpoint_request_id").is_none());
}

fn applied_id_for_full(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.start();
    s.line(&checkpoint(1, priority_buckets(), Some("1"), vec![]));
    let applied = s.push_checkpoint_complete(None);
    assert_eq!(find(&applied, "DidCompleteSync"), Some(&json!({"applied_checkpoint_request_id": "1"})));
    assert!(applied
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["LogLine"] == json!({"severity": "DEBUG", "line": "Applied checkpoint request id 1"})));
    assert!(statuses(&applied).iter().any(|st| st["internal_last_applied_checkpoint_request_id"] == "1"));
    assert_eq!(last_applied(&s), 1);

    s.push_checkpoint(1, priority_buckets());
    let instructions = s.push_checkpoint_complete(None);
    assert_eq!(find(&instructions, "DidCompleteSync"), Some(&json!({})));
    assert!(!status_has(&instructions, "internal_last_applied_checkpoint_request_id"));
    assert!(offline_status(&s).get("last_applied_checkpoint_request_id").is_none());
    assert!(select(&s.db, "SELECT * FROM ps_buckets WHERE name = '$local'", &[]).is_empty());
}

fn disconnect_clears_applied_id(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.start();
    s.line(&checkpoint(1, priority_buckets(), Some("1"), vec![]));
    s.push_checkpoint_complete(None);
    let stop = s.control("stop", Null);
    assert!(statuses(&stop)
        .iter()
        .any(|st| st["connected"] == false && st.get("internal_last_applied_checkpoint_request_id").is_none()));
}

fn local_writes_clear_high_water_marks(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.start();
    s.line(&checkpoint(1, priority_buckets(), Some("5"), vec![]));
    s.push_checkpoint_complete(None);
    assert_eq!(last_applied(&s), 5);
    exec(&s.db, "INSERT INTO items (id, col) VALUES ('local', 'data')", &[]);
    assert_eq!(last_applied(&s), Value::Null);
    assert_eq!(kv(&s, "last_seen_checkpoint_request_id"), Value::Null);
    assert_eq!(target(&mut s, Null), i64::MAX);
}

fn clearing_clears_sync_status(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.start();
    s.push_checkpoint(1, priority_buckets());
    s.push_checkpoint_complete(None);
    assert_eq!(select(&s.db, "SELECT priority FROM ps_sync_state", &[]), vec![json!({"priority": 2147483647})]);
    tx(&s.db, "SELECT powersync_clear(0)", &[]);
    assert!(select(&s.db, "SELECT * FROM ps_sync_state", &[]).is_empty());
}

/// One bucket `a` with row `row-0` synced and published.
fn synced_row(s: &mut Session) {
    s.start();
    s.push_checkpoint(1, vec![bucket("a", 3)]);
    s.push_data("a", "1", "row-0", "PUT", json!({"col": "hi"}));
    s.push_checkpoint_complete(None);
}

fn soft_clear(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    synced_row(&mut s);
    exec(&s.db, "INSERT INTO items (id, col) VALUES (uuid(), ?)", &[&"local item"]);
    assert_eq!(s.items().len(), 2);
    s.control("stop", Null);
    tx(&s.db, "SELECT powersync_clear(2)", &[]);
    upstream::replace_schema(&s.db, &upstream::test_schema());
    assert!(s.items().is_empty());
    assert!(select(&s.db, "SELECT * FROM ps_buckets WHERE name = '$local'", &[]).is_empty());
    assert_eq!(requested_buckets(&s.start()), json!([{"name": "a", "after": "1"}]));
    s.push_checkpoint(1, vec![bucket("a", 3)]);
    s.push_checkpoint_complete(None);
    assert_eq!(s.items().len(), 1);
}

fn resync_forbidden_during_sync(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.start();
    assert_fails_containing(
        upstream::execute_in_tx(&s.db, "SELECT powersync_trigger_resync(1)", &[]),
        3091,
        "Cannot clear or trigger resync while a sync iteration is active.",
    );
}

fn resync_reapplies_data(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    synced_row(&mut s);
    s.control("stop", Null);
    exec(&s.db, "DELETE FROM ps_data__items", &[]);
    tx(&s.db, "SELECT powersync_trigger_resync(0)", &[]);
    assert_eq!(requested_buckets(&s.start()), json!([{"name": "a", "after": "1"}]));
    s.push_checkpoint(1, vec![bucket("a", 3)]);
    s.push_checkpoint_complete(None);
    assert_eq!(s.items(), vec![row("row-0", "hi")]);
}

fn resync_clears_has_synced(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    synced_row(&mut s);
    s.control("stop", Null);
    tx(&s.db, "SELECT powersync_trigger_resync(1)", &[]);
    assert_eq!(offline_status(&s)["priority_status"], json!([]));
}

fn persists_download_progress(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    let progress = |s: &Session| {
        select(&s.db, "SELECT count_at_last, count_since_last FROM ps_buckets WHERE name = ?", &[&"bkt"])
    };
    s.start();
    let mut b = bucket("bkt", 3);
    b["count"] = json!(2);
    s.push_checkpoint(1, vec![b]);
    s.push_checkpoint_complete(None);
    s.push_data("bkt", "1", "row-0", "PUT", json!({"col": "hi"}));
    assert_eq!(progress(&s), vec![json!({"count_at_last": 0, "count_since_last": 1})]);
    s.push_data("bkt", "1", "row-1", "PUT", json!({"col": "hi again"}));
    assert_eq!(progress(&s), vec![json!({"count_at_last": 0, "count_since_last": 2})]);
    s.line(&checkpoint_complete(None, "2"));
    assert_eq!(progress(&s), vec![json!({"count_at_last": 2, "count_since_last": 0})]);
}

fn deletes_old_buckets(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    for name in ["one", "two", "three"] {
        exec(&s.db, "INSERT INTO ps_buckets (name) VALUES (?)", &[&name]);
    }
    assert_eq!(requested_buckets(&s.start()).as_array().unwrap().len(), 3);
    s.line(&json!({"checkpoint": {"last_op_id": "1", "write_checkpoint": null,
        "buckets": [{"bucket": "one", "checksum": 0, "priority": 3, "count": 1}]}}));
    assert_eq!(select(&s.db, "SELECT name FROM ps_buckets ORDER BY id", &[]), vec![json!({"name": "one"})]);
}

/// BSON only in the Dart suite: a checksum sent as a double.
/// 3573495687 (above i32::MAX) and -721471609, the same 32 bits as an i32.
const BIG_CHECKSUM: i64 = 3_573_495_687;
const BIG_CHECKSUM_AS_I32: i64 = BIG_CHECKSUM - (1 << 32);

/// What a checkpoint leaves behind: the `checkpoint_complete` answer, the
/// bucket's stored checksums and the op's stored hash.
struct StoredChecksums {
    complete: Value,
    bucket: Vec<Value>,
    oplog: Vec<Value>,
    items: Vec<Value>,
}

/// One op into bucket `a` with `op_checksum`, under a checkpoint whose
/// bucket checksum is `bucket_checksum`, then `checkpoint_complete`.
fn checkpoint_with_checksums(core: Core, bson: bool, bucket_checksum: Value, op_checksum: Value) -> StoredChecksums {
    let mut s = Session::new(core, bson);
    s.start();
    let mut a = bucket("a", 3);
    a["checksum"] = bucket_checksum;
    s.push_checkpoint(1, vec![a]);
    s.line(&json!({"data": {"bucket": "a", "has_more": false, "after": null, "next_after": null,
        "data": [{"op_id": "1", "op": "PUT", "object_type": "items", "object_id": "row-0",
                  "checksum": op_checksum, "data": json!({"col": "hi"}).to_string()}]}}));
    let complete = s.push_checkpoint_complete(None);
    StoredChecksums {
        complete,
        bucket: select(&s.db, "SELECT add_checksum, op_checksum, last_applied_op FROM ps_buckets WHERE name = 'a'", &[]),
        oplog: select(&s.db, "SELECT op_id, hash FROM ps_oplog", &[]),
        items: s.items(),
    }
}

/// The Dart test "can parse checksums from JS numbers": JavaScript has
/// only doubles, so a web client's BSON carries checksums as floats (and
/// a JSON line may write them as `3573495687.0`). Each encoding sends the
/// op's and the checkpoint's checksum as a whole float (above i32::MAX or
/// as the negative i32 of the same bits) and completes the checkpoint:
/// the checksums must match (no mismatch, the row applied) and the stored
/// checksum is the op's u32 value. Oplite's stored rows must equal the
/// reference core's for the same lines.
fn checksums_from_js_numbers(core: Core, bson: bool) {
    let cases = [
        (json!(BIG_CHECKSUM), json!(BIG_CHECKSUM as f64)),
        (json!(BIG_CHECKSUM), json!(BIG_CHECKSUM_AS_I32 as f64)),
        (json!(BIG_CHECKSUM as f64), json!(BIG_CHECKSUM_AS_I32)),
        (json!(BIG_CHECKSUM_AS_I32 as f64), json!(BIG_CHECKSUM as f64)),
    ];
    for (bucket_checksum, op_checksum) in cases {
        let case = format!("bucket checksum {bucket_checksum}, op checksum {op_checksum}");
        let got = checkpoint_with_checksums(core, bson, bucket_checksum.clone(), op_checksum.clone());
        assert!(find(&got.complete, "CloseSyncStream").is_none(), "{case}: {}", got.complete);
        assert!(
            !got.complete.to_string().contains("Checksums didn't match"),
            "{case}: {}",
            got.complete
        );
        assert_eq!(got.items, vec![row("row-0", "hi")], "{case}: {}", got.complete);
        assert_eq!(got.bucket.len(), 1, "{case}");
        let stored = &got.bucket[0];
        assert_eq!(stored["last_applied_op"], 1, "{case}: {stored}");
        assert_eq!(stored["add_checksum"].as_i64().map(|c| c & 0xFFFF_FFFF), Some(0), "{case}: {stored}");
        assert_eq!(stored["op_checksum"].as_i64().map(|c| c & 0xFFFF_FFFF), Some(BIG_CHECKSUM), "{case}: {stored}");
        assert_eq!(got.oplog.len(), 1, "{case}");
        assert_eq!(got.oplog[0]["hash"].as_i64().map(|c| c & 0xFFFF_FFFF), Some(BIG_CHECKSUM), "{case}: {:?}", got.oplog);
        if core == Core::Oplite {
            let reference = checkpoint_with_checksums(Core::Reference, bson, bucket_checksum, op_checksum);
            assert_eq!(got.bucket, reference.bucket, "{case}: ps_buckets against the reference");
            assert_eq!(got.oplog, reference.oplog, "{case}: ps_oplog against the reference");
        }
    }
}

per_core_and_encoding! {
    app_metadata_in_request;
    initial_checkpoint_request_state;
    no_checkpoint_request_in_legacy_mode;
    connection_events;
    connected_on_keepalive;
    no_publish_before_checkpoint;
    publishes_prio0_with_local_data;
    no_publish_with_pending_local_data;
    partial_checkpoints_by_priority;
    sync_multiple_times;
    remembers_sync_state;
    allocates_request_ids;
    current_request_id_without_increment;
    seeds_request_ids_from_service;
    stores_seeded_ids_verbatim;
    rejects_absent_seed;
    rejects_zero_seed;
    accepts_text_seed;
    seeding_needs_iteration;
    allocating_needs_seed;
    target_without_iteration;
    target_accepts_text;
    target_rejects_negative;
    target_leaves_request_id;
    target_ops_not_request_ids;
    no_placeholder_request_id;
    no_applied_id_for_partial;
    applied_id_for_full;
    disconnect_clears_applied_id;
    local_writes_clear_high_water_marks;
    clearing_clears_sync_status;
    soft_clear;
    resync_forbidden_during_sync;
    resync_reapplies_data;
    resync_clears_has_synced;
    persists_download_progress;
    deletes_old_buckets;
    checksums_from_js_numbers;
}
