//! Port of the reference core's `dart/test/sync_stream_test.dart`: default
//! streams created and deleted from checkpoints, explicit subscriptions and
//! their TTLs on the fake clock, errors reported per stream, subscription
//! changes that need a reconnect, and persisted stream state.
mod common;
mod upstream;

use std::time::Duration;

use rusqlite::types::Null;
use serde_json::{json, Value};
use upstream::clock::{advance, timestamp_micros as ts};
use upstream::sync::{bucket, bucket_with_subscriptions, checkpoint, checkpoint_complete, find, logs, stream, Session};
use upstream::{exec, scalar, select, tx, Core};

const HOUR: i64 = 3600;

fn session(core: Core) -> Session {
    Session::new(core, false)
}

/// A checkpoint with bucket `a` (priority 1) reached through the default
/// subscription of the single stream `name`.
fn default_stream_checkpoint(name: &str, errors: Value) -> Value {
    checkpoint(
        1,
        vec![bucket_with_subscriptions("a", 1, json!([{"default": 0}]))],
        None,
        vec![stream(name, true, errors)],
    )
}

fn subscription(s: &Session) -> Value {
    let rows = select(&s.db, "SELECT * FROM ps_stream_subscriptions", &[]);
    assert_eq!(rows.len(), 1, "{rows:?}");
    rows[0].clone()
}

/// The `streams` part of the request of an `EstablishSyncStream`.
fn requested_streams(instructions: &Value) -> Value {
    find(instructions, "EstablishSyncStream").expect("a stream is opened")["request"]["streams"].clone()
}

fn default_streams_created_on_demand(core: Core) {
    let mut s = session(core);
    s.start();
    s.line(&default_stream_checkpoint("my_default_stream", json!([])));
    assert_eq!(
        s.last_status.as_ref().unwrap()["streams"],
        json!([{"name": "my_default_stream", "parameters": null, "progress": {"total": 1, "downloaded": 0},
                "active": true, "is_default": true, "has_explicit_subscription": false,
                "expires_at": null, "last_synced_at": null, "priority": 1}])
    );
    s.line(&checkpoint_complete(Some(1), "1"));
    let streams = &s.last_status.as_ref().unwrap()["streams"];
    assert_eq!(streams.as_array().unwrap().len(), 1);
    assert_eq!(streams[0]["last_synced_at"], ts(0));
    assert_eq!(subscription(&s)["last_synced_at"], ts(0));
}

fn default_streams_deleted(core: Core) {
    let mut s = session(core);
    s.start();
    for name in ["s1", "s2"] {
        s.line(&default_stream_checkpoint(name, json!([])));
        s.line(&checkpoint_complete(Some(1), "1"));
    }
    let streams = s.last_status.as_ref().unwrap()["streams"].as_array().unwrap().clone();
    assert_eq!(streams.len(), 1);
    assert_eq!(streams[0]["name"], "s2");
}

fn default_stream_made_explicit(core: Core) {
    let mut s = session(core);
    s.start();
    s.line(&default_stream_checkpoint("a", json!([])));
    let stored = subscription(&s);
    assert_eq!((&stored["is_default"], &stored["ttl"]), (&json!(1), &Value::Null));

    s.control_json("subscriptions", &json!({"subscribe": {"stream": {"name": "a"}}}));
    let stored = subscription(&s);
    assert_eq!((&stored["active"], &stored["is_default"]), (&json!(1), &json!(1)));
    assert!(!stored["ttl"].is_null(), "an explicit subscription has a TTL");

    s.line(&checkpoint(1, vec![bucket("a", 1)], None, vec![]));
    let stored = subscription(&s);
    assert_eq!((&stored["active"], &stored["is_default"]), (&json!(0), &json!(0)));
    assert!(!stored["ttl"].is_null());
}

fn default_stream_reports_errors(core: Core) {
    let mut s = session(core);
    s.start();
    let response =
        s.line(&default_stream_checkpoint("a", json!([{"message": "error message", "subscription": "default"}])));
    assert!(logs(&response, "Default subscription a has errors: error message"), "{response}");
}

per_core! {
    default_streams_created_on_demand;
    default_streams_deleted;
    default_stream_made_explicit;
    default_stream_reports_errors;
}

