//! A model of a sync service: buckets of ops, checkpoints, data lines.
//!
//! The model keeps every op of every bucket since the bucket's last CLEAR
//! (no compaction), so a client that is at op `after` of a bucket is sent
//! exactly the ops above it. A bucket's checksum is the wrapping sum of the
//! checksums of those ops, which is what a client holds after applying them
//! whatever its starting point.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

use crate::rng::Rng;

/// One op as the service sends it.
#[derive(Clone, Debug)]
pub struct ServerOp {
    /// Globally increasing op id.
    pub op_id: i64,
    /// PUT, REMOVE, MOVE or CLEAR.
    pub op: &'static str,
    /// The row's type.
    pub object_type: Option<String>,
    /// The row's id.
    pub object_id: Option<String>,
    /// Optional subkey.
    pub subkey: Option<String>,
    /// The op's checksum.
    pub checksum: u32,
    /// JSON text of the row (PUT).
    pub data: Option<String>,
}

impl ServerOp {
    /// The op as it appears in a data line.
    pub fn to_json(&self) -> Value {
        let mut op = json!({
            "op_id": self.op_id.to_string(),
            "op": self.op,
            "checksum": self.checksum,
        });
        if let Some(t) = &self.object_type {
            op["object_type"] = json!(t);
        }
        if let Some(id) = &self.object_id {
            op["object_id"] = json!(id);
        }
        if let Some(subkey) = &self.subkey {
            op["subkey"] = json!(subkey);
        }
        if let Some(data) = &self.data {
            op["data"] = json!(data);
        }
        op
    }
}

/// A bucket on the service.
#[derive(Clone, Debug)]
pub struct ServerBucket {
    /// Its name.
    pub name: String,
    /// 0 (highest) to 3.
    pub priority: i32,
    /// Ops since (and including) the last CLEAR.
    pub ops: Vec<ServerOp>,
}

impl ServerBucket {
    /// Wrapping sum of the op checksums.
    pub fn checksum(&self) -> u32 {
        self.ops.iter().fold(0u32, |sum, op| sum.wrapping_add(op.checksum))
    }

    /// The checkpoint entry for this bucket.
    pub fn checkpoint_entry(&self) -> Value {
        json!({
            "bucket": self.name,
            "checksum": self.checksum(),
            "priority": self.priority,
            "count": self.ops.len(),
        })
    }
}

/// Knobs of a generated session.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// How many buckets to start with.
    pub buckets: usize,
    /// Row types to use; some may be unknown to the client's schema.
    pub types: Vec<String>,
    /// How many distinct row ids per type (small: rows shared by buckets).
    pub ids_per_type: u64,
    /// Ops per data line.
    pub page_size: usize,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            buckets: 3,
            types: vec!["items".into(), "lists".into(), "other".into()],
            ids_per_type: 12,
            page_size: 4,
        }
    }
}

/// The service's state.
#[derive(Clone)]
pub struct ServerModel {
    /// The randomness of this session.
    pub rng: Rng,
    options: ServerOptions,
    next_op_id: i64,
    next_bucket: usize,
    /// Buckets in creation order.
    pub buckets: Vec<ServerBucket>,
    /// The write checkpoint the service has processed uploads up to.
    pub write_checkpoint: Option<i64>,
}

impl ServerModel {
    /// A service with `options.buckets` empty buckets.
    pub fn new(seed: u64, options: ServerOptions) -> Self {
        let mut model = ServerModel {
            rng: Rng::new(seed),
            options,
            next_op_id: 1,
            next_bucket: 0,
            buckets: Vec::new(),
            write_checkpoint: None,
        };
        for _ in 0..model.options.buckets {
            model.add_bucket();
        }
        model
    }

    /// The highest op id issued so far.
    pub fn last_op_id(&self) -> i64 {
        self.next_op_id - 1
    }

    fn add_bucket(&mut self) {
        let priority = *self.rng.pick(&[0, 1, 3, 3, 3]);
        let name = format!("bucket{}", self.next_bucket);
        self.next_bucket += 1;
        self.buckets.push(ServerBucket { name, priority, ops: Vec::new() });
    }

    fn new_op(&mut self, op: &'static str, row: Option<(String, String)>, subkey: Option<String>) -> ServerOp {
        let op_id = self.next_op_id;
        self.next_op_id += 1;
        let checksum = self.rng.next_u64() as u32;
        let data = (op == "PUT").then(|| {
            if self.rng.chance(3) {
                "null".to_owned()
            } else {
                json!({"n": self.rng.below(1000), "name": format!("v{op_id}"), "extra": self.rng.chance(20)}).to_string()
            }
        });
        let data = data.filter(|d| d != "null");
        let (object_type, object_id) = match row {
            Some((t, id)) => (Some(t), Some(id)),
            None => (None, None),
        };
        ServerOp { op_id, op, object_type, object_id, subkey, checksum, data }
    }

    fn random_row(&mut self) -> (String, String) {
        let t = self.rng.pick(&self.options.types).clone();
        let id = format!("row{}", self.rng.below(self.options.ids_per_type));
        (t, id)
    }

