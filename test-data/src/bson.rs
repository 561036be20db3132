//! A minimal BSON writer for generated sync lines.
//!
//! The generators write bytes straight from their loops without building a
//! `serde_json::Value` per op, and this crate cannot depend on the extension
//! (the extension's tests depend on this crate). So this is a writer only,
//! for the element types sync lines use: string, document, array, bool,
//! null, int32, int64, double. `cli/tests/bson_lines.rs` checks its output
//! against oplite's decoder and against the `bson` crate's encoding.

use serde_json::Value;

/// Element type bytes (BSON specification).
const DOUBLE: u8 = 0x01;
const STRING: u8 = 0x02;
const DOCUMENT: u8 = 0x03;
const ARRAY: u8 = 0x04;
const BOOL: u8 = 0x08;
const NULL: u8 = 0x0A;
const INT32: u8 = 0x10;
const INT64: u8 = 0x12;

/// Writes one BSON document (or array) into a buffer; nested documents are
/// opened with [`DocWriter::begin_doc`] / [`DocWriter::begin_array`] and
/// closed with [`DocWriter::end`]. Lengths are patched in when a document
/// ends.
pub struct DocWriter<'a> {
    out: &'a mut Vec<u8>,
    /// Start offsets of the open documents.
    open: Vec<usize>,
}

impl<'a> DocWriter<'a> {
    /// Starts the top-level document at the end of `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        let start = out.len();
        out.extend_from_slice(&[0; 4]);
        DocWriter { out, open: vec![start] }
    }

    fn key(&mut self, kind: u8, key: &str) {
        debug_assert!(!key.as_bytes().contains(&0), "BSON keys cannot contain NUL");
        self.out.push(kind);
        self.out.extend_from_slice(key.as_bytes());
        self.out.push(0);
    }

    /// A string element.
    pub fn string(&mut self, key: &str, value: &str) {
        self.key(STRING, key);
        self.out.extend_from_slice(&((value.len() + 1) as i32).to_le_bytes());
        self.out.extend_from_slice(value.as_bytes());
        self.out.push(0);
    }

    /// A boolean element.
    pub fn bool(&mut self, key: &str, value: bool) {
        self.key(BOOL, key);
        self.out.push(value as u8);
    }

    /// A null element.
    pub fn null(&mut self, key: &str) {
        self.key(NULL, key);
    }

    /// An integer: int32 when it fits, int64 otherwise.
    pub fn int(&mut self, key: &str, value: i64) {
        match i32::try_from(value) {
            Ok(small) => {
                self.key(INT32, key);
                self.out.extend_from_slice(&small.to_le_bytes());
            }
            Err(_) => {
                self.key(INT64, key);
                self.out.extend_from_slice(&value.to_le_bytes());
            }
        }
    }

    /// A double element.
    pub fn double(&mut self, key: &str, value: f64) {
        self.key(DOUBLE, key);
        self.out.extend_from_slice(&value.to_le_bytes());
    }

    /// Opens an embedded document under `key`.
    pub fn begin_doc(&mut self, key: &str) {
        self.key(DOCUMENT, key);
        self.open.push(self.out.len());
        self.out.extend_from_slice(&[0; 4]);
    }

    /// Opens an array under `key`; its elements use the keys "0", "1", ...
    /// (see [`index_key`]).
    pub fn begin_array(&mut self, key: &str) {
        self.key(ARRAY, key);
        self.open.push(self.out.len());
        self.out.extend_from_slice(&[0; 4]);
    }

    /// Closes the innermost open document or array.
    pub fn end(&mut self) {
        let start = self.open.pop().expect("DocWriter::end without an open document");
        self.out.push(0);
        let len = (self.out.len() - start) as i32;
        self.out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    }

    /// Closes every open document, including the top-level one.
    pub fn finish(mut self) {
        while !self.open.is_empty() {
            self.end();
        }
    }

    /// Writes a JSON value under `key`.
    pub fn json(&mut self, key: &str, value: &Value) {
        match value {
            Value::Null => self.null(key),
            Value::Bool(b) => self.bool(key, *b),
            Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => self.int(key, i),
                (None, Some(u), _) => self.double(key, u as f64),
                (_, _, Some(f)) => self.double(key, f),
                _ => self.null(key),
            },
            Value::String(s) => self.string(key, s),
            Value::Array(items) => {
                self.begin_array(key);
                let mut index = IndexKey::default();
                for item in items {
                    self.json(index.next_key(), item);
                }
                self.end();
            }
            Value::Object(map) => {
                self.begin_doc(key);
                for (k, v) in map {
                    self.json(k, v);
                }
                self.end();
            }
        }
    }
}

/// Array keys "0", "1", "2", ... without an allocation per element.
#[derive(Default)]
pub struct IndexKey {
    next: usize,
    buf: String,
}

impl IndexKey {
    /// The key of the next element.
    pub fn next_key(&mut self) -> &str {
        use std::fmt::Write;
        self.buf.clear();
        let _ = write!(self.buf, "{}", self.next);
        self.next += 1;
        &self.buf
    }
}

/// The key of element `i` of an array.
pub fn index_key(i: usize) -> String {
    i.to_string()
}

/// Encodes a JSON object as one BSON document. Panics if `value` is not an
/// object (a sync line always is).
pub fn from_json(value: &Value) -> Vec<u8> {
    let map = value.as_object().expect("a BSON document must be a JSON object");
    let mut out = Vec::new();
    let mut doc = DocWriter::new(&mut out);
    for (k, v) in map {
        doc.json(k, v);
    }
    doc.finish();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hello_world_matches_the_specification() {
        assert_eq!(
            from_json(&json!({"hello": "world"})),
            b"\x16\x00\x00\x00\x02hello\x00\x06\x00\x00\x00world\x00\x00".to_vec()
        );
    }

    #[test]
    fn nested_lengths_are_patched() {
        let bytes = from_json(&json!({"a": {"b": [1, true, null]}, "c": 5_000_000_000i64}));
        let total = i32::from_le_bytes(bytes[0..4].try_into().unwrap()) as usize;
        assert_eq!(total, bytes.len());
        assert_eq!(*bytes.last().unwrap(), 0);
        // "c" is an int64.
        assert!(bytes.windows(2).any(|w| w == [INT64, b'c']));
    }
}
