//! docs/protocol.md's worked checksum example, sent through
//! `powersync_control` to oplite and to the 0.5.4 reference core
//! (`common::diff::Pair`, which compares every answer and ps_buckets,
//! ps_oplog and ps_updated_rows after every call): PUTs with checksums 1, 2
//! (the same row as the first) and 3 leave add = 1, op = 5; a REMOVE of the
//! second row with checksum 0xFFFFFFFF then leaves add = 3, op = 2, total 5.
//! The unit test `sync::checksum::tests::worked_example_from_the_spec`
//! drives the same bookkeeping directly; this one holds it against the
//! reference, with the checkpoint validated (and a wrong total refused
//! alike), on JSON and BSON lines, in one checkpoint and across two.
mod common;

use common::diff::{Answer, Arg, Pair};
use serde_json::{json, Value};

const OPS: [(&str, &str, &str, u32); 4] =
    [("1", "PUT", "A", 1), ("2", "PUT", "A", 2), ("3", "PUT", "B", 3), ("4", "REMOVE", "B", 0xFFFF_FFFF)];

fn op(i: usize) -> Value {
    let (op_id, kind, id, checksum) = OPS[i];
    let mut entry = json!({"op_id": op_id, "op": kind, "object_type": "t", "object_id": id, "checksum": checksum});
    if kind == "PUT" {
        entry["data"] = json!({"n": op_id}).to_string().into();
    }
    entry
}

/// Sends a line to both cores; the instructions (equal on both, as Pair
/// checks).
fn line(pair: &mut Pair, bson: bool, line: Value) -> Value {
    let answer = if bson {
        pair.control("line_binary", Arg::Blob(&bson::serialize_to_vec(&line).unwrap()))
    } else {
        pair.control("line_text", Arg::Text(&line.to_string()))
    };
    match answer {
        Answer::Json(v) => v,
        other => panic!("expected instructions, got {other:?}"),
    }
}

fn checkpoint(pair: &mut Pair, bson: bool, last_op_id: &str, checksum: u32) {
    line(pair, bson, json!({"checkpoint": {"last_op_id": last_op_id, "write_checkpoint": null,
        "buckets": [{"bucket": "b", "checksum": checksum, "priority": 3}]}}));
}

fn data(pair: &mut Pair, bson: bool, ops: std::ops::Range<usize>) {
    line(pair, bson, json!({"data": {"bucket": "b", "has_more": false, "data": ops.map(op).collect::<Vec<_>>()}}));
}

fn complete(pair: &mut Pair, bson: bool, last_op_id: &str) -> Value {
    line(pair, bson, json!({"checkpoint_complete": {"last_op_id": last_op_id}}))
}

/// Whether the answer reports a checksum mismatch (a warning and the
/// stream closed to download again).
fn mismatch(answer: &Value) -> bool {
    answer.to_string().contains("Checksums didn't match")
}

/// oplite's stored (add, op) checksums of bucket `b`, as u32.
fn sums(pair: &Pair) -> (u32, u32) {
    pair.ours
        .query_row("SELECT add_checksum, op_checksum FROM ps_buckets WHERE name = 'b'", [], |r| {
            Ok((r.get::<_, i64>(0)? as u32, r.get::<_, i64>(1)? as u32))
        })
        .unwrap()
}

fn stored_ops(pair: &Pair) -> Vec<(i64, u32)> {
    let mut stmt = pair.ours.prepare("SELECT op_id, hash FROM ps_oplog ORDER BY op_id").unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)? as u32))).unwrap();
    rows.map(Result::unwrap).collect()
}

fn untyped_ids(pair: &Pair) -> Vec<String> {
    let mut stmt = pair.ours.prepare("SELECT id FROM ps_untyped ORDER BY id").unwrap();
    let rows = stmt.query_map([], |r| r.get(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

/// All four ops in one checkpoint (total 5), the data split into lines
/// of `per_line` ops.
fn one_checkpoint(bson: bool, per_line: &[usize]) {
    let case = format!("bson {bson}, ops per line {per_line:?}");
    let mut pair = Pair::new();
    pair.control("start", Arg::Null);
    checkpoint(&mut pair, bson, "4", 5);
    let mut done = 0;
    for &count in per_line {
        data(&mut pair, bson, done..done + count);
        done += count;
        if done == 3 {
            assert_eq!(sums(&pair), (1, 5), "after the PUTs, {case}");
        }
    }
    assert_eq!(sums(&pair), (3, 2), "after the REMOVE, {case}");
    assert_eq!(stored_ops(&pair), vec![(2, 2)], "{case}");
    let answer = complete(&mut pair, bson, "4");
    assert!(!mismatch(&answer), "{case}: {answer}");
    assert_eq!(untyped_ids(&pair), vec!["A"], "{case}: the checkpoint applied");
}

#[test]
fn worked_example_in_one_checkpoint_against_the_reference() {
    for bson in [false, true] {
        for per_line in [&[4][..], &[1, 1, 1, 1], &[3, 1], &[2, 2], &[1, 3]] {
            one_checkpoint(bson, per_line);
        }
    }
}

/// The PUTs in a first checkpoint (total 1 + 5 = 6), applied; the REMOVE
/// in a second (total 5): the removed row leaves the app's data.
#[test]
fn worked_example_across_two_checkpoints_against_the_reference() {
    for bson in [false, true] {
        let mut pair = Pair::new();
        pair.control("start", Arg::Null);
        checkpoint(&mut pair, bson, "3", 6);
        data(&mut pair, bson, 0..3);
        let first = complete(&mut pair, bson, "3");
        assert!(!mismatch(&first), "bson {bson}: {first}");
        assert_eq!(sums(&pair), (1, 5), "bson {bson}");
        assert_eq!(untyped_ids(&pair), vec!["A", "B"], "bson {bson}");
        checkpoint(&mut pair, bson, "4", 5);
        data(&mut pair, bson, 3..4);
        assert_eq!(sums(&pair), (3, 2), "bson {bson}");
        let second = complete(&mut pair, bson, "4");
        assert!(!mismatch(&second), "bson {bson}: {second}");
        assert_eq!(untyped_ids(&pair), vec!["A"], "bson {bson}");
        assert_eq!(stored_ops(&pair), vec![(2, 2)], "bson {bson}");
    }
}

/// A checkpoint whose total is not the ops' (6 instead of 5) is refused by
/// both cores alike, and nothing is applied: the validation the example's
/// numbers feed is real.
#[test]
fn a_wrong_total_is_refused_alike() {
    for bson in [false, true] {
        let mut pair = Pair::new();
        pair.control("start", Arg::Null);
        checkpoint(&mut pair, bson, "4", 6);
        data(&mut pair, bson, 0..4);
        let answer = complete(&mut pair, bson, "4");
        assert!(mismatch(&answer), "bson {bson}: {answer}");
        assert!(untyped_ids(&pair).is_empty(), "bson {bson}: nothing applied");
    }
}
