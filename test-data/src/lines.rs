//! Encoding sync lines as JSON text or BSON, and paging ops into data lines.
//!
//! Data lines are written straight into byte buffers (no `serde_json::Value`
//! per op): the generators produce a million ops for the demo and the
//! benchmarks, and building a value tree for each would cost more than the
//! client spends storing it. Other lines are rare and go through
//! `serde_json::Value`.

use serde_json::{json, Value};

use crate::bson::{DocWriter, IndexKey};
use crate::server::ServerOp;

/// How lines travel: newline-delimited JSON or a sequence of BSON documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// `application/x-ndjson`: one JSON object per line.
    Json,
    /// `application/vnd.powersync.bson-stream`: BSON documents back to back.
    Bson,
}

impl Encoding {
    /// The HTTP content type of a stream in this encoding.
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Json => "application/x-ndjson",
            Encoding::Bson => "application/vnd.powersync.bson-stream",
        }
    }

    /// The encoding a client asks for with its `Accept` header.
    pub fn from_accept(accept: Option<&str>) -> Self {
        match accept {
            Some(a) if a.contains("application/vnd.powersync.bson-stream") => Encoding::Bson,
            _ => Encoding::Json,
        }
    }
}

/// Encodes any line given as a JSON object (JSON text has no trailing
/// newline; the transport adds it).
pub fn encode(encoding: Encoding, line: &Value) -> Vec<u8> {
    match encoding {
        Encoding::Json => serde_json::to_vec(line).expect("JSON values always serialise"),
        Encoding::Bson => crate::bson::from_json(line),
    }
}

/// One bucket's entry in a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BucketEntry {
    /// The bucket's name.
    pub bucket: String,
    /// Wrapping sum of the checksums of its ops.
    pub checksum: u32,
    /// 0 (highest) to 3.
    pub priority: i32,
    /// How many ops it holds.
    pub count: u64,
}

impl BucketEntry {
    /// The entry as JSON.
    pub fn to_json(&self) -> Value {
        json!({"bucket": self.bucket, "checksum": self.checksum, "priority": self.priority, "count": self.count})
    }
}

/// `{"checkpoint": {...}}`.
pub fn checkpoint(last_op_id: i64, write_checkpoint: Option<i64>, buckets: &[BucketEntry]) -> Value {
    json!({"checkpoint": {
        "last_op_id": last_op_id.to_string(),
        "write_checkpoint": write_checkpoint.map(|w| w.to_string()),
        "buckets": buckets.iter().map(BucketEntry::to_json).collect::<Vec<_>>(),
    }})
}

/// `{"checkpoint_diff": {...}}`.
pub fn checkpoint_diff(
    last_op_id: i64,
    write_checkpoint: Option<i64>,
    updated: &[BucketEntry],
    removed: &[String],
) -> Value {
    json!({"checkpoint_diff": {
        "last_op_id": last_op_id.to_string(),
        "write_checkpoint": write_checkpoint.map(|w| w.to_string()),
        "updated_buckets": updated.iter().map(BucketEntry::to_json).collect::<Vec<_>>(),
        "removed_buckets": removed,
    }})
}

/// `{"checkpoint_complete": {"last_op_id": ...}}`.
pub fn checkpoint_complete(last_op_id: i64) -> Value {
    json!({"checkpoint_complete": {"last_op_id": last_op_id.to_string()}})
}

/// `{"partial_checkpoint_complete": {"last_op_id", "priority"}}`: every
/// bucket of priority `priority` or higher (lower number) is complete.
pub fn partial_checkpoint_complete(last_op_id: i64, priority: i32) -> Value {
    json!({"partial_checkpoint_complete": {"last_op_id": last_op_id.to_string(), "priority": priority}})
}

/// The keep-alive line `{"token_expires_in": seconds}`.
pub fn token_expires_in(seconds: i64) -> Value {
    json!({"token_expires_in": seconds})
}