fn subscribe(s: &mut Session, name: &str, ttl: Option<i64>) {
    let mut request = json!({"subscribe": {"stream": {"name": name}}});
    if let Some(ttl) = ttl {
        request["subscribe"]["ttl"] = json!(ttl);
    }
    s.control_json("subscriptions", &request);
}

fn explicit_unsubscribe(core: Core) {
    let mut s = session(core);
    exec(&s.db, "INSERT INTO ps_stream_subscriptions (stream_name, ttl) VALUES (?, ?)", &[&"my_stream", &3600]);
    let requested = requested_streams(&s.start());
    assert_eq!(requested["include_defaults"], true);
    assert!(!requested["subscriptions"].as_array().unwrap().is_empty());
    s.control("stop", Null);
    s.control_json("subscriptions", &json!({"unsubscribe": {"name": "my_stream", "params": null}}));
    assert_eq!(requested_streams(&s.start()), json!({"include_defaults": true, "subscriptions": []}));
}

fn explicit_deleted_after_ttl(core: Core) {
    let mut s = session(core);
    subscribe(&mut s, "my_stream", Some(HOUR));
    assert_eq!(subscription(&s)["expires_at"], ts(HOUR));
    assert_eq!(
        requested_streams(&s.start()),
        json!({"include_defaults": true,
               "subscriptions": [{"stream": "my_stream", "parameters": null, "override_priority": null}]})
    );
    s.control("stop", Null);
    advance(Duration::from_secs(2 * HOUR as u64));
    assert_eq!(requested_streams(&s.start()), json!({"include_defaults": true, "subscriptions": []}));
}

fn explicit_increase_ttl(core: Core) {
    let mut s = session(core);
    subscribe(&mut s, "my_stream", Some(HOUR));
    assert_eq!(subscription(&s)["expires_at"], ts(HOUR));

    advance(Duration::from_secs(30 * 60));
    s.control_json("start", &json!({"active_streams": [{"name": "my_stream"}]}));
    assert_eq!(subscription(&s)["expires_at"], ts(HOUR), "starting with the stream active extends it");

    advance(Duration::from_secs(30 * 60));
    s.control("line_text", json!({"token_expires_in": 3600}).to_string());
    assert_eq!(subscription(&s)["expires_at"], ts(HOUR), "a token_expires_in line extends it");

    advance(Duration::from_secs(30 * 60));
    s.control("stop", Null);
    assert_eq!(subscription(&s)["expires_at"], ts(30 * 60), "stopping does not");
}

fn explicit_made_implicit(core: Core) {
    let mut s = session(core);
    subscribe(&mut s, "a", None);
    s.start();
    s.line(&checkpoint(1, vec![], None, vec![stream("a", true, json!([]))]));
    let stored = subscription(&s);
    assert_eq!(stored["is_default"], 1);
    assert!(!stored["ttl"].is_null());
    s.control_json("subscriptions", &json!({"unsubscribe": {"name": "a"}}));
    s.control("stop", Null);
    assert_eq!(requested_streams(&s.start()), json!({"include_defaults": true, "subscriptions": []}));
}

fn explicit_reports_errors(core: Core) {
    let mut s = session(core);
    for params in ["invalid", "valid"] {
        s.control_json("subscriptions", &json!({"subscribe": {"stream": {"name": "a", "params": params}}}));
    }
    assert_eq!(
        requested_streams(&s.start()),
        json!({"include_defaults": true, "subscriptions": [
            {"stream": "a", "parameters": "invalid", "override_priority": null},
            {"stream": "a", "parameters": "valid", "override_priority": null},
        ]})
    );
    let response =
        s.line(&checkpoint(1, vec![], None, vec![stream("a", true, json!([{"message": "error message", "subscription": 0}]))]));
    assert!(
        logs(&response, "Subscription to stream a (with parameters \"invalid\") could not be resolved: error message"),
        "{response}"
    );
}

per_core! {
    explicit_unsubscribe;
    explicit_deleted_after_ttl;
    explicit_increase_ttl;
    explicit_made_implicit;
    explicit_reports_errors;
}

