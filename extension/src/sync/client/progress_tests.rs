//! Progress kept line by line equals progress summed over every bucket, in
//! randomized sessions: many buckets of several priorities (some without a
//! count), two streams, data lines superseding, removing, moving and
//! clearing, checkpoint diffs that change and remove buckets, partial and
//! full completions, checksum failures and the resync after them.
//!
//! The sums are checked two ways after every call: the [`Progress`] the
//! iteration keeps against [`Progress::compute`] from the counters, and the
//! status it reports against the status summed the way it was before
//! progress was kept incrementally ([`DownloadProgress::from_buckets`] and
//! [`streams::set_progress`], per bucket, from the counters stored in
//! `ps_buckets`).

use std::collections::HashMap;

use oplite_test_data::rng::Rng;
use serde_json::{json, Value as JsonValue};

use super::*;
use crate::sync::status::{BucketProgress, DownloadProgress};
use crate::sync::storage::Counters;
use crate::sync::streams::StreamProgress;

struct Session {
    db: Connection,
    client: SyncClient,
    rng: Rng,
    next_op: i64,
    /// Bucket names the checkpoints draw from.
    names: Vec<String>,
    /// Calls that went through the comparison.
    checked: usize,
    /// Of those, calls with a status that reports progress.
    with_progress: usize,
}

