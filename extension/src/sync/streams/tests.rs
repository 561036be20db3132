//! Unit tests of the sync-streams module (payloads, TTLs, checkpoint
//! resolution, which streams an apply marks as synced).

use super::*;
use crate::sync::line::StreamError;

fn db() -> Connection {
    let db = Connection::open_in_memory().unwrap();
    crate::register(&db).unwrap();
    db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
    db
}

fn table(db: &Connection) -> Vec<String> {
    let mut stmt = db
        .prepare("SELECT id, stream_name, active, is_default, local_priority, local_params, ttl FROM ps_stream_subscriptions ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| {
        Ok(format!(
            "{} {} {} {} {:?} {} {:?}",
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, i64>(2)?,
            r.get::<_, i64>(3)?,
            r.get::<_, Option<i64>>(4)?,
            r.get::<_, String>(5)?,
            r.get::<_, Option<i64>>(6)?
        ))
    })
    .unwrap()
    .map(|r| r.unwrap())
    .collect()
}

#[test]
fn subscribe_keeps_raw_params_and_the_highest_priority() {
    let db = db();
    apply_change(&db, r#"{"subscribe":{"stream":{"name":"a","params":{ "b":1, "a":2 }},"ttl":10,"priority":2}}"#)
        .unwrap();
    apply_change(&db, r#"{"subscribe":{"stream":{"name":"a","params":{ "b":1, "a":2 }},"priority":3}}"#).unwrap();
    apply_change(&db, r#"{"subscribe":{"stream":{"name":"n"}}}"#).unwrap();
    apply_change(&db, r#"{"subscribe":{"stream":{"name":"n","params":null},"priority":0}}"#).unwrap();
    assert_eq!(table(&db), [r#"1 a 0 0 Some(2) { "b":1, "a":2 } Some(86400)"#, "2 n 0 0 None null Some(86400)"]);
    apply_change(&db, r#"{"unsubscribe":{"name":"n"}}"#).unwrap();
    assert_eq!(table(&db)[1], "2 n 0 0 None null None");
}

#[test]
fn bad_changes_fail_without_writing() {
    let db = db();
    for bad in [
        r#"{"subscribe":{"stream":{"name":"a"},"priority":-1}}"#,
        r#"{"subscribe":{"stream":{"name":"a"},"priority":2147483647}}"#,
        r#"{"subscribe":{"stream":{"name":"a"},"ttl":1.5}}"#,
        r#"{"subscribe":{"stream":{}}}"#,
        r#"{"unsubscribe":{"stream":{"name":"a"}}}"#,
        r#"{"resubscribe":{}}"#,
        "",
    ] {
        let err = apply_change(&db, bad).unwrap_err();
        assert!(err.to_string().contains("subscriptions payload"), "{bad}: {err}");
    }
    assert!(table(&db).is_empty());
}

#[test]
fn a_ttl_beyond_what_expires_at_can_hold_is_rejected_by_name() {
    let db = db();
    // ttl * 1,000,000 would overflow an INTEGER: every later request
    // listing the stream would fail (the reference core accepts it).
    for ttl in [9_300_000_000_000u64, u64::MAX, MAX_TTL_SECONDS + 1] {
        let change = format!(r#"{{"subscribe":{{"stream":{{"name":"a"}},"ttl":{ttl}}}}}"#);
        let err = apply_change(&db, &change).unwrap_err();
        assert!(matches!(err, OpliteError::InvalidArgument { .. }), "{err:?}");
        assert!(err.to_string().contains(&format!("ttl {ttl} of stream \"a\" is too large")), "{err}");
    }
    assert!(table(&db).is_empty());
    apply_change(&db, &format!(r#"{{"subscribe":{{"stream":{{"name":"a"}},"ttl":{MAX_TTL_SECONDS}}}}}"#)).unwrap();
    extend_ttl(&db, &[StreamKey { name: "a".into(), params: RawJson::null() }]).unwrap();
    let (request, _) = StreamsRequest::prune_and_list(&db, true).unwrap();
    assert_eq!(request.subscriptions.len(), 1);
}

#[test]
fn listing_the_request_writes_only_when_a_row_is_outdated() {
    let db = db();
    apply_change(&db, r#"{"subscribe":{"stream":{"name":"a"}}}"#).unwrap();
    // A keep-alive lists the request each time: with nothing to drop it
    // must not write (query_only fails any write, even of no rows).
    db.execute_batch("PRAGMA query_only = 1").unwrap();
    let (request, ids) = StreamsRequest::prune_and_list(&db, true).unwrap();
    assert_eq!((request.subscriptions.len(), ids), (1, vec![1]));
    db.execute_batch("PRAGMA query_only = 0").unwrap();
    apply_change(&db, r#"{"unsubscribe":{"name":"a"}}"#).unwrap();
    let (request, _) = StreamsRequest::prune_and_list(&db, true).unwrap();
    assert!(request.subscriptions.is_empty());
    assert!(table(&db).is_empty());
}

#[test]
fn checkpoint_lines_decode_stream_fields() {
    let reasons: Vec<BucketSubscription> = serde_json::from_str(r#"[{"default":1},{"sub":0}]"#).unwrap();
    assert_eq!(reasons, [BucketSubscription::Default(1), BucketSubscription::Explicit(0)]);
    assert!(serde_json::from_str::<BucketSubscription>(r#"{"sub":0,"default":1}"#).is_err());
    assert!(serde_json::from_str::<BucketSubscription>(r#"{"other":0}"#).is_err());
    let errors: Vec<StreamError> =
        serde_json::from_str(r#"[{"subscription":"default","message":"m"},{"subscription":2,"message":"n"}]"#)
            .unwrap();
    assert_eq!(errors[0].subscription, ErrorSource::Default);
    assert_eq!(errors[1].subscription, ErrorSource::Explicit(2));
    assert!(serde_json::from_str::<StreamError>(r#"{"subscription":-1,"message":"m"}"#).is_err());
}

#[test]
fn resolve_creates_defaults_drops_unknown_rows_and_ties_buckets() {
    let db = db();
    apply_change(&db, r#"{"subscribe":{"stream":{"name":"x","params":[1]}}}"#).unwrap();
    db.execute_batch("INSERT INTO ps_stream_subscriptions (stream_name, active) VALUES ('gone', 1)").unwrap();
    let (_, ids) = StreamsRequest::prune_and_list(&db, true).unwrap();
    assert_eq!(ids, [1]);
    let streams: Vec<StreamDescription> = serde_json::from_str(
        r#"[{"name":"d","is_default":true,"errors":[]},
            {"name":"x","is_default":false,"errors":[{"subscription":0,"message":"no"}]}]"#,
    )
    .unwrap();
    let line = r#"[{"bucket":"b1","checksum":0,"priority":1,"subscriptions":[{"default":0},{"sub":0}]},
                   {"bucket":"b2","checksum":0,"subscriptions":[{"sub":0},{"sub":7}]}]"#;
    let buckets: Vec<BucketChecksum<'_>> = serde_json::from_str(line).unwrap();
    let mut out = Vec::new();
    let statuses = resolve(&db, &streams, &ids, &buckets, &mut out).unwrap();
    assert_eq!(
        out,
        ["Subscription to stream x (with parameters [1]) could not be resolved: no"]
    );
    assert_eq!(table(&db), ["1 x 1 0 None [1] Some(86400)", "3 d 1 1 None null None"]);
    let summary: Vec<(&str, Option<i32>, usize)> =
        statuses.iter().map(|s| (s.name.as_str(), s.priority, s.buckets.len())).collect();
    assert_eq!(summary, [("x", Some(3), 2), ("d", Some(1), 1)]);
}

#[test]
fn partial_applies_mark_streams_of_that_priority_or_higher() {
    let db = db();
    let mut status = offline(&db).unwrap();
    assert!(status.is_empty());
    let row = Row {
        id: 1,
        name: "s".into(),
        active: true,
        is_default: false,
        params: RawJson::null(),
        ttl: None,
        expires_at: None,
        last_synced_at: None,
    };
    status = vec![row.status(), row.status(), row.status()];
    status[0].priority = Some(1);
    status[1].priority = Some(2);
    mark_synced(&db, &mut status, Some(1), 7).unwrap();
    let synced: Vec<Option<i64>> = status.iter().map(|s| s.last_synced_at).collect();
    assert_eq!(synced, [Some(7), None, None]);
    mark_synced(&db, &mut status, None, 8).unwrap();
    assert!(status.iter().all(|s| s.last_synced_at == Some(8)));
}