fn changing_subscriptions(core: Core) {
    let mut s = session(core);
    let mut active: Vec<Value> = vec![];
    let start = |s: &mut Session, active: &Vec<Value>| {
        s.control_json("start", &json!({"active_streams": active}));
    };
    let needs_restart = |s: &mut Session, active: &Vec<Value>| {
        let instructions = s.control_json("update_subscriptions", &json!(active));
        find(&instructions, "CloseSyncStream").is_some()
    };
    start(&mut s, &active);
    subscribe(&mut s, "a", Some(HOUR));
    active.push(json!({"name": "a"}));
    assert!(needs_restart(&mut s, &active), "a new subscription needs a new request");
    start(&mut s, &active);
    active.clear();
    assert!(!needs_restart(&mut s, &active), "unsubscribing with a TTL keeps the session");
    advance(Duration::from_secs(HOUR as u64 + 1));
    let instructions = s.control("line_text", json!({"token_expires_in": 1800}).to_string());
    assert_eq!(find(&instructions, "CloseSyncStream"), Some(&json!({"hide_disconnect": true})));
}

fn persists_stream_state(core: Core) {
    let mut s = session(core);
    subscribe(&mut s, "a", None);
    s.control_json("start", &json!({"active_streams": [{"name": "a"}]}));
    s.line(&checkpoint(1, vec![bucket_with_subscriptions("a", 1, json!([{"sub": 0}]))], None, vec![stream("a", false, json!([]))]));
    s.line(&checkpoint_complete(None, "1"));
    let status: Value = serde_json::from_str(scalar(&s.db, "SELECT powersync_offline_sync_status()", &[]).as_str().unwrap()).unwrap();
    assert_eq!(
        status["streams"],
        json!([{"name": "a", "parameters": null, "progress": {"total": 0, "downloaded": 0}, "priority": null,
                "active": true, "is_default": false, "has_explicit_subscription": true,
                "expires_at": ts(24 * HOUR), "last_synced_at": ts(0)}])
    );
}

fn clearing_clears_subscriptions(core: Core) {
    let mut s = session(core);
    subscribe(&mut s, "a", None);
    assert!(!select(&s.db, "SELECT * FROM ps_stream_subscriptions", &[]).is_empty());
    tx(&s.db, "SELECT powersync_clear(0)", &[]);
    assert!(select(&s.db, "SELECT * FROM ps_stream_subscriptions", &[]).is_empty());
}

fn migrates_old_timestamps(core: Core) {
    let s = session(core);
    tx(&s.db, "SELECT powersync_test_migration(?)", &[&12]);
    let now_secs = upstream::clock::now_ms() / 1000;
    exec(&s.db, "INSERT INTO ps_sync_state(priority, last_synced_at) VALUES (?, ?)", &[&2147483647, &"2025-03-01T10:00:00.000Z"]);
    exec(
        &s.db,
        "INSERT INTO ps_stream_subscriptions(stream_name, active, ttl, expires_at, last_synced_at) VALUES (?, ?, ?, ?, ?)",
        &[&"stream", &1, &3600, &(now_secs + 1800), &now_secs],
    );
    tx(&s.db, "SELECT powersync_test_migration(?)", &[&13]);
    let status: Value = serde_json::from_str(scalar(&s.db, "SELECT powersync_offline_sync_status()", &[]).as_str().unwrap()).unwrap();
    assert_eq!(
        status["priority_status"],
        json!([{"priority": 2147483647, "has_synced": true, "last_synced_at": ts(0)}])
    );
    let mut streams = status["streams"].clone();
    assert!(streams[0].as_object_mut().unwrap().remove("progress").is_some());
    assert_eq!(
        streams,
        json!([{"name": "stream", "parameters": null, "priority": null, "active": true, "is_default": false,
                "has_explicit_subscription": true, "expires_at": ts(30 * 60), "last_synced_at": ts(0)}])
    );
}

per_core! {
    changing_subscriptions;
    persists_stream_state;
    clearing_clears_subscriptions;
    migrates_old_timestamps, oplite: #[ignore = "internal: powersync_test_migration (the reference's internal versions 12/13) is not registered in oplite"];
}
