//! Differential tests of the sync protocol engine: seeded random sessions
//! (several buckets and priorities, PUT/REMOVE/MOVE/CLEAR, rows shared by
//! buckets, checksum mismatches, checkpoint diffs, interrupted streams and
//! restarts, pending local writes and write checkpoints) are fed to oplite
//! and to the reference core; after every call the instructions and the
//! internal tables must agree.
//!
//! The session is `oplite_test_data::session`'s, which the web package's
//! recorded sessions also run. Every seed runs twice, with oplite's sync_local forced to each strategy,
//! and a third of them also with the automatic choice.
//! `OPLITE_DIFF_SEEDS=n` sets how many seeds run (default 300);
//! `OPLITE_DIFF_SEED=s` replays one.
mod common;

use std::collections::BTreeMap;

use common::cores::Cores;
use common::diff::{Arg, Pair};
use oplite_test_data::session::Session;
use oplite_test_data::{ServerModel, ServerOptions};
use serde_json::Value;

fn run_seed(seed: u64, strategy: &str) {
    let options = ServerOptions { buckets: 1 + (seed % 4) as usize, ..Default::default() };
    let mut pair = Pair::new();
    pair.ours.query_row("SELECT oplite_sync_local_strategy(?1)", [strategy], |_| Ok(())).unwrap();
    // items and lists have tables; rows of type "other" stay untyped.
    pair.replace_schema(&serde_json::json!({"tables": [
        {"name": "items", "columns": [{"name": "name", "type": "text"}, {"name": "n", "type": "integer"}]},
        {"name": "lists", "columns": [{"name": "name", "type": "text"}]},
    ]}));
    let mut session = Session::new(Cores(pair), ServerModel::new(seed, options), seed);
    session.run();
    session.host.0.assert_same_tables();
}

#[test]
fn random_sessions_agree_with_the_reference() {
    let seeds: Vec<u64> = match std::env::var("OPLITE_DIFF_SEED") {
        Ok(seed) => vec![seed.parse().unwrap()],
        Err(_) => {
            let n = std::env::var("OPLITE_DIFF_SEEDS").ok().and_then(|n| n.parse().ok()).unwrap_or(300);
            (0..n).collect()
        }
    };
    for seed in seeds {
        let strategies: &[&str] =
            if seed % 3 == 0 { &["incremental", "from_scratch", "auto"] } else { &["incremental", "from_scratch"] };
        for strategy in strategies {
            let outcome = std::panic::catch_unwind(|| run_seed(seed, strategy));
            if let Err(panic) = outcome {
                eprintln!(
                    "differential session failed for seed {seed} with sync_local {strategy}; replay with OPLITE_DIFF_SEED={seed}"
                );
                std::panic::resume_unwind(panic);
            }
        }
    }
}