/// Appends `s` as a JSON string literal.
pub fn write_json_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0..=0x1f => None,
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        match escape {
            Some(e) => out.extend_from_slice(e),
            None => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Writes one data line: `{"data": {"bucket", "has_more", "after",
/// "next_after", "data": [ops]}}`. `ops` must not be empty.
pub fn data_line(encoding: Encoding, bucket: &str, after: &str, has_more: bool, ops: &[ServerOp]) -> Vec<u8> {
    let next_after = ops.last().map(|op| op.op_id.to_string()).unwrap_or_else(|| after.to_owned());
    match encoding {
        Encoding::Json => {
            let mut out = Vec::with_capacity(64 + ops.len() * 120);
            out.extend_from_slice(b"{\"data\":{\"bucket\":");
            write_json_string(&mut out, bucket);
            out.extend_from_slice(if has_more { b",\"has_more\":true" } else { b",\"has_more\":false" });
            out.extend_from_slice(b",\"after\":");
            write_json_string(&mut out, after);
            out.extend_from_slice(b",\"next_after\":");
            write_json_string(&mut out, &next_after);
            out.extend_from_slice(b",\"data\":[");
            for (i, op) in ops.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json_op(&mut out, op);
            }
            out.extend_from_slice(b"]}}");
            out
        }
        Encoding::Bson => {
            let mut out = Vec::with_capacity(64 + ops.len() * 140);
            let mut doc = DocWriter::new(&mut out);
            doc.begin_doc("data");
            doc.string("bucket", bucket);
            doc.bool("has_more", has_more);
            doc.string("after", after);
            doc.string("next_after", &next_after);
            doc.begin_array("data");
            let mut index = IndexKey::default();
            for op in ops {
                doc.begin_doc(index.next_key());
                write_bson_op(&mut doc, op);
                doc.end();
            }
            doc.finish();
            out
        }
    }
}

fn write_json_op(out: &mut Vec<u8>, op: &ServerOp) {
    use std::io::Write;
    let _ = write!(out, "{{\"op_id\":\"{}\",\"op\":\"{}\"", op.op_id, op.op);
    if let Some(t) = &op.object_type {
        out.extend_from_slice(b",\"object_type\":");
        write_json_string(out, t);
    }
    if let Some(id) = &op.object_id {
        out.extend_from_slice(b",\"object_id\":");
        write_json_string(out, id);
    }
    if let Some(subkey) = &op.subkey {
        out.extend_from_slice(b",\"subkey\":");
        write_json_string(out, subkey);
    }
    let _ = write!(out, ",\"checksum\":{}", op.checksum);
    if let Some(data) = &op.data {
        out.extend_from_slice(b",\"data\":");
        write_json_string(out, data);
    }
    out.push(b'}');
}

fn write_bson_op(doc: &mut DocWriter<'_>, op: &ServerOp) {
    doc.string("op_id", &op.op_id.to_string());
    doc.string("op", op.op);
    if let Some(t) = &op.object_type {
        doc.string("object_type", t);
    }
    if let Some(id) = &op.object_id {
        doc.string("object_id", id);
    }
    if let Some(subkey) = &op.subkey {
        doc.string("subkey", subkey);
    }
    doc.int("checksum", op.checksum as i64);
    if let Some(data) = &op.data {
        doc.string("data", data);
    }
}

/// A source of one bucket's ops in op id order.
pub type OpSource = Box<dyn Iterator<Item = ServerOp> + Send>;

/// Pages the ops of several buckets into data lines of at most
/// `ops_per_line` ops, taking one line from each bucket in turn (as the
/// service interleaves buckets), highest priority (lowest number) first.
pub struct DataLines {
    buckets: Vec<BucketCursor>,
    next: usize,
    ops_per_line: usize,
    encoding: Encoding,
    page: Vec<ServerOp>,
}

struct BucketCursor {
    name: String,
    priority: i32,
    after: String,
    ops: std::iter::Peekable<OpSource>,
}

