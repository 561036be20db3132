//! Port of the reference core's `dart/test/sync_test.dart`, each test run
//! with JSON text lines and with BSON lines: publishing checkpoints (by
//! priority, with pending local writes), sync state and times on the fake
//! clock, checkpoint request ids, clearing and resyncing, errors and
//! diagnostics (progress and raw tables: `upstream_sync_progress.rs`,
//! `upstream_sync_raw_tables.rs`). The golden sessions are in
//! `upstream_sync_goldens.rs`.
mod common;
mod upstream;

use std::time::Duration;

use rusqlite::types::{Null, Value as SqlValue};
use serde_json::{json, Value};
use upstream::clock::{advance, timestamp_micros as ts};
use upstream::sync::{bucket, checkpoint, checkpoint_complete, counted, find, priority_buckets, statuses, Session};
use upstream::{assert_fails_containing, exec, scalar, select, tx, Core};

/// A value of `ps_kv` (null when absent).
fn kv(s: &Session, key: &str) -> Value {
    select(&s.db, "SELECT value FROM ps_kv WHERE key = ?", &[&key]).first().map(|r| r["value"].clone()).unwrap_or(Value::Null)
}

fn last_requested(s: &Session) -> Value {
    kv(s, "last_requested_checkpoint_request_id")
}

fn last_applied(s: &Session) -> Value {
    kv(s, "last_applied_checkpoint_request_id")
}

fn next_request_id(s: &mut Session) -> Value {
    s.scalar("next_checkpoint_request_id", Null)
}

fn current_request_id(s: &mut Session) -> Value {
    s.scalar("current_checkpoint_request_id", Null)
}

