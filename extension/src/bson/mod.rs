//! The BSON decoder for sync lines.
//!
//! Sync lines from the PowerSync service may arrive as BSON documents instead
//! of JSON text. Rather than decoding them into a generic document tree and
//! converting that into our types, [`from_slice`] drives serde directly from
//! the bytes: the typed sync-line structs are filled in one pass, strings are
//! borrowed from the input buffer (`&'de str`, `#[serde(borrow)] Cow<'de,
//! str>`) instead of being copied, and fields we don't know are skipped by
//! their length prefix without being decoded. The extension only reads BSON;
//! tests and tools encode it with the `bson` crate or the test-data writer.
//!
//! Supported element types: double (0x01), string (0x02), embedded document
//! (0x03), array (0x04), binary (0x05), boolean (0x08), null (0x0A), int32
//! (0x10), timestamp (0x11, read as `u64`) and int64 (0x12). Other types
//! (ObjectId, datetime, regex, decimal128, ...) are rejected with
//! [`BsonError::UnknownElementType`]. The decoder validates all framing
//! (lengths, NUL terminators, UTF-8 when a string is used) and never panics
//! or reads out of bounds on malformed input; nesting is limited to
//! [`MAX_DEPTH`] levels. It reports `is_human_readable() == true`, matching
//! the JSON encoding of the same data.

mod de;
mod error;

pub use de::{from_slice, MAX_DEPTH};
pub use error::BsonError;

/// Element type bytes from the BSON specification.
const TYPE_DOUBLE: u8 = 0x01;
const TYPE_STRING: u8 = 0x02;
const TYPE_DOCUMENT: u8 = 0x03;
const TYPE_ARRAY: u8 = 0x04;
const TYPE_BINARY: u8 = 0x05;
const TYPE_BOOL: u8 = 0x08;
const TYPE_NULL: u8 = 0x0A;
const TYPE_INT32: u8 = 0x10;
const TYPE_TIMESTAMP: u8 = 0x11;
const TYPE_INT64: u8 = 0x12;

#[cfg(test)]
mod tests {
    use super::{from_slice, BsonError, MAX_DEPTH};
    use serde::{Deserialize, Serialize};
    use serde_json::{json, Value as Json};
    use std::borrow::Cow;
    use std::collections::{BTreeMap, HashMap};

    /// The spec's example document `{"hello": "world"}`.
    pub(super) const HELLO: &[u8] = b"\x16\x00\x00\x00\x02hello\x00\x06\x00\x00\x00world\x00\x00";

