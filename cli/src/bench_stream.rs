//! The service's side of the small-checkpoint benchmarks (`oplite-steady`,
//! `oplite-small`): after the benchmark stream's first sync, each bucket's
//! checksum, count and newest op, and which rows exist, so that every
//! checkpoint written from here on is one a correct core accepts. Included
//! by each with `#[path]`, so it is not part of the host's library.

use std::collections::BTreeMap;

use oplite_test_data::lines::{checkpoint, checkpoint_complete, checkpoint_diff, data_line};
use oplite_test_data::server::ServerOp;
use oplite_test_data::stream::{ROW_ID_PREFIX, ROW_TYPE};
use oplite_test_data::{BucketEntry, Encoding, Rng, StreamSpec};
use serde_json::Value;

/// The stream's state after the first sync, and what it sends next.
pub struct Stream {
    spec: StreamSpec,
    entries: Vec<BucketEntry>,
    last_op: Vec<i64>,
    next_op: i64,
    live: Vec<bool>,
    rng: Rng,
}

impl Stream {
    /// The stream `spec` left, with `seed` for the ops drawn from here on.
    pub fn new(spec: StreamSpec, seed: u64) -> Stream {
        let entries = spec.entries();
        let last_op = (0..spec.buckets).map(|b| spec.op_ids(b, 0).last().unwrap_or(0) as i64).collect();
        let live = vec![true; spec.row_count() as usize + 1];
        Stream { next_op: spec.ops as i64 + 1, spec, entries, last_op, live, rng: Rng::new(seed) }
    }

    /// One checkpoint of 1 to `max_ops` ops: updates of existing rows (80%),
    /// new rows (10%) and removals (10%), in the order a service sends its
    /// lines.
    pub fn checkpoint(&mut self, max_ops: u64) -> Vec<Value> {
        let count = 1 + self.rng.below(max_ops);
        let mut ops = Vec::new();
        for _ in 0..count {
            let roll = self.rng.below(100);
            let row = if roll < 10 { self.new_row() } else { 1 + self.rng.below(self.live.len() as u64 - 1) };
            let remove = (10..20).contains(&roll) && self.live[row as usize];
            self.live[row as usize] = !remove;
            ops.push((row, (!remove).then(|| format!("{{\"n\":{}}}", self.next_op + ops.len() as i64))));
        }
        self.lines(&ops, None)
    }

    /// What the service sends a client that connects again: the full
    /// checkpoint it already holds, and its completion.
    pub fn reconnect(&self) -> Vec<Value> {
        let last = self.next_op - 1;
        vec![checkpoint(last, None, &self.entries), checkpoint_complete(last)]
    }

    /// A row number no op has used: the id of a row the app creates.
    pub fn new_row(&mut self) -> u64 {
        self.live.push(false);
        self.live.len() as u64 - 1
    }

    /// The checkpoint that echoes the app's upload: a PUT of `row` with
    /// `data`, and the write checkpoint the upload was given.
    pub fn echo(&mut self, row: u64, data: &str, write_checkpoint: i64) -> Vec<Value> {
        self.lines(&[(row, Some(data.to_owned()))], Some(write_checkpoint))
    }

    /// The lines of a checkpoint of one op per `(row, data)` (no data: a
    /// removal): a `checkpoint_diff` of the buckets that moved, a data line
    /// per bucket and `checkpoint_complete`.
    fn lines(&mut self, ops: &[(u64, Option<String>)], write_checkpoint: Option<i64>) -> Vec<Value> {
        let mut by_bucket: BTreeMap<u64, Vec<ServerOp>> = BTreeMap::new();
        for (row, data) in ops {
            self.live[*row as usize] = data.is_some();
            let op_id = self.next_op;
            self.next_op += 1;
            let op = ServerOp {
                op_id,
                op: if data.is_some() { "PUT" } else { "REMOVE" },
                object_type: Some(ROW_TYPE.to_owned()),
                object_id: Some(row_id(*row)),
                subkey: None,
                checksum: self.rng.next_u64() as u32,
                data: data.clone(),
            };
            // A row stays in its bucket, so each new op supersedes the last.
            by_bucket.entry(row % self.spec.buckets).or_default().push(op);
        }
        let mut data = Vec::new();
        let mut updated = Vec::new();
        for (bucket, ops) in &by_bucket {
            let b = *bucket as usize;
            let entry = &mut self.entries[b];
            for op in ops {
                entry.checksum = entry.checksum.wrapping_add(op.checksum);
                entry.count += 1;
            }
            updated.push(entry.clone());
            let after = self.last_op[b].to_string();
            self.last_op[b] = ops.last().expect("a bucket in the map has ops").op_id;
            let line = data_line(Encoding::Json, &entry.bucket, &after, false, ops);
            data.push(serde_json::from_slice(&line).expect("data_line writes JSON"));
        }
        let last = self.next_op - 1;
        let mut lines = vec![checkpoint_diff(last, write_checkpoint, &updated, &[])];
        lines.extend(data);
        lines.push(checkpoint_complete(last));
        lines
    }

    /// How many rows the stream has left.
    pub fn live_rows(&self) -> u64 {
        self.live.iter().skip(1).filter(|l| **l).count() as u64
    }
}

/// The id of row `row`.
pub fn row_id(row: u64) -> String {
    format!("{ROW_ID_PREFIX}{row}")
}