/// Keys that collide without naming the same row: `type/id/subkey` is the
/// same text for type "a/b", id "c" and for type "a", id "b", subkey
/// "c/null". oplite finds the op a key
/// supersedes through the row index, trying every row the key can name;
/// it must supersede exactly what the reference's (bucket, key) lookup
/// does, in a bucket first filled in this iteration and in one that held
/// ops before.
#[test]
fn keys_that_collide_across_rows_agree_with_the_reference() {
    let mut pair = Pair::new();
    let mut next_op = 0i64;
    // Per bucket: the checksum and the count of every op sent.
    let mut sums: BTreeMap<&str, (u32, usize)> = BTreeMap::new();
    let mut op = |bucket: &'static str, kind: &str, t: Option<&str>, id: &str, subkey: Option<&str>| {
        next_op += 1;
        let checksum = (next_op * 7919 % 100_000) as u32;
        let entry = sums.entry(bucket).or_default();
        *entry = (entry.0.wrapping_add(checksum), entry.1 + 1);
        let mut v = serde_json::json!({"op_id": next_op.to_string(), "op": kind, "object_id": id, "checksum": checksum});
        if let Some(t) = t {
            v["object_type"] = Value::from(t);
        }
        if let Some(s) = subkey {
            v["subkey"] = Value::from(s);
        }
        if kind == "PUT" {
            v["data"] = Value::from(format!("{{\"n\":{next_op}}}"));
        }
        (v, next_op, sums.clone())
    };
    let data = |bucket: &str, ops: Vec<Value>| {
        serde_json::json!({"data": {"bucket": bucket, "has_more": false, "after": null, "next_after": null, "data": ops}})
            .to_string()
    };
    let checkpoint = |last: i64, sums: &BTreeMap<&str, (u32, usize)>| {
        let buckets: Vec<Value> = sums
            .iter()
            .map(|(b, (sum, count))| serde_json::json!({"bucket": b, "checksum": sum, "priority": 3, "count": count}))
            .collect();
        serde_json::json!({"checkpoint": {"last_op_id": last.to_string(), "write_checkpoint": null, "buckets": buckets}})
            .to_string()
    };
    let complete = |last: i64| serde_json::json!({"checkpoint_complete": {"last_op_id": last.to_string()}}).to_string();

    // Iteration 1: fresh buckets.
    let first_b = vec![
        op("b", "PUT", Some("a/b"), "c", None).0,
        op("b", "PUT", Some("a"), "b", Some("c/null")).0, // supersedes the op above: the same key
        op("b", "PUT", Some(""), "x", None).0,
        op("b", "PUT", Some("t"), "y/z", None).0,
        op("b", "PUT", Some(""), "w", None).0,
        op("b", "REMOVE", Some(""), "w", None).0, // removes the op above
    ];
    let second_b = vec![
        op("b", "PUT", Some("t/y"), "z", None).0, // supersedes type "t", id "y/z"
        op("b", "PUT", Some("plain"), "p", None).0,
    ];
    let (c_op, _, _) = op("c", "PUT", Some("plain"), "q", None);
    let (d_op, last, sums1) = op("d", "PUT", Some("plain"), "r", Some("s"));
    pair.control("start", Arg::Null);
    pair.control("line_text", Arg::Text(&checkpoint(last, &sums1)));
    pair.control("line_text", Arg::Text(&data("b", first_b)));
    pair.control("line_text", Arg::Text(&data("b", second_b)));
    pair.control("line_text", Arg::Text(&data("c", vec![c_op])));
    pair.control("line_text", Arg::Text(&data("d", vec![d_op])));
    pair.control("line_text", Arg::Text(&complete(last)));
    pair.control("stop", Arg::Null);

    // Iteration 2: every bucket held ops before.
    let third_b = vec![
        op("b", "PUT", Some("a"), "b/c", None).0, // supersedes type "a", id "b", subkey "c/null"
        op("b", "PUT", Some("t"), "y", Some("z/null")).0, // supersedes type "t/y", id "z"
        op("b", "REMOVE", Some("plain"), "p", None).0,
    ];
    let c_ops = vec![
        op("c", "PUT", Some("q/r"), "s", None).0, // the first op with a / in its type here
        op("c", "PUT", Some("q"), "r", Some("s/null")).0, // supersedes it
        op("c", "PUT", Some("plain"), "q", None).0,
    ];
    let (d_op, last, sums2) = op("d", "PUT", Some("plain/r"), "s", None);
    pair.control("start", Arg::Null);
    pair.control("line_text", Arg::Text(&checkpoint(last, &sums2)));
    pair.control("line_text", Arg::Text(&data("b", third_b)));
    pair.control("line_text", Arg::Text(&data("c", c_ops)));
    pair.control("line_text", Arg::Text(&data("d", vec![d_op])));
    pair.control("line_text", Arg::Text(&complete(last)));
    pair.control("stop", Arg::Null);
    let ops: i64 = pair.ours.query_row("SELECT count(*) FROM ps_oplog", [], |r| r.get(0)).unwrap();
    assert_eq!(ops, 7, "ops left after superseding");
}

/// Ops that name no row (no object_type or no object_id): stored with NULL
/// type, id and key, replacing nothing and replaced by nothing, in a fresh
/// bucket and in one that held ops. (The reference core cannot apply a
/// checkpoint holding them, so only storing is compared.)
#[test]
fn ops_without_a_type_or_id_are_stored_as_the_reference_stores_them() {
    let mut pair = Pair::new();
    let op = |id: u32, kind: &str, t: Option<&str>, row: Option<&str>| {
        let mut v = serde_json::json!({"op_id": id.to_string(), "op": kind, "checksum": id});
        if let Some(t) = t {
            v["object_type"] = Value::from(t);
        }
        if let Some(row) = row {
            v["object_id"] = Value::from(row);
        }
        if kind == "PUT" {
            v["data"] = Value::from(format!("{{\"n\":{id}}}"));
        }
        v
    };
    let data = |ops: Vec<Value>| serde_json::json!({"data": {"bucket": "b", "data": ops}}).to_string();
    let checkpoint = |last: u32| {
        let sum: u32 = (1..=last).sum();
        serde_json::json!({"checkpoint": {"last_op_id": last.to_string(), "buckets": [{"bucket": "b", "checksum": sum}]}})
            .to_string()
    };
    pair.control("start", Arg::Null);
    pair.control("line_text", Arg::Text(&checkpoint(7)));
    pair.control(
        "line_text",
        Arg::Text(&data(vec![
            op(1, "PUT", None, Some("x")),
            op(2, "PUT", Some("t"), None),
            op(3, "PUT", None, None),
            op(4, "PUT", Some(""), Some("x")),
            op(5, "REMOVE", None, Some("x")),
            op(6, "PUT", Some("t"), Some("x")),
            op(7, "PUT", None, Some("x")),
        ])),
    );
    pair.control("stop", Arg::Null);
    pair.control("start", Arg::Null);
    pair.control("line_text", Arg::Text(&checkpoint(10)));
    pair.control(
        "line_text",
        Arg::Text(&data(vec![op(8, "PUT", None, Some("x")), op(9, "REMOVE", Some("t"), None), op(10, "PUT", Some("t"), Some("x"))])),
    );
    pair.control("stop", Arg::Null);
    let rowless: i64 = pair.ours.query_row("SELECT count(*) FROM ps_oplog WHERE key IS NULL", [], |r| r.get(0)).unwrap();
    assert_eq!(rowless, 5, "every op without a type or id is kept, keyless");
}