    /// Encodes `value` with the `bson` crate, an encoder written
    /// independently of our decoder.
    pub(super) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
        bson::serialize_to_vec(value).expect("the bson crate encodes the value")
    }

    /// Wraps element bytes into a document with a correct length prefix.
    pub(super) fn doc(elements: &[u8]) -> Vec<u8> {
        let mut out = ((elements.len() + 5) as i32).to_le_bytes().to_vec();
        out.extend_from_slice(elements);
        out.push(0);
        out
    }

    /// One element: type byte, key, NUL, payload.
    pub(super) fn el(type_byte: u8, key: &str, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![type_byte];
        out.extend_from_slice(key.as_bytes());
        out.push(0);
        out.extend_from_slice(payload);
        out
    }

    /// A string payload: length (including NUL), bytes, NUL.
    pub(super) fn string(s: &[u8]) -> Vec<u8> {
        let mut out = ((s.len() + 1) as i32).to_le_bytes().to_vec();
        out.extend_from_slice(s);
        out.push(0);
        out
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Inner {
        a: i32,
        b: Option<String>,
        c: Vec<f64>,
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Id(String);

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    enum Op {
        Put,
        Remove,
        Wrap(Inner),
        Pair(i64, String),
        Move { from: u32, to: u32 },
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Line<'a> {
        #[serde(borrow)]
        name: Cow<'a, str>,
        raw: &'a str,
        opt_raw: Option<&'a str>,
        id: Id,
        count: u64,
        small: u8,
        neg: i16,
        big: i64,
        wide: u32,
        ratio: f32,
        flag: bool,
        nothing: Option<i32>,
        present: Option<Inner>,
        nested: Vec<Vec<Inner>>,
        ops: Vec<Op>,
        tuple: (u8, String, bool),
        map: BTreeMap<String, i32>,
        #[serde(serialize_with = "keys_as_text")]
        int_keys: HashMap<i64, bool>,
        #[serde(serialize_with = "as_bytes")]
        blob: &'a [u8],
        #[serde(serialize_with = "as_bytes")]
        blob_vec: Vec<u8>,
        unit: (),
    }

    fn as_bytes<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }

    /// BSON keys are text; the `bson` crate refuses integer map keys, so they
    /// are written in decimal here and the decoder parses them back.
    fn keys_as_text<S: serde::Serializer>(m: &HashMap<i64, bool>, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(m.iter().map(|(k, v)| (k.to_string(), v)))
    }

    #[test]
    fn typed_round_trip() {
        let inner = |a| Inner {
            a,
            b: Some(format!("b{a}")),
            c: vec![0.5, -1e300],
        };
        let line = Line {
            name: Cow::Borrowed("päx"),
            raw: "raw \0 with nul",
            opt_raw: Some(""),
            id: Id("row-1".into()),
            count: i64::MAX as u64,
            small: 255,
            neg: -300,
            big: i64::MIN,
            wide: u32::MAX,
            ratio: 0.25,
            flag: true,
            nothing: None,
            present: Some(Inner {
                a: 1,
                b: None,
                c: vec![],
            }),
            nested: vec![vec![], vec![inner(2), inner(3)]],
            ops: vec![
                Op::Put,
                Op::Remove,
                Op::Wrap(inner(4)),
                Op::Pair(-1, "x".into()),
                Op::Move { from: 1, to: 2 },
            ],
            tuple: (7, "t".into(), false),
            map: BTreeMap::from([("k1".into(), 1), ("k2".into(), -2)]),
            int_keys: HashMap::from([(-5, true), (1 << 40, false)]),
            blob: &[0, 1, 2, 255],
            blob_vec: vec![9; 3],
            unit: (),
        };
        let bytes = encode(&line);
        let back: Line = from_slice(&bytes).unwrap();
        assert_eq!(back, line);
        assert!(matches!(back.name, Cow::Borrowed(_)));
        assert!(bytes.as_ptr_range().contains(&back.blob.as_ptr()));
        // Parts of the same bytes also read as generic JSON values (binary
        // elements cannot: `serde_json::Value` has no bytes variant).
        #[derive(Deserialize)]
        struct Partial {
            ops: Json,
            int_keys: Json,
        }
        let partial: Partial = from_slice(&bytes).unwrap();
        assert_eq!(
            partial.ops[2],
            json!({"Wrap": {"a": 4, "b": "b4", "c": [0.5, -1e300]}})
        );
        assert_eq!(partial.int_keys["-5"], json!(true));
        assert!(from_slice::<Json>(&bytes).is_err());
    }

    #[test]
    fn json_value_round_trip() {
        let value = json!({
            "null": null, "t": true, "f": false, "zero": 0, "neg": -42, "big": i64::MAX,
            "min": i64::MIN, "float": 3.25, "tiny": 1e-300, "s": "ünïcødé 🎉", "empty": "",
            "arr": [1, "two", [3, [4]], {"five": 5}, null], "obj": {}, "list": [],
            "deep": {"a": {"b": {"c": [{"d": "e"}]}}}
        });
        let bytes = encode(&value);
        assert_eq!(from_slice::<Json>(&bytes).unwrap(), value);
    }

    #[test]
    fn any_based_targets() {
        #[derive(Deserialize, Debug, PartialEq)]
        #[serde(untagged)]
        enum Untagged<'a> {
            Num(i64),
            Text(&'a str),
            Obj { x: f64 },
        }
        #[derive(Deserialize, Debug, PartialEq)]
        #[serde(tag = "type")]
        enum Tagged {
            A { v: u8 },
            B,
        }
        #[derive(Deserialize, Debug, PartialEq)]
        struct Doc<'a> {
            #[serde(borrow)]
            u: Vec<Untagged<'a>>,
            t: Vec<Tagged>,
            #[serde(flatten)]
            rest: BTreeMap<String, Json>,
        }
        let bytes = encode(&json!({
            "u": [1, "s", {"x": 1.5}], "t": [{"type": "A", "v": 3}, {"type": "B"}], "extra": [1]
        }));
        let parsed: Doc = from_slice(&bytes).unwrap();
        assert_eq!(
            parsed.u,
            [
                Untagged::Num(1),
                Untagged::Text("s"),
                Untagged::Obj { x: 1.5 }
            ]
        );
        assert_eq!(parsed.t, [Tagged::A { v: 3 }, Tagged::B]);
        assert_eq!(parsed.rest, BTreeMap::from([("extra".into(), json!([1]))]));
    }

    #[test]
    fn options_numbers_and_unknown_fields() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Target {
            a: Option<u32>,
            b: Option<u32>,
            c: Option<String>,
        }
        let bytes =
            encode(&json!({"a": 5u64 << 20, "c": null, "x": {"y": [1, {"z": b"b"[0]}]}}));
        let target: Target = from_slice(&bytes).unwrap();
        assert_eq!(
            target,
            Target {
                a: Some(5 << 20),
                b: None,
                c: None
            }
        );

        // int64 that does not fit the target type, and a type mismatch, name the key path.
        let bytes = encode(&json!({"outer": {"list": [0, {"a": -1}]}}));
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct Outer {
            outer: Mid,
        }
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct Mid {
            list: (u8, Target),
        }
        let err = from_slice::<Outer>(&bytes).unwrap_err();
        assert!(matches!(&err, BsonError::InvalidValue { path, .. } if path == "outer.list.1.a"));
        assert!(err.to_string().contains("invalid value"), "{err}");
        let err = from_slice::<Target>(&encode(&json!({"c": 1}))).unwrap_err();
        assert!(err.to_string().contains("\"c\""), "{err}");
        let err = from_slice::<Mid>(&encode(&json!({}))).unwrap_err();
        assert_eq!(err, BsonError::Message("missing field `list`".into()));
    }
    #[test]
    fn borrowed_strings_point_into_input() {
        #[derive(Deserialize)]
        struct Line<'a> {
            a: &'a str,
            #[serde(borrow)]
            b: std::borrow::Cow<'a, str>,
            c: Vec<&'a str>,
        }
        let bytes = encode(&json!({"a": "first", "b": "second", "c": ["x", "yz"]}));
        let line: Line = from_slice(&bytes).unwrap();
        assert!(matches!(line.b, std::borrow::Cow::Borrowed(_)));
        let range = bytes.as_ptr_range();
        for s in [line.a, &*line.b, line.c[0], line.c[1]] {
            let p = s.as_bytes().as_ptr_range();
            assert!(
                range.start <= p.start && p.end <= range.end,
                "{s:?} was copied"
            );
        }
    }

    #[test]
    fn truncation_at_every_offset_fails() {
        let bytes = encode(&json!({
            "s": "text", "n": null, "i": 1, "l": 1u64 << 40, "f": 0.5, "t": true,
            "o": {"x": [1, "two", {"three": 3}]}, "a": []
        }));
        from_slice::<Json>(&bytes).unwrap();
        for len in 0..bytes.len() {
            assert!(
                from_slice::<Json>(&bytes[..len]).is_err(),
                "prefix of {len} bytes"
            );
            // Also with a patched length prefix, so inner framing is exercised.
            let mut cut = bytes[..len].to_vec();
            if len >= 5 {
                cut[..4].copy_from_slice(&(len as i32).to_le_bytes());
                let last = cut.len() - 1;
                cut[last] = 0;
                let _ = from_slice::<Json>(&cut);
            }
        }
    }

    #[test]
    fn mutated_inputs_never_panic() {
        let bytes = encode(&json!({
            "id": "abc", "data": [{"k": 1, "v": [true, null, 2.5]}, "s"], "n": -7, "big": 1u64 << 50
        }));
        for pos in 0..bytes.len() {
            for value in [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x0A, 0x7F, 0x80, 0xFF] {
                let mut mutated = bytes.clone();
                mutated[pos] = value;
                let _ = from_slice::<Json>(&mutated);
                let _ = from_slice::<serde::de::IgnoredAny>(&mutated);
            }
        }
    }

    #[test]
    fn bad_lengths() {
        let eof = |r: Result<Json, BsonError>| matches!(r, Err(BsonError::UnexpectedEof { .. }));
        assert!(eof(from_slice(b"")));
        assert!(eof(from_slice(b"\x05\x00\x00")));
        assert!(eof(from_slice(b"\x06\x00\x00\x00\x00")));
        assert!(matches!(
            from_slice::<Json>(b"\x04\x00\x00\x00\x00"),
            Err(BsonError::InvalidLength {
                what: "document",
                len: 4,
                at: 0
            })
        ));
        assert!(matches!(
            from_slice::<Json>(b"\xff\xff\xff\xff\x00"),
            Err(BsonError::InvalidLength { len: -1, .. })
        ));
        let mut trailing = HELLO.to_vec();
        trailing.push(0);
        assert_eq!(
            from_slice::<Json>(&trailing),
            Err(BsonError::TrailingBytes { at: 22 })
        );
        // Declared shorter than the actual element list: terminator check.
        let mut short = HELLO.to_vec();
        short[0] = 0x15;
        assert!(from_slice::<Json>(&short[..0x15]).is_err());
        // Premature terminator inside the declared length.
        let mut early = doc(&el(0x0A, "n", &[]));
        early.insert(early.len() - 1, 0);
        early[0] += 1;
        assert!(matches!(
            from_slice::<Json>(&early),
            Err(BsonError::InvalidLength { .. })
        ));

        let bad = |payload: &[u8]| from_slice::<Json>(&doc(&el(0x02, "s", payload))).unwrap_err();
        for len in [0i32, -5, 100, i32::MAX, i32::MIN] {
            let mut payload = len.to_le_bytes().to_vec();
            payload.extend_from_slice(b"ab\0");
            let err = bad(&payload);
            assert!(
                matches!(err, BsonError::InvalidLength { what: "string", .. }),
                "{err}"
            );
        }
        let nested =
            |payload: &[u8]| from_slice::<Json>(&doc(&el(0x03, "o", payload))).unwrap_err();
        assert!(matches!(
            nested(b"\x04\x00\x00\x00"),
            BsonError::InvalidLength { .. }
        ));
        assert!(matches!(
            nested(b"\x09\x00\x00\x00\x00"),
            BsonError::InvalidLength { .. }
        ));
        assert!(matches!(
            nested(b"\x05\x00\x00\x00\x01"),
            BsonError::MissingNul { .. }
        ));
        let binary =
            |payload: &[u8]| from_slice::<Json>(&doc(&el(0x05, "b", payload))).unwrap_err();
        assert!(matches!(
            binary(b"\xff\xff\xff\xff\x00"),
            BsonError::InvalidLength { .. }
        ));
        assert!(matches!(
            binary(b"\x03\x00\x00\x00\x00ab"),
            BsonError::InvalidLength { .. }
        ));
        assert!(matches!(
            binary(b"\x05\x00\x00\x00\x02\x02\x00\x00\x00a"),
            BsonError::InvalidLength { .. }
        ));
        let short_int = doc(&el(0x12, "l", &[1, 2, 3]));
        assert!(matches!(
            from_slice::<Json>(&short_int),
            Err(BsonError::UnexpectedEof { .. })
        ));
    }

    #[test]
    fn missing_nul_and_bad_utf8() {
        let err = from_slice::<Json>(&doc(&el(0x02, "s", b"\x03\x00\x00\x00abc"))).unwrap_err();
        assert!(matches!(err, BsonError::MissingNul { .. }), "{err}");
        // A key that runs into the document terminator.
        let err = from_slice::<Json>(&doc(b"\x0Akey")).unwrap_err();
        assert!(matches!(err, BsonError::MissingNul { .. }), "{err}");

        let err = from_slice::<Json>(&doc(&el(0x02, "name", &string(b"a\xffb")))).unwrap_err();
        assert!(
            matches!(&err, BsonError::InvalidUtf8 { key, .. } if key == "name"),
            "{err}"
        );
        assert!(err.to_string().contains("\"name\""));
        let err = from_slice::<Json>(&doc(b"\x0Ak\xc3\x00")).unwrap_err();
        assert!(matches!(err, BsonError::InvalidKey { at: 5 }), "{err}");
        // Strings are validated only when used: an ignored bad string is fine.
        #[derive(Deserialize)]
        struct Nothing {}
        from_slice::<Nothing>(&doc(&el(0x02, "name", &string(b"\xff")))).unwrap();
    }

    #[test]
    fn invalid_bool_and_unknown_types() {
        let err = from_slice::<Json>(&doc(&el(0x08, "flag", &[2]))).unwrap_err();
        assert_eq!(
            err,
            BsonError::InvalidBool {
                key: "flag".into(),
                byte: 2
            }
        );
        let err = from_slice::<Json>(&doc(&el(0x07, "_id", &[0; 12]))).unwrap_err();
        assert_eq!(
            err,
            BsonError::UnknownElementType {
                type_byte: 0x07,
                key: "_id".into()
            }
        );
        assert_eq!(err.to_string(), "unsupported BSON element type 0x07 (ObjectId) for key \"_id\"");
    }

    pub(super) fn nested(levels: usize) -> Vec<u8> {
        let mut bytes = doc(&[]);
        for _ in 1..levels {
            bytes = doc(&el(0x03, "a", &bytes));
        }
        bytes
    }

    #[test]
    fn nesting_limit() {
        from_slice::<Json>(&nested(MAX_DEPTH)).unwrap();
        let err = from_slice::<Json>(&nested(MAX_DEPTH + 1)).unwrap_err();
        assert!(
            matches!(
                err,
                BsonError::TooDeep {
                    limit: MAX_DEPTH,
                    ..
                }
            ),
            "{err}"
        );
        let err = from_slice::<Json>(&nested(5_000)).unwrap_err();
        assert!(matches!(err, BsonError::TooDeep { .. }), "{err}");
        // Ignored values are skipped without descending into them.
        #[derive(Deserialize)]
        struct Nothing {}
        from_slice::<Nothing>(&nested(5_000)).unwrap();
    }

    #[test]
    fn enum_document_must_have_one_key() {
        #[derive(Deserialize, Debug)]
        enum E {
            A(i32),
        }
        let two = doc(&[el(0x10, "A", &[1, 0, 0, 0]), el(0x10, "B", &[1, 0, 0, 0])].concat());
        assert!(matches!(
            from_slice::<E>(&two),
            Err(BsonError::InvalidEnum { at: 0 })
        ));
        assert!(matches!(
            from_slice::<E>(&doc(&[])),
            Err(BsonError::InvalidEnum { .. })
        ));
        assert!(matches!(
            from_slice::<E>(&doc(&el(0x10, "A", &[1, 0, 0, 0]))),
            Ok(E::A(1))
        ));
    }
}
