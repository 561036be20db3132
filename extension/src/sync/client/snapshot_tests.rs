//! The cost of the copy `SyncClient::control` keeps (quoted in the module docs).

use std::time::Instant;

use serde_json::Value as JsonValue;

use super::*;

/// What the copy `control` keeps of an iteration costs, next to the
/// cheapest call that changes it (quoted in the module docs):
/// `cargo test-ext --lib snapshot_cost -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement"]
fn snapshot_cost() {
    const BUCKETS: usize = 1000;
    let db = Connection::open_in_memory().unwrap();
    crate::register(&db).unwrap();
    db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
    let mut client = SyncClient::default();
    let mut control = |op: &str, text: &str| {
        db.execute_batch("BEGIN").unwrap();
        client.control(&db, op, Payload::Text(text)).unwrap();
        db.execute_batch("COMMIT").unwrap();
    };
    control("subscriptions", r#"{"subscribe":{"stream":{"name":"s"}}}"#);
    control("start", "{}");
    let buckets: Vec<JsonValue> = (0..BUCKETS)
        .map(|b| {
            serde_json::json!({"bucket": format!("bucket{b}"), "checksum": 0, "count": 2000,
                               "priority": b % 4, "subscriptions": [{"sub": 0}]})
        })
        .collect();
    let checkpoint = serde_json::json!({"checkpoint": {"last_op_id": "1000000", "buckets": buckets,
        "streams": [{"name": "s", "is_default": false, "errors": []}]}});
    control("line_text", &checkpoint.to_string());
    let lines: Vec<String> = (0..2 * BUCKETS)
        .map(|i| {
            serde_json::json!({"data": {"bucket": format!("bucket{}", i % BUCKETS), "data": [{
                "op_id": (i + 1).to_string(), "op": "PUT", "object_type": "t", "object_id": format!("r{i}"),
                "checksum": 0, "data": "{}"}]}})
            .to_string()
        })
        .collect();
    let started = Instant::now();
    for line in &lines {
        control("line_text", line);
    }
    let per_line = started.elapsed() / lines.len() as u32;
    let iteration = client.iteration.as_ref().unwrap();
    let started = Instant::now();
    for _ in 0..100 {
        std::hint::black_box(iteration.clone());
    }
    let per_clone = started.elapsed() / 100;
    println!("{BUCKETS} buckets: cloning the iteration {per_clone:?}; a call storing a one-op line {per_line:?}");
}
