//! Port of the download-progress tests of the reference core's
//! `dart/test/sync_test.dart` (JSON and BSON lines): the per-bucket progress
//! `UpdateSyncStatus` reports, without priorities, across interrupted and
//! resumed syncs, after a defragmentation and by priority.
mod common;
mod upstream;

use rusqlite::types::Null;
use serde_json::{json, Value};
use upstream::sync::{checkpoint_complete, counted, statuses, Session};
use upstream::{select, Core};

/// The download progress the last `UpdateSyncStatus` reported: per bucket,
/// (priority, at_last, since_last, target_count).
struct Progress {
    buckets: Option<Vec<(i64, i64, i64, i64)>>,
    last_op_id: i64,
}

impl Progress {
    fn new() -> Progress {
        Progress { buckets: None, last_op_id: 0 }
    }

    fn apply(&mut self, instructions: &Value) {
        for status in statuses(instructions) {
            self.buckets = status["downloading"].as_object().map(|downloading| {
                downloading["buckets"]
                    .as_object()
                    .unwrap()
                    .values()
                    .map(|b| {
                        let n = |k: &str| b[k].as_i64().unwrap();
                        (n("priority"), n("at_last"), n("since_last"), n("target_count"))
                    })
                    .collect()
            });
        }
    }

    /// (downloaded, total) over the buckets of at most this priority.
    fn up_to(&self, priority: i64) -> (i64, i64) {
        self.buckets.as_ref().expect("a download in progress").iter().filter(|b| b.0 <= priority).fold(
            (0, 0),
            |(done, total), &(_, at_last, since_last, target)| (done + since_last, total + target - at_last),
        )
    }

    fn total(&self) -> (i64, i64) {
        self.up_to(i64::MAX)
    }

    fn control(&mut self, s: &mut Session, op: &str) {
        let instructions = s.control(op, Null);
        self.apply(&instructions);
    }

    fn checkpoint(&mut self, s: &mut Session, last_op_id: i64, buckets: Vec<Value>) {
        let instructions = s.push_checkpoint(last_op_id, buckets);
        self.apply(&instructions);
    }

    /// A data line with `amount` new operations for `bucket`.
    fn data(&mut self, s: &mut Session, bucket: &str, amount: usize) {
        let ops: Vec<Value> = (0..amount)
            .map(|_| {
                self.last_op_id += 1;
                let id = self.last_op_id.to_string();
                json!({"op_id": id, "op": "PUT", "object_type": "items", "object_id": id, "checksum": 0, "data": "{}"})
            })
            .collect();
        let instructions =
            s.line(&json!({"data": {"bucket": bucket, "has_more": false, "after": null, "next_after": null, "data": ops}}));
        self.apply(&instructions);
    }

    fn complete(&mut self, s: &mut Session) {
        let instructions = s.line(&checkpoint_complete(None, &self.last_op_id.to_string()));
        self.apply(&instructions);
    }
}

fn progress_without_priorities(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    let mut p = Progress::new();
    p.control(&mut s, "start");
    assert!(p.buckets.is_none());
    p.checkpoint(&mut s, 10, vec![counted("a", 10, 3)]);
    assert_eq!(p.total(), (0, 10));
    p.data(&mut s, "a", 10);
    assert_eq!(p.total(), (10, 10));
    p.complete(&mut s);
    assert!(p.buckets.is_none());
    let diff = s.line(&json!({"checkpoint_diff": {"last_op_id": "12",
        "updated_buckets": [{"bucket": "a", "priority": 3, "checksum": 0, "count": 12, "last_op_id": null}],
        "removed_buckets": [], "write_checkpoint": null}}));
    p.apply(&diff);
    assert_eq!(p.total(), (0, 2));
    p.data(&mut s, "a", 2);
    assert_eq!(p.total(), (2, 2));
    p.complete(&mut s);
    assert!(p.buckets.is_none());
}

/// Downloads 5 of bucket `a`'s 10 operations, then stops and starts again.
fn interrupted(s: &mut Session, p: &mut Progress) {
    p.control(s, "start");
    p.checkpoint(s, 10, vec![counted("a", 10, 3)]);
    assert_eq!(p.total(), (0, 10));
    p.data(s, "a", 5);
    assert_eq!(p.total(), (5, 10));
    p.control(s, "stop");
    assert!(p.buckets.is_none());
    p.control(s, "start");
}

/// After `interrupted`, a checkpoint for `count` operations of `a`; the
/// rest is downloaded and completes the checkpoint.
fn resumed(core: Core, bson: bool, count: i64) {
    let mut s = Session::new(core, bson);
    let mut p = Progress::new();
    interrupted(&mut s, &mut p);
    p.checkpoint(&mut s, count, vec![counted("a", count, 3)]);
    assert_eq!(p.total(), (5, count));
    p.data(&mut s, "a", (count - 5) as usize);
    assert_eq!(p.total(), (count, count));
    p.complete(&mut s);
    assert!(p.buckets.is_none());
}

fn progress_interrupted(core: Core, bson: bool) {
    resumed(core, bson, 10);
}

fn progress_interrupted_new_checkpoint(core: Core, bson: bool) {
    resumed(core, bson, 12);
}

fn progress_interrupt_and_defrag(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    let mut p = Progress::new();
    interrupted(&mut s, &mut p);
    p.checkpoint(&mut s, 14, vec![counted("a", 4, 3)]);
    assert_eq!(p.total(), (0, 4), "a bucket that shrank restarts its progress");
    let buckets = select(&s.db, "SELECT * FROM ps_buckets", &[]);
    assert_eq!(buckets.len(), 1);
    assert_eq!((&buckets[0]["count_since_last"], &buckets[0]["count_at_last"]), (&json!(0), &json!(0)));
}

fn progress_different_priorities(core: Core, bson: bool) {
    let mut s = Session::new(core, bson);
    let mut p = Progress::new();
    let expect = |p: &Progress, prio0: (i64, i64), prio2: (i64, i64)| {
        assert_eq!((p.up_to(0), p.up_to(1), p.up_to(2), p.total()), (prio0, prio0, prio2, prio2));
    };
    p.control(&mut s, "start");
    p.checkpoint(&mut s, 10, vec![counted("a", 5, 0), counted("b", 5, 2)]);
    expect(&p, (0, 5), (0, 10));
    p.data(&mut s, "a", 5);
    expect(&p, (5, 5), (5, 10));
    p.data(&mut s, "b", 2);
    expect(&p, (5, 5), (7, 10));
    p.checkpoint(&mut s, 14, vec![counted("a", 8, 0), counted("b", 6, 2)]);
    expect(&p, (5, 8), (7, 14));
    p.data(&mut s, "a", 3);
    expect(&p, (8, 8), (10, 14));
    p.data(&mut s, "b", 4);
    expect(&p, (8, 8), (14, 14));
    p.complete(&mut s);
    assert!(p.buckets.is_none());
}

per_core_and_encoding! {
    progress_without_priorities;
    progress_interrupted;
    progress_interrupted_new_checkpoint;
    progress_interrupt_and_defrag;
    progress_different_priorities;
}