/// Row data of every JSON shape a server may send reads the same through
/// the views as with the reference core: oplite decodes plain JSON itself
/// (`oplite_field`) and leaves everything else (JSON5, escaped keys,
/// `\u0000`, lone surrogates, arrays) to SQLite's `json_extract`, in the set-wise
/// from-scratch apply and in the row-at-a-time incremental one.
#[test]
fn row_data_of_every_json_shape_reads_the_same_through_the_views() {
    let shapes = [
        r#"{"a":"plain","b":1,"c":2.5,"d":"x","e":true}"#,
        r#" { "a" : "spaced" , "b" : -0 , "c" : 1e3 ,"d":{ "k" : [ 1 , { "z" : "s p" } ] } } "#,
        r#"{"a":"esc \"q\" \\ \n \u00e9 \ud83d\ude00","b":9223372036854775807,"c":-1.5E-7}"#,
        r#"{"a":"big","b":9223372036854775808,"c":123456789012345678901234567890,"e":false}"#,
        r#"{"a":"tiny","c":4.9e-324,"d":[],"e":{}}"#,
        r#"{"a":"huge","c":1e400,"b":-1e400}"#,
        r#"{"a":"first","a":"second","b":1,"b":2}"#,
        r#"{"\u0061":"escaped key","b":3}"#,
        r#"{a:"json5", b:0x1F, c:.5, d:'single', e:Infinity,}"#,
        r#"{"a":"nul \u0000 inside","b":4}"#,
        r#"{"a":"lone \ud800 surrogate","b":5}"#,
        r#"{"a":12,"b":"13","c":"not a number","d":14.0,"e":"text"}"#,
        r#"{"b":null,"c":null,"extra":{"deep":[1,2,{"x":null}]},"more":"x"}"#,
        r#"[1,2,3]"#,
        r#""just a string""#,
        r#"42"#,
        r#"{}"#,
        r#"{"a":"o\u00f1e","o\u00f1e":"unicode key","d":"\t tab escape"}"#,
    ];
    for strategy in ["from_scratch", "incremental"] {
        let mut pair = Pair::new();
        pair.ours.query_row("SELECT oplite_sync_local_strategy(?1)", [strategy], |_| Ok(())).unwrap();
        pair.replace_schema(&serde_json::json!({"tables": [{"name": "items", "columns": [
            {"name": "a", "type": "text"}, {"name": "b", "type": "integer"}, {"name": "c", "type": "real"},
            {"name": "d", "type": "text"}, {"name": "e", "type": "integer"}, {"name": "o\u{f1}e", "type": "text"},
        ]}]}));
        let mut sum = 0u32;
        let mut next_op = 0u32;
        pair.control("start", Arg::Null);
        for round in 0..2 {
            let mut ops = Vec::new();
            for (i, _) in shapes.iter().enumerate() {
                next_op += 1;
                let checksum = next_op.wrapping_mul(2_654_435_761);
                sum = sum.wrapping_add(checksum);
                ops.push(serde_json::json!({"op_id": next_op.to_string(), "op": "PUT", "object_type": "items",
                    "object_id": format!("row{i}"), "checksum": checksum, "data": shapes[(i + round) % shapes.len()]}));
            }
            let last = next_op.to_string();
            let checkpoint = serde_json::json!({"checkpoint": {"last_op_id": last, "buckets": [{"bucket": "b", "checksum": sum}]}});
            pair.control("line_text", Arg::Text(&checkpoint.to_string()));
            pair.control("line_text", Arg::Text(&serde_json::json!({"data": {"bucket": "b", "data": ops}}).to_string()));
            pair.control("line_text", Arg::Text(&serde_json::json!({"checkpoint_complete": {"last_op_id": last}}).to_string()));
            pair.assert_same_tables();
        }
        pair.control("stop", Arg::Null);
    }
}