    /// Adds up to `max_ops` random ops (PUT mostly, some REMOVE, MOVE,
    /// CLEAR), and now and then adds or drops a bucket.
    pub fn mutate(&mut self, max_ops: u64) {
        if self.rng.chance(10) {
            self.add_bucket();
        }
        if self.buckets.len() > 1 && self.rng.chance(5) {
            let i = self.rng.below(self.buckets.len() as u64) as usize;
            self.buckets.remove(i);
        }
        if self.buckets.is_empty() {
            self.add_bucket();
        }
        let n = 1 + self.rng.below(max_ops.max(1));
        for _ in 0..n {
            let b = self.rng.below(self.buckets.len() as u64) as usize;
            let roll = self.rng.below(100);
            let op = if roll < 70 {
                let row = self.random_row();
                let subkey = self.rng.chance(10).then(|| format!("s{}", self.rng.below(2)));
                self.new_op("PUT", Some(row), subkey)
            } else if roll < 88 {
                // Remove a row the bucket holds, or a random one.
                let held: Vec<(String, String, Option<String>)> = self.buckets[b]
                    .ops
                    .iter()
                    .filter(|o| o.op == "PUT")
                    .map(|o| (o.object_type.clone().unwrap(), o.object_id.clone().unwrap(), o.subkey.clone()))
                    .collect();
                let (t, id, subkey) = if held.is_empty() {
                    let (t, id) = self.random_row();
                    (t, id, None)
                } else {
                    self.rng.pick(&held).clone()
                };
                self.new_op("REMOVE", Some((t, id)), subkey)
            } else if roll < 96 {
                self.new_op("MOVE", None, None)
            } else {
                let clear = self.new_op("CLEAR", None, None);
                self.buckets[b].ops.clear();
                clear
            };
            self.buckets[b].ops.push(op);
        }
    }

    /// A full checkpoint line.
    pub fn checkpoint_line(&self) -> Value {
        json!({"checkpoint": {
            "last_op_id": self.last_op_id().to_string(),
            "write_checkpoint": self.write_checkpoint.map(|w| w.to_string()),
            "buckets": self.buckets.iter().map(ServerBucket::checkpoint_entry).collect::<Vec<_>>(),
        }})
    }

    /// A checkpoint_diff line from `previous` (bucket name → checksum entry
    /// as last sent) to the current state.
    pub fn checkpoint_diff_line(&self, previous: &BTreeMap<String, Value>) -> Value {
        let updated: Vec<Value> = self
            .buckets
            .iter()
            .map(ServerBucket::checkpoint_entry)
            .filter(|entry| previous.get(entry["bucket"].as_str().unwrap_or_default()) != Some(entry))
            .collect();
        let removed: Vec<&String> =
            previous.keys().filter(|name| !self.buckets.iter().any(|b| &b.name == *name)).collect();
        json!({"checkpoint_diff": {
            "last_op_id": self.last_op_id().to_string(),
            "write_checkpoint": self.write_checkpoint.map(|w| w.to_string()),
            "updated_buckets": updated,
            "removed_buckets": removed,
        }})
    }

    /// The checkpoint entries by bucket name (to diff against later).
    pub fn checkpoint_entries(&self) -> BTreeMap<String, Value> {
        self.buckets.iter().map(|b| (b.name.clone(), b.checkpoint_entry())).collect()
    }

    /// Data lines with every op above `after[bucket]` (0 when absent),
    /// `page_size` ops per line, buckets in priority order (highest first).
    pub fn data_lines(&self, after: &HashMap<String, i64>) -> Vec<(i32, Value)> {
        let mut buckets: Vec<&ServerBucket> = self.buckets.iter().collect();
        buckets.sort_by_key(|b| b.priority);
        let mut lines = Vec::new();
        for bucket in buckets {
            let from = after.get(&bucket.name).copied().unwrap_or(0);
            let ops: Vec<&ServerOp> = bucket.ops.iter().filter(|op| op.op_id > from).collect();
            let pages: Vec<&[&ServerOp]> = ops.chunks(self.options.page_size.max(1)).collect();
            for (i, page) in pages.iter().enumerate() {
                lines.push((
                    bucket.priority,
                    json!({"data": {
                        "bucket": bucket.name,
                        "has_more": i + 1 < pages.len(),
                        "after": from.to_string(),
                        "next_after": page.last().map(|op| op.op_id.to_string()),
                        "data": page.iter().map(|op| op.to_json()).collect::<Vec<_>>(),
                    }}),
                ));
            }
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_for_a_seed() {
        let mut a = ServerModel::new(42, ServerOptions::default());
        let mut b = ServerModel::new(42, ServerOptions::default());
        a.mutate(20);
        b.mutate(20);
        assert_eq!(a.checkpoint_line(), b.checkpoint_line());
        assert_eq!(
            a.data_lines(&HashMap::new()).len(),
            b.data_lines(&HashMap::new()).len()
        );
    }

    #[test]
    fn checksum_is_the_sum_since_the_last_clear() {
        let mut model = ServerModel::new(3, ServerOptions { buckets: 1, ..Default::default() });
        for _ in 0..20 {
            model.mutate(10);
        }
        for bucket in &model.buckets {
            let expected = bucket.ops.iter().fold(0u32, |s, op| s.wrapping_add(op.checksum));
            assert_eq!(bucket.checksum(), expected);
            // Only the first op may be a CLEAR.
            assert!(bucket.ops.iter().skip(1).all(|op| op.op != "CLEAR"));
        }
    }
}
