//! The seeded protocol session that the differential sync test and the web
//! package's recorded sessions both run: several connections, each of one
//! to three checkpoints (full or diff, now and then with a wrong checksum),
//! data lines by priority with partial checkpoints between them, a dropped
//! connection now and then, local writes, uploads acknowledged through a
//! write checkpoint, and expiring tokens.
//!
//! The session decides every step from the seed; a [`Host`] carries each
//! step out on its databases (both cores at once, or one core whose
//! answers are recorded), so the same seed gives the same calls on every
//! host.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

use crate::{Encoding, ServerModel};

/// A payload of `powersync_control`.
#[derive(Clone, Copy, Debug)]
pub enum Payload<'a> {
    /// SQL NULL.
    Null,
    /// Text.
    Text(&'a str),
    /// A blob.
    Blob(&'a [u8]),
}

/// The internal tables of the core's layout, each by the columns both
/// cores have, as queries valid on either: what a session's hosts compare
/// between oplite and the reference core (rows sorted; the client id left
/// out).
pub const CORE_TABLES: &[(&str, &str)] = &[
    (
        "ps_buckets",
        "SELECT id, name, last_applied_op, last_op, add_checksum, op_checksum, pending_delete,
                count_at_last, count_since_last, downloaded_size FROM ps_buckets ORDER BY id",
    ),
    ("ps_oplog", "SELECT bucket, op_id, row_type, row_id, key, data, hash FROM ps_oplog ORDER BY bucket, op_id, key"),
    ("ps_updated_rows", "SELECT * FROM ps_updated_rows ORDER BY 1, 2"),
    ("ps_untyped", "SELECT type, id, data FROM ps_untyped ORDER BY 1, 2"),
    ("ps_sync_state", "SELECT priority FROM ps_sync_state ORDER BY 1"),
    ("ps_kv", "SELECT key, CAST(value AS TEXT) FROM ps_kv WHERE key != 'client_id' ORDER BY 1"),
    ("ps_crud", "SELECT id, data, tx_id FROM ps_crud ORDER BY id"),
];

/// What a session needs of the databases it drives.
pub trait Host {
    /// `SELECT powersync_control(op, payload)` in a transaction of its own;
    /// the instructions when it answered a JSON array, else None.
    fn control(&mut self, op: &str, payload: Payload<'_>) -> Option<Value>;
    /// Runs SQL in the database (a batch that brings its own transaction
    /// where it needs one).
    fn execute(&mut self, sql: &str);
    /// The `n`th local write, to row `id` of `items`; `kind` (0, 1 or 2)
    /// picks a delete (0) or an update of a row that exists.
    fn local_write(&mut self, id: &str, n: u32, kind: u64);
    /// A line's BSON bytes. Hosts may bring their own encoder.
    fn bson(&self, line: &Value) -> Vec<u8> {
        crate::bson::from_json(line)
    }
}

/// A session in progress.
pub struct Session<H> {
    /// The databases.
    pub host: H,
    /// The service.
    pub server: ServerModel,
    /// How lines are sent: BSON for every third seed.
    pub encoding: Encoding,
    next_write_checkpoint: i64,
    local_writes: u32,
}

/// True when the instructions close the stream (a checksum failure).
pub fn closes(instructions: Option<&Value>) -> bool {
    instructions
        .and_then(Value::as_array)
        .is_some_and(|items| items.iter().any(|i| i.get("CloseSyncStream").is_some()))
}

/// The buckets `start`'s EstablishSyncStream requests (name -> after).
pub fn requested_buckets(start: &Value) -> HashMap<String, i64> {
    let request = start
        .as_array()
        .and_then(|items| items.iter().find_map(|i| i.get("EstablishSyncStream")))
        .unwrap_or_else(|| panic!("no EstablishSyncStream in {start}"));
    request["request"]["buckets"]
        .as_array()
        .expect("buckets")
        .iter()
        .map(|b| (b["name"].as_str().unwrap().to_owned(), b["after"].as_str().unwrap().parse().unwrap()))
        .collect()
}

/// Adds one to a random bucket's checksum in a checkpoint line.
pub fn corrupt_checksum(line: &mut Value, pick: u64) {
    let Some(body) = line.as_object_mut().and_then(|o| o.values_mut().next()) else { return };
    let key = if body.get("buckets").is_some() { "buckets" } else { "updated_buckets" };
    if let Some(buckets) = body[key].as_array_mut() {
        if !buckets.is_empty() {
            let i = pick as usize % buckets.len();
            let checksum = buckets[i]["checksum"].as_u64().unwrap() as u32;
            buckets[i]["checksum"] = Value::from(checksum.wrapping_add(1));
        }
    }
}

impl<H: Host> Session<H> {
    /// The session of `server`'s seed on `host`.
    pub fn new(host: H, server: ServerModel, seed: u64) -> Self {
        let encoding = if seed.is_multiple_of(3) { Encoding::Bson } else { Encoding::Json };
        Session { host, server, encoding, next_write_checkpoint: 1, local_writes: 0 }
    }

    /// Four connections, with server changes before each.
    pub fn run(&mut self) {
        for _ in 0..4 {
            self.server.mutate(15);
            self.iteration();
        }
    }

    fn send(&mut self, line: &Value) -> Option<Value> {
        match self.encoding {
            Encoding::Json => self.host.control("line_text", Payload::Text(&line.to_string())),
            Encoding::Bson => {
                let bytes = self.host.bson(line);
                self.host.control("line_binary", Payload::Blob(&bytes))
            }
        }
    }

    fn local_write(&mut self) {
        self.local_writes += 1;
        let id = format!("row{}", self.server.rng.below(12));
        let kind = self.server.rng.below(3);
        self.host.local_write(&id, self.local_writes, kind);
    }

    fn upload(&mut self) {
        self.host.execute("DELETE FROM ps_crud");
        let wc = self.next_write_checkpoint;
        self.next_write_checkpoint += 1;
        self.server.write_checkpoint = Some(wc);
        self.host.control("target_checkpoint_request_id", Payload::Text(&wc.to_string()));
        self.host.control("completed_upload", Payload::Null);
    }

    /// One connection: start, one to three checkpoints, stop (or a dropped
    /// connection, a checksum failure, an expiring token).
    pub fn iteration(&mut self) {
        let start = self.host.control("start", Payload::Null).expect("start answers instructions");
        let mut after = requested_buckets(&start);
        let mut sent: Option<BTreeMap<String, Value>> = None;
        let rounds = 1 + self.server.rng.below(3);
        for round in 0..rounds {
            if round > 0 {
                self.server.mutate(8);
            }
            let mut line = match &sent {
                Some(previous) if self.server.rng.chance(60) => self.server.checkpoint_diff_line(previous),
                _ => self.server.checkpoint_line(),
            };
            if self.server.rng.chance(6) {
                corrupt_checksum(&mut line, self.server.rng.below(1000));
            }
            sent = Some(self.server.checkpoint_entries());
            for bucket in self.server.buckets.iter().map(|b| b.name.clone()).collect::<Vec<_>>() {
                after.entry(bucket).or_insert(0);
            }
            after.retain(|name, _| self.server.buckets.iter().any(|b| &b.name == name));
            if closes(self.send(&line).as_ref()) {
                return;
            }
            let mut last_priority = None;
            for (priority, data) in self.server.data_lines(&after) {
                if let Some(last) = last_priority.filter(|p| *p != priority) {
                    if self.server.rng.chance(40) {
                        let partial = json!({"partial_checkpoint_complete": {
                            "last_op_id": self.server.last_op_id().to_string(),
                            "priority": last,
                        }});
                        if closes(self.send(&partial).as_ref()) {
                            return;
                        }
                    }
                }
                last_priority = Some(priority);
                if self.server.rng.chance(3) {
                    // The connection drops mid-download.
                    self.host.control("stop", Payload::Null);
                    return;
                }
                let bucket = data["data"]["bucket"].as_str().unwrap().to_owned();
                let last = data["data"]["next_after"].as_str().unwrap().parse().unwrap();
                self.send(&data);
                after.insert(bucket, last);
            }
            if self.server.rng.chance(12) {
                self.local_write();
            }
            let complete = json!({"checkpoint_complete": {"last_op_id": self.server.last_op_id().to_string()}});
            if closes(self.send(&complete).as_ref()) {
                return;
            }
            if self.local_writes > 0 && self.server.rng.chance(50) {
                self.upload();
            }
            if self.server.rng.chance(10) {
                let seconds = self.server.rng.below(60) as i64 - 5;
                self.send(&json!({"token_expires_in": seconds}));
                return;
            }
        }
        self.host.control("stop", Payload::Null);
    }
}