fn target(s: &mut Session, op_id: impl Into<SqlValue>) -> Value {
    s.scalar("target_checkpoint_request_id", op_id)
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

fn row(id: &str, col: &str) -> Value {
    json!({"id": id, "col": col})
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
fn checksums_from_js_numbers(core: Core, bson: bool) {
    if !bson {
        return;
    }
    let mut s = Session::new(core, bson);
    s.start();
    s.push_checkpoint(1, vec![bucket("global[]", 3)]);
    s.line(&json!({"data": {"bucket": "a", "has_more": false, "after": null, "next_after": null,
        "data": [{"op_id": "1", "op": "PUT", "object_type": "items", "object_id": "id",
                  "checksum": 3573495687.0_f64, "data": "{}"}]}}));
}

per_core_and_encoding! {
    app_metadata_in_request;
    initial_checkpoint_request_state;
    no_checkpoint_request_in_legacy_mode;
    connection_events;
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


/// Whether `instructions` is exactly one log line of this severity whose
/// text contains `part`.
fn only_log(instructions: &Value, severity: &str, part: &str) -> bool {
    let list = instructions.as_array().unwrap();
    list.len() == 1
        && list[0]["LogLine"].as_object().is_some_and(|l| l.len() == 2)
        && list[0]["LogLine"]["severity"] == severity
        && list[0]["LogLine"]["line"].as_str().is_some_and(|l| l.contains(part))
}

fn has_log(instructions: &Value, severity: &str, part: &str) -> bool {
    instructions.as_array().unwrap().iter().any(|i| {
        i["LogLine"]["severity"] == severity && i["LogLine"]["line"].as_str().is_some_and(|l| l.contains(part))
    })
}

/// A local write while offline, a start, and the upload (ps_crud emptied).
fn offline_write_then_upload(s: &mut Session) {
    exec(&s.db, "INSERT INTO items (id, col) VALUES ('local', 'data')", &[]);
    s.start();
    exec(&s.db, "DELETE FROM ps_crud", &[]);
}

fn pending_write_checkpoint_before_upload_complete(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    offline_write_then_upload(&mut s);
    s.line(&checkpoint(1, priority_buckets(), Some("1"), vec![]));
    s.push_data("prio1", "1", "row-0", "PUT", json!({"col": "hi"}));
    let complete = s.push_checkpoint_complete(None);
    assert!(only_log(&complete, "INFO", "Will retry at completed upload"), "{complete}");
    target(&mut s, 1);
    let uploaded = s.control("completed_upload", Null);
    assert!(uploaded
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["LogLine"] == json!({"severity": "DEBUG", "line": "Applied checkpoint request id 1"})));
    assert_eq!(s.items(), vec![row("row-0", "hi")]);
}

fn pending_write_checkpoint_with_synced_data(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    offline_write_then_upload(&mut s);
    target(&mut s, 1);
    assert_eq!(s.control("completed_upload", Null), json!([]));
    assert_eq!(last_requested(&s), 1);
    s.line(&checkpoint(1, priority_buckets(), Some("1"), vec![]));
    s.push_data("prio1", "1", "row-0", "PUT", json!({"col": "hi"}));
    s.push_checkpoint_complete(None);
    assert_eq!(s.items(), vec![row("row-0", "hi")]);
}

fn pending_write_checkpoint_after_synced_data(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    offline_write_then_upload(&mut s);
    s.push_checkpoint(1, priority_buckets());
    s.push_data("prio1", "1", "row-0", "PUT", json!({"col": "hi"}));
    let complete = s.push_checkpoint_complete(None);
    assert!(only_log(&complete, "INFO", "Will retry at completed upload"), "{complete}");
    target(&mut s, 1);
    assert_eq!(s.control("completed_upload", Null), json!([]));
    s.line(&checkpoint(1, priority_buckets(), Some("1"), vec![]));
    let complete = s.push_checkpoint_complete(None);
    assert!(has_log(&complete, "DEBUG", "Validated and applied checkpoint"), "{complete}");
    assert_eq!(s.items(), vec![row("row-0", "hi")]);
}

fn pending_second_local_write(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    offline_write_then_upload(&mut s);
    s.line(&checkpoint(1, priority_buckets(), Some("1"), vec![]));
    s.push_data("prio1", "1", "row-0", "PUT", json!({"col": "hi"}));
    let complete = s.push_checkpoint_complete(None);
    assert!(only_log(&complete, "INFO", "Will retry at completed upload"), "{complete}");
    exec(&s.db, "INSERT INTO items (id, col) VALUES ('local2', 'data2')", &[]);
    target(&mut s, 1);
    assert_eq!(
        s.control("completed_upload", Null),
        json!([{"LogLine": {"severity": "WARNING", "line": "Could not apply pending checkpoint even after completed upload"}}])
    );
    assert_eq!(s.items(), vec![row("local", "data"), row("local2", "data2")]);
}

per_core_and_encoding! {
    pending_write_checkpoint_before_upload_complete;
    pending_write_checkpoint_with_synced_data;
    pending_write_checkpoint_after_synced_data;
    pending_second_local_write;
}

fn error_diff_without_checkpoint(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.start();
    let result = s.try_line(&json!({"checkpoint_diff": {"last_op_id": "1", "write_checkpoint": null,
        "updated_buckets": [], "removed_buckets": []}}));
    let message = upstream::error_message(result);
    assert!(message.contains("checkpoint_diff without previous checkpoint"), "{message}");
}

fn error_checksum_mismatch(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.start();
    let mut b = bucket("a", 3);
    b["checksum"] = json!(1234);
    s.push_checkpoint(1, vec![b]);
    s.line(&upstream::sync::data_line("a", "1", "1", "PUT", json!({"col": "hi"}), 4321, "items"));
    assert_eq!(select(&s.db, "SELECT * FROM ps_buckets", &[]).len(), 1);
    let complete = s.push_checkpoint_complete(None);
    let list = complete.as_array().unwrap();
    assert_eq!(list.len(), 2, "{complete}");
    assert_eq!(list[0]["LogLine"]["severity"], "WARNING");
    let line = list[0]["LogLine"]["line"].as_str().unwrap();
    assert!(
        line.contains("Checksums didn't match, failed for: a (expected 0x000004d2, got 0x000010e1 = 0x000010e1 (op) + 0x00000000 (add))"),
        "{line}"
    );
    assert_eq!(list[1], json!({"CloseSyncStream": {"hide_disconnect": false}}));
    assert!(select(&s.db, "SELECT * FROM ps_buckets", &[]).is_empty(), "the mismatched bucket is deleted");
}

/// A file database with the sync set-up and a second connection to it
/// (the Dart "recoverable" group).
fn on_file(core: Core, bson: bool, dir: &common::driver::TempDir) -> (Session, rusqlite::Connection) {
    upstream::clock::reset();
    let path = dir.join("test.db");
    let s = Session::with_db(core.open_path(&path, rusqlite::OpenFlags::default()), bson);
    let secondary = core.open_path(&path, rusqlite::OpenFlags::default());
    (s, secondary)
}

fn one_bucket_checkpoint() -> Value {
    checkpoint(1, vec![bucket("a", 3)], None, vec![])
}

fn recoverable_starting_checkpoints(core: Core, bson: bool) {
    let dir = common::driver::TempDir::new("upstream-recoverable");
    let (mut s, secondary) = on_file(core, bson, &dir);
    exec(&s.db, "INSERT INTO ps_buckets (name) VALUES (?)", &[&"unrelated"]);
    s.start();
    exec(&secondary, "BEGIN EXCLUSIVE", &[]);
    let failed = s.try_line(&one_bucket_checkpoint());
    match core {
        Core::Reference => upstream::assert_sqlite_error(
            failed,
            5,
            "powersync_control: statement DELETE FROM ps_buckets WHERE name = ?1 RETURNING id: internal SQLite call returned BUSY: database is locked",
        ),
        // The statement the Dart test names is the reference's own; oplite
        // meets the lock at its first statement. Code and wording as above.
        Core::Oplite => assert_fails_containing(failed, 5, ": internal SQLite call returned BUSY: database is locked"),
    }
    exec(&secondary, "COMMIT", &[]);
    assert_eq!(select(&s.db, "SELECT name FROM ps_buckets", &[]), vec![json!({"name": "unrelated"})]);
    s.line(&one_bucket_checkpoint());
    assert!(select(&s.db, "SELECT name FROM ps_buckets", &[]).is_empty());
}

fn recoverable_saving_oplog_data(core: Core, bson: bool) {
    let dir = common::driver::TempDir::new("upstream-recoverable");
    let (mut s, secondary) = on_file(core, bson, &dir);
    s.start();
    s.line(&one_bucket_checkpoint());
    exec(&secondary, "BEGIN EXCLUSIVE", &[]);
    let data = upstream::sync::data_line("a", "1", "1", "PUT", json!({"col": "hi"}), 0, "items");
    assert_fails_containing(s.try_line(&data), 5, "internal SQLite call returned BUSY");
    exec(&secondary, "COMMIT", &[]);
    let retried = s.line(&data);
    let list = retried.as_array().unwrap();
    assert_eq!(list.len(), 1, "{retried}");
    assert_eq!(
        list[0]["UpdateSyncStatus"]["status"]["downloading"],
        json!({"buckets": {"prio_3": {"priority": 3, "at_last": 0, "since_last": 1, "target_count": 1}}})
    );
}

fn recoverable_applying_local_changes(core: Core, bson: bool) {
    let dir = common::driver::TempDir::new("upstream-recoverable");
    let (mut s, secondary) = on_file(core, bson, &dir);
    s.start();
    s.line(&one_bucket_checkpoint());
    s.push_data("a", "1", "1", "PUT", json!({"col": "hi"}));
    exec(&secondary, "BEGIN EXCLUSIVE", &[]);
    let (op, payload) = s.encode(&checkpoint_complete(None, "1"));
    assert_fails_containing(s.try_control_raw(op, payload), 5, "internal SQLite call returned BUSY");
    exec(&secondary, "COMMIT", &[]);
    s.push_checkpoint_complete(None);
    assert_eq!(s.items().len(), 1);
}

fn sets_in_sync_operation(core: Core, bson: bool) {
    use std::sync::{Arc, Mutex};
    let mut s = Session::new(core, bson);
    assert_eq!(select(&s.db, "SELECT powersync_in_sync_operation() AS r", &[]), vec![json!({"r": 0})]);
    let seen = Arc::new(Mutex::new(Vec::<bool>::new()));
    let record = seen.clone();
    s.db.create_scalar_function("test_in_sync", 1, rusqlite::functions::FunctionFlags::SQLITE_UTF8, move |ctx| {
        record.lock().unwrap().push(ctx.get::<i64>(0)? != 0);
        Ok(rusqlite::types::Null)
    })
    .unwrap();
    exec(
        &s.db,
        "CREATE TRIGGER foo AFTER INSERT ON ps_data__items BEGIN SELECT test_in_sync(powersync_in_sync_operation()); END",
        &[],
    );
    s.start();
    s.push_checkpoint(1, vec![bucket("a", 3)]);
    s.push_data("a", "1", "1", "PUT", json!({"col": "foo"}));
    s.push_checkpoint_complete(None);
    assert_eq!(*seen.lock().unwrap(), vec![true]);
    assert_eq!(select(&s.db, "SELECT powersync_in_sync_operation() AS r", &[]), vec![json!({"r": 0})]);
}

per_core_and_encoding! {
    error_diff_without_checkpoint;
    error_checksum_mismatch;
    recoverable_starting_checkpoints;
    recoverable_saving_oplog_data;
    recoverable_applying_local_changes;
    sets_in_sync_operation;
}


/// How many of this process's file descriptors are open on `path` or its
/// journal files (the Dart suite counts a tracking VFS's open files).
fn open_files(path: &std::path::Path) -> usize {
    let name = path.to_string_lossy().into_owned();
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy().starts_with(&name))
        .count()
}

fn close_while_iterating(core: Core, bson: bool) {
    let dir = common::driver::TempDir::new("upstream-close");
    let path = dir.join("test.db");
    upstream::clock::reset();
    let db = core.open_path(&path, rusqlite::OpenFlags::default());
    upstream::init(&db);
    let mut s = Session { db, bson, last_status: None };
    s.start();
    assert!(open_files(&path) > 0);
    s.db.close().map_err(|(_, e)| e).expect("closing with an iteration active");
    assert_eq!(open_files(&path), 0);
}

fn offline_status_then_close(core: Core, _bson: bool) {
    let dir = common::driver::TempDir::new("upstream-close");
    let path = dir.join("test.db");
    upstream::clock::reset();
    let db = core.open_path(&path, rusqlite::OpenFlags::default());
    upstream::init(&db);
    assert!(open_files(&path) > 0);
    db.close().map_err(|(_, e)| e).unwrap();
    assert_eq!(open_files(&path), 0);

    let db = core.open_path(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY);
    upstream::init(&db);
    exec(&db, "SELECT powersync_offline_sync_status()", &[]);
    assert!(open_files(&path) > 0);
    db.close().map_err(|(_, e)| e).unwrap();
    assert_eq!(open_files(&path), 0);
}

fn tracks_download_size(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.start();
    s.push_checkpoint(1, vec![counted("a", 2, 3)]);
    let size = |s: &Session| scalar(&s.db, "SELECT downloaded_size FROM ps_buckets", &[]);
    s.push_data("a", "1", "row-0", "PUT", json!({"col": "hi"}));
    assert_eq!(size(&s), if bson { 185 } else { 186 });
    s.push_data("a", "1", "row-1", "PUT", json!({"col": "hi again"}));
    assert_eq!(size(&s), if bson { 376 } else { 378 });
}

fn schema_change(table: &str, column: &str, value_type: &str) -> Value {
    json!({"HandleDiagnostics": {"SchemaChange": {"table": table, "column": column, "value_type": value_type}}})
}

#[allow(clippy::approx_constant)] // 3.14 is the Dart test's input, not pi
fn diagnostics_infer_schema(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.control_json("start", &json!({"diagnostics": {}}));
    s.push_checkpoint(1, priority_buckets());
    let first = s.push_data("prio1", "1", "row-0", "PUT", json!({"text": "text", "int": 3, "double": 3.14, "null": null}));
    for change in [
        schema_change("items", "text", "String"),
        schema_change("items", "int", "Integer"),
        schema_change("items", "double", "Real"),
    ] {
        assert!(first.as_array().unwrap().contains(&change), "{change} missing in {first}");
    }
    let second = s.push_data("prio1", "2", "row-1", "PUT", json!({"text": null, "int": 3.123, "double": 1.23}));
    assert_eq!(second.as_array().unwrap()[2..], [schema_change("items", "int", "Real")], "{second}");
}

fn bucket_progress(name: &str, since_last: i64) -> Value {
    json!({"name": name, "progress": {"priority": 3, "at_last": 0, "since_last": since_last, "target_count": 1}})
}

fn diagnostics_bucket_progress(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    s.control_json("start", &json!({"diagnostics": {}}));
    let instructions = s.push_checkpoint(10, vec![bucket("a", 3), bucket("b", 3)]);
    assert_eq!(
        instructions[1],
        json!({"HandleDiagnostics": {"BucketStateChange": {"incremental": false,
            "changes": [bucket_progress("a", 0), bucket_progress("b", 0)]}}})
    );
    let instructions = s.push_data("a", "1", "a", "PUT", json!({"foo": "bar"}));
    assert_eq!(
        instructions[1],
        json!({"HandleDiagnostics": {"BucketStateChange": {"incremental": true, "changes": [bucket_progress("a", 1)]}}})
    );
}

per_core_and_encoding! {
    close_while_iterating;
    offline_status_then_close;
    tracks_download_size;
    diagnostics_infer_schema;
    diagnostics_bucket_progress;
}