impl DataLines {
    /// Lines for `buckets`: (name, priority, the op id the client has,
    /// the ops above it).
    pub fn new(buckets: Vec<(String, i32, i64, OpSource)>, ops_per_line: usize, encoding: Encoding) -> Self {
        let mut buckets: Vec<BucketCursor> = buckets
            .into_iter()
            .map(|(name, priority, after, ops)| BucketCursor {
                name,
                priority,
                after: after.to_string(),
                ops: ops.peekable(),
            })
            .collect();
        buckets.sort_by_key(|b| b.priority);
        DataLines { buckets, next: 0, ops_per_line: ops_per_line.max(1), encoding, page: Vec::new() }
    }
}

impl Iterator for DataLines {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        // Priorities are served in order: a lower-priority bucket only gets
        // a turn once every bucket of a higher priority is done.
        loop {
            if self.buckets.is_empty() {
                return None;
            }
            let top = self.buckets[0].priority;
            let same: usize = self.buckets.iter().take_while(|b| b.priority == top).count();
            if self.next >= same {
                self.next = 0;
            }
            let cursor = &mut self.buckets[self.next];
            self.page.clear();
            while self.page.len() < self.ops_per_line {
                match cursor.ops.next() {
                    Some(op) => self.page.push(op),
                    None => break,
                }
            }
            if self.page.is_empty() {
                self.buckets.remove(self.next);
                continue;
            }
            let has_more = cursor.ops.peek().is_some();
            let line = data_line(self.encoding, &cursor.name, &cursor.after, has_more, &self.page);
            cursor.after = self.page.last().map(|op| op.op_id.to_string()).unwrap_or_default();
            if has_more {
                self.next += 1;
            } else {
                self.buckets.remove(self.next);
            }
            return Some(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(op_id: i64, id: &str, data: &str) -> ServerOp {
        ServerOp {
            op_id,
            op: "PUT",
            object_type: Some("items".into()),
            object_id: Some(id.into()),
            subkey: None,
            checksum: op_id as u32,
            data: Some(data.into()),
        }
    }

    #[test]
    fn json_data_line_is_valid_json_with_the_reference_field_order() {
        let line = data_line(Encoding::Json, "b1", "0", false, &[put(1, "a", r#"{"name":"x\"y"}"#)]);
        let text = String::from_utf8(line).unwrap();
        assert_eq!(
            text,
            r#"{"data":{"bucket":"b1","has_more":false,"after":"0","next_after":"1","data":[{"op_id":"1","op":"PUT","object_type":"items","object_id":"a","checksum":1,"data":"{\"name\":\"x\\\"y\"}"}]}}"#
        );
        let parsed: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed["data"]["data"][0]["data"], r#"{"name":"x\"y"}"#);
    }

    #[test]
    fn json_strings_escape_control_characters() {
        let mut out = Vec::new();
        write_json_string(&mut out, "a\u{1}b\n\"\\");
        let back: String = serde_json::from_slice(&out).unwrap();
        assert_eq!(back, "a\u{1}b\n\"\\");
    }

    #[test]
    fn pages_round_robin_within_a_priority_and_priorities_in_order() {
        let source = |ids: Vec<i64>| -> OpSource {
            Box::new(ids.into_iter().map(|i| put(i, &format!("r{i}"), "{}")).collect::<Vec<_>>().into_iter())
        };
        let lines: Vec<Value> = DataLines::new(
            vec![
                ("lo".into(), 3, 0, source(vec![1, 2, 3])),
                ("hi".into(), 0, 0, source(vec![4])),
                ("lo2".into(), 3, 5, source(vec![6])),
            ],
            2,
            Encoding::Json,
        )
        .map(|l| serde_json::from_slice(&l).unwrap())
        .collect();
        let order: Vec<(&str, bool, &str)> = lines
            .iter()
            .map(|l| {
                (
                    l["data"]["bucket"].as_str().unwrap(),
                    l["data"]["has_more"].as_bool().unwrap(),
                    l["data"]["after"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(order, vec![("hi", false, "0"), ("lo", true, "0"), ("lo2", false, "5"), ("lo", false, "2")]);
    }
}