impl Session {
    fn new(seed: u64) -> Session {
        let db = Connection::open_in_memory().unwrap();
        crate::register(&db).unwrap();
        db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
        let names = (0..60).map(|i| format!("b{i}")).collect();
        let mut session =
            Session { db, client: SyncClient::default(), rng: Rng::new(seed), next_op: 1, names, checked: 0, with_progress: 0 };
        session.call("subscriptions", r#"{"subscribe":{"stream":{"name":"mine","params":{"p":1}}}}"#);
        session
    }

    /// One call in its own transaction (rolled back when it fails), then the
    /// comparison.
    fn call(&mut self, op: &str, text: &str) -> bool {
        self.db.execute_batch("BEGIN").unwrap();
        let ok = self.client.control(&self.db, op, Payload::Text(text)).is_ok();
        self.db.execute_batch(if ok { "COMMIT" } else { "ROLLBACK" }).unwrap();
        self.check(op);
        ok
    }

    fn line(&mut self, line: &JsonValue) -> bool {
        self.call("line_text", &line.to_string())
    }

    fn check(&mut self, op: &str) {
        self.checked += 1;
        let Some(iteration) = &self.client.iteration else { return };
        let stored = storage::counters(&self.db).unwrap();
        for (name, counters) in &stored {
            assert_eq!(iteration.counters.get(name), *counters, "counters of {name} after {op}");
        }
        let Some(checkpoint) = &iteration.checkpoint else {
            assert!(iteration.progress.is_none());
            return;
        };
        let kept = iteration.progress.as_ref().expect("progress of the checkpoint");
        let computed = Progress::compute(&checkpoint.buckets, &iteration.status.streams, &iteration.counters);
        assert_eq!(*kept, computed, "kept progress after {op}");

        let Some(downloading) = &iteration.status.downloading else { return };
        self.with_progress += 1;
        let counters = |name: &str| stored.get(name).copied().unwrap_or_default();
        let expected = DownloadProgress::from_buckets(checkpoint.buckets.iter().map(|b| BucketProgress {
            priority: b.priority(),
            target: b.count,
            at_last: counters(&b.bucket).at_last,
            since_last: counters(&b.bucket).since_last,
        }));
        assert_eq!(*downloading, expected, "priorities' progress after {op}");
        let per_bucket: HashMap<&str, StreamProgress> = checkpoint
            .buckets
            .iter()
            .map(|b| {
                let c = counters(&b.bucket);
                (&*b.bucket, StreamProgress { total: b.count.map_or(0, |n| n - c.at_last), downloaded: c.since_last })
            })
            .collect();
        let mut expected_streams = iteration.status.streams.clone();
        streams::set_progress(&mut expected_streams, Some(&per_bucket));
        assert_eq!(iteration.status.streams, expected_streams, "streams' progress after {op}");
    }

    fn bucket(&mut self, name: &str) -> JsonValue {
        let mut subscriptions = Vec::new();
        if self.rng.chance(50) {
            subscriptions.push(json!({"default": 0}));
        }
        if self.rng.chance(40) {
            subscriptions.push(json!({"sub": 0}));
        }
        let mut bucket = json!({"bucket": name, "checksum": self.rng.below(1 << 32), "subscriptions": subscriptions});
        if self.rng.chance(85) {
            bucket["priority"] = json!(self.rng.below(4));
        }
        if self.rng.chance(85) {
            // Sometimes below what is held: progress restarts from zero.
            bucket["count"] = json!(self.rng.below(40));
        }
        bucket
    }

    fn checkpoint(&mut self) -> JsonValue {
        let count = 20 + self.rng.below(40) as usize;
        let mut buckets: Vec<JsonValue> = Vec::new();
        for i in 0..count {
            let name = self.names[(i * 7 + self.rng.below(3) as usize) % self.names.len()].clone();
            buckets.push(self.bucket(&name));
        }
        json!({"checkpoint": {"last_op_id": self.next_op.to_string(), "buckets": buckets,
            "streams": [{"name": "all", "is_default": true, "errors": []},
                        {"name": "mine", "is_default": false, "errors": []}]}})
    }

    fn diff(&mut self, checksums_of: Option<&HashMap<String, u32>>) -> JsonValue {
        let mut updated = Vec::new();
        let mut removed = Vec::new();
        let current: Vec<String> = match &self.client.iteration.as_ref().unwrap().checkpoint {
            Some(c) => c.buckets.iter().map(|b| b.bucket.to_string()).collect(),
            None => Vec::new(),
        };
        match checksums_of {
            // Every bucket gets the checksum it holds (or a wrong one).
            Some(held) => {
                for name in &current {
                    let mut bucket = self.bucket(name);
                    bucket["checksum"] = json!(held.get(name).copied().unwrap_or(0));
                    updated.push(bucket);
                }
            }
            None => {
                for name in &current {
                    if self.rng.chance(10) {
                        removed.push(name.clone());
                    } else if self.rng.chance(15) {
                        updated.push(self.bucket(name));
                    }
                }
                for _ in 0..self.rng.below(4) {
                    let name = self.rng.pick(&self.names).clone();
                    updated.push(self.bucket(&name));
                }
            }
        }
        json!({"checkpoint_diff": {"last_op_id": self.next_op.to_string(), "updated_buckets": updated,
                                   "removed_buckets": removed}})
    }

    fn data(&mut self) -> JsonValue {
        let bucket = self.rng.pick(&self.names).clone();
        let ops: Vec<JsonValue> = (0..1 + self.rng.below(4))
            .map(|_| {
                let op_id = self.next_op.to_string();
                self.next_op += 1;
                let row = format!("r{}", self.rng.below(30));
                let checksum = self.rng.below(1000);
                match self.rng.below(20) {
                    0..=12 => json!({"op_id": op_id, "op": "PUT", "object_type": "t", "object_id": row,
                                     "checksum": checksum, "data": "{}"}),
                    13..=16 => {
                        json!({"op_id": op_id, "op": "REMOVE", "object_type": "t", "object_id": row, "checksum": checksum})
                    }
                    17 | 18 => json!({"op_id": op_id, "op": "MOVE", "checksum": checksum}),
                    _ => json!({"op_id": op_id, "op": "CLEAR", "checksum": checksum}),
                }
            })
            .collect();
        json!({"data": {"bucket": bucket, "data": ops}})
    }

    /// What every stored bucket's checksum is.
    fn held_checksums(&self) -> HashMap<String, u32> {
        storage::checksums(&self.db).unwrap().into_iter().map(|(name, c)| (name, c.total().0)).collect()
    }

    fn step(&mut self) {
        if self.client.iteration.is_none() {
            self.call("start", "{}");
            let checkpoint = self.checkpoint();
            self.line(&checkpoint);
            return;
        }
        match self.rng.below(100) {
            0..=69 => {
                let data = self.data();
                self.line(&data);
            }
            70..=77 => {
                let diff = self.diff(None);
                self.line(&diff);
            }
            78..=80 => {
                let checkpoint = self.checkpoint();
                self.line(&checkpoint);
            }
            81..=89 => {
                // Complete: right checksums, or wrong ones for one bucket
                // (which then downloads again in a new iteration).
                let mut held = self.held_checksums();
                if self.rng.chance(25) {
                    if let Some(sum) = held.values_mut().next() {
                        *sum = sum.wrapping_add(1);
                    }
                }
                let diff = self.diff(Some(&held));
                self.line(&diff);
                let last = self.next_op.to_string();
                if self.rng.chance(30) {
                    let priority = self.rng.below(4);
                    self.line(&json!({"partial_checkpoint_complete": {"last_op_id": last, "priority": priority}}));
                } else {
                    self.line(&json!({"checkpoint_complete": {"last_op_id": last}}));
                }
            }
            90..=93 => {
                // A line naming a bucket the checkpoint does not, and a
                // malformed one (fails, nothing changes).
                let data = json!({"data": {"bucket": "elsewhere", "data": [{"op_id": self.next_op.to_string(),
                    "op": "PUT", "object_type": "t", "object_id": "x", "checksum": 1, "data": "{}"}]}});
                self.next_op += 1;
                self.line(&data);
                assert!(!self.call("line_text", r#"{"data": {"bucket": "b1", "data": [{"op": "PUT"}]}}"#));
            }
            94..=96 => {
                // A local write: the next complete waits for the upload.
                self.db.execute_batch("BEGIN; INSERT INTO ps_crud(data) VALUES ('{}'); COMMIT;").unwrap();
                let data = self.data();
                self.line(&data);
                self.db.execute_batch("BEGIN; DELETE FROM ps_crud; COMMIT;").unwrap();
                self.call("completed_upload", "");
            }
            _ => {
                self.call("stop", "");
            }
        }
    }
}

#[test]
fn kept_progress_equals_progress_summed_over_every_bucket() {
    let (mut checked, mut with_progress) = (0, 0);
    for seed in 0..6 {
        let mut session = Session::new(seed);
        for _ in 0..400 {
            session.step();
        }
        checked += session.checked;
        with_progress += session.with_progress;
    }
    // The sessions did report progress, most of the time.
    assert!(with_progress > checked / 2, "{with_progress} of {checked} calls reported progress");
}

#[test]
fn counter_map_copies_keep_what_they_saw() {
    let mut map = CounterMap::new(HashMap::from([("a".to_owned(), Counters { at_last: 1, since_last: 2 })]));
    let c = |at_last, since_last| Counters { at_last, since_last };
    map.settle();
    let copy = map.clone();
    assert_eq!(map.insert("a", c(5, 5)), c(1, 2));
    map.insert("b", c(3, 3));
    map.remove("a");
    assert_eq!((map.get("a"), map.get("b")), (c(0, 0), c(3, 3)));
    // The copy taken before still sees the old counters.
    assert_eq!((copy.get("a"), copy.get("b")), (c(1, 2), c(0, 0)));
    map.settle();
    assert_eq!((map.get("a"), map.get("b")), (c(0, 0), c(3, 3)));
    assert_eq!(copy.get("a"), c(1, 2));
}
