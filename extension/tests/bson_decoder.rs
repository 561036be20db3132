//! oplite's BSON decoder against an independent encoder, the `bson` crate.
//!
//! Every document here is built as `bson::Document` values with explicit
//! element types (int32, int64, double, ...) and encoded by that crate, then
//! decoded by `oplite::bson::from_slice` into `serde_json::Value` or by
//! `oplite::sync::line::parse_binary` into typed sync lines. The expected
//! values are written out by hand, so a decoder that drops, widens or
//! misreads an element fails here.

use std::borrow::Cow;

use bson::oid::ObjectId;
use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, DateTime, Decimal128, Document, Timestamp};
use oplite::bson::{from_slice, BsonError, MAX_DEPTH};
use oplite::sync::checksum::Checksum;
use oplite::sync::line::{parse_binary, parse_text, BucketSubscription, ErrorSource, OpType, SyncLine};
use serde_json::{json, Value};

/// The `bson` crate's encoding of `doc`.
fn encode(doc: &Document) -> Vec<u8> {
    doc.to_vec().expect("the bson crate encodes the document")
}

/// oplite's decoding of `bytes` into a generic JSON value.
fn decode(bytes: &[u8]) -> Value {
    from_slice(bytes).unwrap_or_else(|e| panic!("oplite refused a document the bson crate wrote: {e}"))
}

/// The element type bytes of a document's top-level elements, to show that
/// the encoder wrote the wire types a test means to cover.
fn element_types(bytes: &[u8]) -> Vec<u8> {
    let raw = bson::RawDocument::from_bytes(bytes).unwrap();
    raw.iter().map(|e| e.unwrap().1.element_type() as u8).collect()
}

#[test]
fn scalars_decode_to_json_values_of_the_same_kind() {
    let doc = doc! {
        "s": "text",
        "t": true,
        "f": false,
        "n": Bson::Null,
        "i32": 7i32,
        "i32_min": i32::MIN,
        "i32_max": i32::MAX,
        "i64": 7i64,
        "i64_min": i64::MIN,
        "i64_max": i64::MAX,
        "d": 1.5f64,
        "d_integral": 3.0f64,
        "d_small": 1e-300f64,
        "d_big": -1.7976931348623157e308f64,
    };
    let bytes = encode(&doc);
    assert_eq!(
        element_types(&bytes),
        [0x02, 0x08, 0x08, 0x0A, 0x10, 0x10, 0x10, 0x12, 0x12, 0x12, 0x01, 0x01, 0x01, 0x01]
    );
    let value = decode(&bytes);
    assert_eq!(
        value,
        json!({
            "s": "text", "t": true, "f": false, "n": null,
            "i32": 7, "i32_min": -2147483648i64, "i32_max": 2147483647,
            "i64": 7, "i64_min": i64::MIN, "i64_max": i64::MAX,
            "d": 1.5, "d_integral": 3.0, "d_small": 1e-300, "d_big": -1.7976931348623157e308,
        })
    );
    // Integers stay integers and doubles stay floats, whatever their value:
    // JSON's 3 and 3.0 are different values to serde_json and to SQLite.
    for key in ["i32", "i32_min", "i64", "i64_max"] {
        assert!(value[key].is_i64(), "{key}: {}", value[key]);
    }
    assert!(value["d_integral"].is_f64());
    assert_ne!(value["d_integral"], json!(3));
    assert_eq!(value["d_integral"].to_string(), "3.0");
}

#[test]
fn negative_zero_nan_and_infinities() {
    let doc = doc! {
        "neg_zero": -0.0f64,
        "nan": f64::NAN,
        "inf": f64::INFINITY,
        "neg_inf": f64::NEG_INFINITY,
    };
    let bytes = encode(&doc);
    assert_eq!(element_types(&bytes), [0x01; 4]);
    let value = decode(&bytes);
    // -0.0 keeps its sign; JSON has no NaN or infinity, so serde_json's
    // value type turns them into null.
    let neg_zero = value["neg_zero"].as_f64().unwrap();
    assert!(neg_zero == 0.0 && neg_zero.is_sign_negative());
    assert_eq!(value["neg_zero"].to_string(), "-0.0");
    assert_eq!(value["nan"], Value::Null);
    assert_eq!(value["inf"], Value::Null);
    assert_eq!(value["neg_inf"], Value::Null);

    // A typed `f64` target receives the exact bits.
    #[derive(serde::Deserialize)]
    struct Floats {
        neg_zero: f64,
        nan: f64,
        inf: f64,
        neg_inf: f64,
    }
    let floats: Floats = from_slice(&bytes).unwrap();
    assert_eq!(floats.neg_zero.to_bits(), (-0.0f64).to_bits());
    assert!(floats.nan.is_nan());
    assert_eq!(floats.inf, f64::INFINITY);
    assert_eq!(floats.neg_inf, f64::NEG_INFINITY);
}

#[test]
fn utf8_keys_and_strings_empty_strings_and_nul_in_values() {
    let doc = doc! {
        "ключ": "значение",
        "🎉": "päx ✓ 𝄞",
        "": "empty key",
        "empty": "",
        "nul": "a\u{0}b",
        "日本": { "語": ["ü", "é"] },
    };
    let value = decode(&encode(&doc));
    assert_eq!(
        value,
        json!({
            "ключ": "значение", "🎉": "päx ✓ 𝄞", "": "empty key", "empty": "",
            "nul": "a\u{0}b", "日本": {"語": ["ü", "é"]},
        })
    );
    assert_eq!(value["nul"].as_str().unwrap().len(), 3);
}

#[test]
fn large_strings() {
    let big: String = "0123456789abcdé🎉".repeat(200_000);
    assert!(big.len() > 3_000_000);
    let bytes = encode(&doc! { "big": big.clone(), "after": 1i32 });
    let value = decode(&bytes);
    assert_eq!(value["big"].as_str().unwrap(), big);
    assert_eq!(value["after"], json!(1));

    // A typed target borrows the string from the input instead of copying it.
    #[derive(serde::Deserialize)]
    struct Borrowing<'a> {
        big: &'a str,
    }
    let borrowed: Borrowing = from_slice(&bytes).unwrap();
    assert_eq!(borrowed.big, big);
    assert!(bytes.as_ptr_range().contains(&borrowed.big.as_ptr()));
}

#[test]
fn empty_documents_and_arrays() {
    assert_eq!(decode(&encode(&Document::new())), json!({}));
    assert_eq!(encode(&Document::new()), [5, 0, 0, 0, 0]);
    let value = decode(&encode(&doc! {
        "doc": {},
        "arr": [],
        "arr_of_empty": [{}, [], [[]]],
        "mixed": [1i32, 2i64, 2.5f64, "s", true, Bson::Null, {"k": "v"}, ["x"]],
    }));
    assert_eq!(
        value,
        json!({
            "doc": {}, "arr": [], "arr_of_empty": [{}, [], [[]]],
            "mixed": [1, 2, 2.5, "s", true, null, {"k": "v"}, ["x"]],
        })
    );
}

/// A document nested `levels` deep (the top level counts as one, and so
/// does every embedded document and array), mixing `{"arr": [...]}` and
/// `{"doc": ...}` wrappers, and its JSON twin.
fn nested(levels: usize) -> (Document, Value) {
    let mut doc = doc! { "leaf": 1i32 };
    let mut json = json!({"leaf": 1});
    let mut depth = 1;
    while depth < levels {
        if depth % 3 == 1 && levels - depth >= 2 {
            doc = doc! { "arr": [Bson::Document(doc)] };
            json = json!({"arr": [json]});
            depth += 2;
        } else {
            doc = doc! { "doc": doc };
            json = json!({"doc": json});
            depth += 1;
        }
    }
    (doc, json)
}

#[test]
fn deep_nesting_up_to_the_limit_and_no_further() {
    let (doc, json) = nested(MAX_DEPTH);
    assert_eq!(decode(&encode(&doc)), json);

    let (doc, _) = nested(MAX_DEPTH + 1);
    let err = from_slice::<Value>(&encode(&doc)).unwrap_err();
    assert!(matches!(err, BsonError::TooDeep { limit: MAX_DEPTH, .. }), "{err}");
    assert!(err.to_string().contains(&format!("nested deeper than {MAX_DEPTH} levels")), "{err}");

    // Too deep for a generic value, but a target that ignores the field
    // skips it without descending.
    #[derive(serde::Deserialize)]
    struct Nothing {}
    from_slice::<Nothing>(&encode(&nested(MAX_DEPTH * 4).0)).unwrap();
}

#[test]
fn timestamps_read_as_unsigned_integers() {
    // The one type outside JSON's that the decoder accepts: it reads the
    // eight bytes (increment, then seconds) as one u64.
    let bytes = encode(&doc! { "ts": Timestamp { time: 2, increment: 1 } });
    assert_eq!(element_types(&bytes), [0x11]);
    assert_eq!(decode(&bytes), json!({"ts": (2u64 << 32) | 1}));
}

#[test]
fn binary_has_no_json_value() {
    let bytes = encode(&doc! {
        "row": { "payload": Binary { subtype: BinarySubtype::Generic, bytes: vec![1, 2, 3] } },
    });
    let err = from_slice::<Value>(&bytes).unwrap_err();
    assert!(
        matches!(&err, BsonError::InvalidValue { path, message }
            if path == "row.payload" && message.contains("byte array")),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "invalid type: byte array, expected any valid JSON value (at key \"row.payload\")");

    // A target that asks for bytes gets them, borrowed from the input.
    #[derive(serde::Deserialize)]
    struct Row<'a> {
        payload: &'a [u8],
    }
    #[derive(serde::Deserialize)]
    struct Outer<'a> {
        #[serde(borrow)]
        row: Row<'a>,
    }
    assert_eq!(from_slice::<Outer>(&bytes).unwrap().row.payload, [1, 2, 3]);
}

#[test]
fn types_outside_sync_lines_are_refused_by_name() {
    let cases: Vec<(Bson, u8, &str)> = vec![
        (Bson::ObjectId(ObjectId::from_bytes([7; 12])), 0x07, "ObjectId"),
        (Bson::DateTime(DateTime::from_millis(1_700_000_000_000)), 0x09, "UTC datetime"),
        (Bson::Decimal128(Decimal128::from_bytes([1; 16])), 0x13, "decimal128"),
        (Bson::JavaScriptCode("f()".into()), 0x0D, "JavaScript code"),
        (Bson::Symbol("sym".into()), 0x0E, "symbol"),
        (Bson::Undefined, 0x06, "undefined"),
        (Bson::MaxKey, 0x7F, "max key"),
        (Bson::MinKey, 0xFF, "min key"),
    ];
    #[derive(serde::Deserialize)]
    struct Nothing {}
    for (value, type_byte, name) in cases {
        let top = encode(&doc! { "bad": value.clone() });
        let nested = encode(&doc! { "ok": 1i32, "outer": { "list": ["x", { "bad": value }] } });
        // At the top level, and inside an array inside a document: either
        // way the error names the type and the element's own key.
        for bytes in [&top, &nested] {
            let err = from_slice::<Value>(bytes).unwrap_err();
            assert_eq!(err, BsonError::UnknownElementType { type_byte, key: "bad".into() });
            assert_eq!(
                err.to_string(),
                format!("unsupported BSON element type 0x{type_byte:02x} ({name}) for key \"bad\"")
            );
        }
        // An element of the document being read is refused even when the
        // target ignores it (its size is unknown to the decoder); a nested
        // document the target ignores is skipped whole by its length.
        assert_eq!(
            from_slice::<Nothing>(&top).err(),
            Some(BsonError::UnknownElementType { type_byte, key: "bad".into() })
        );
        assert!(from_slice::<Nothing>(&nested).is_ok(), "{name}");
    }
}

/// Decodes `doc` both ways (generic value and typed sync line), checks the
/// generic value against `json` and that the typed line equals what the JSON
/// text of `json` parses to; returns the encoded bytes.
fn sync_line(doc: &Document, json: &Value) -> Vec<u8> {
    let bytes = encode(doc);
    assert_eq!(&decode(&bytes), json);
    let text = json.to_string();
    let from_text = format!("{:?}", parse_text(&text).unwrap());
    let from_bson = format!("{:?}", parse_binary(&bytes).unwrap());
    assert_eq!(from_bson, from_text);
    bytes
}

#[test]
fn checkpoint_line() {
    let doc = doc! { "checkpoint": {
        "last_op_id": "1000",
        "write_checkpoint": "7",
        "buckets": [
            { "bucket": "global[]", "checksum": -1i32, "priority": 1i32, "count": 3i32,
              "subscriptions": [{ "default": 0i32 }, { "sub": 2i64 }] },
            { "bucket": "user[\"u1\"]", "checksum": 4_294_967_295i64, "count": 5_000_000_000i64 },
            { "bucket": "by_float", "checksum": 12.0f64, "priority": Bson::Null },
        ],
        "streams": [{ "name": "lists", "is_default": true,
                      "errors": [{ "subscription": "default", "message": "no" }, { "subscription": 1i32, "message": "bad" }] }],
    } };
    let json = json!({"checkpoint": {
        "last_op_id": "1000", "write_checkpoint": "7",
        "buckets": [
            {"bucket": "global[]", "checksum": -1, "priority": 1, "count": 3,
             "subscriptions": [{"default": 0}, {"sub": 2}]},
            {"bucket": "user[\"u1\"]", "checksum": 4294967295u32, "count": 5000000000i64},
            {"bucket": "by_float", "checksum": 12.0, "priority": null},
        ],
        "streams": [{"name": "lists", "is_default": true,
                     "errors": [{"subscription": "default", "message": "no"}, {"subscription": 1, "message": "bad"}]}],
    }});
    let bytes = sync_line(&doc, &json);
    let SyncLine::Checkpoint(cp) = parse_binary(&bytes).unwrap() else { panic!("not a checkpoint") };
    assert_eq!(cp.last_op_id, 1000);
    assert_eq!(cp.write_checkpoint, Some(7));
    assert_eq!(cp.buckets.len(), 3);
    let b = &cp.buckets[0];
    assert!(matches!(b.bucket, Cow::Borrowed("global[]")));
    assert_eq!((b.checksum, b.priority(), b.count), (Checksum(u32::MAX), 1, Some(3)));
    assert_eq!(b.subscriptions, [BucketSubscription::Default(0), BucketSubscription::Explicit(2)]);
    let b = &cp.buckets[1];
    assert_eq!((&*b.bucket, b.checksum, b.priority(), b.count), ("user[\"u1\"]", Checksum(u32::MAX), 3, Some(5_000_000_000)));
    let b = &cp.buckets[2];
    assert_eq!((b.checksum, b.priority, b.priority()), (Checksum(12), None, 3));
    assert_eq!(cp.streams.len(), 1);
    assert_eq!((cp.streams[0].name.as_str(), cp.streams[0].is_default), ("lists", true));
    let sources: Vec<_> = cp.streams[0].errors.iter().map(|e| (e.subscription, e.message.as_str())).collect();
    assert_eq!(sources, [(ErrorSource::Default, "no"), (ErrorSource::Explicit(1), "bad")]);
}

#[test]
fn data_line_with_every_op() {
    let doc = doc! { "data": {
        "bucket": "user[\"u1\"]",
        "has_more": true,
        "after": Bson::Null,
        "next_after": "5",
        "data": [
            { "op_id": "1", "op": "PUT", "object_type": "lists", "object_id": "l1",
              "checksum": 10i32, "data": "{\"name\":\"Groceries\",\"n\":1}" },
            { "op_id": 2i64, "op": "PUT", "object_type": "todos", "object_id": "t1", "subkey": "s1",
              "checksum": 3_000_000_000i64, "data": { "b": [1i32, 2.5f64, Bson::Null], "a": "x" } },
            { "op_id": "3", "op": "REMOVE", "object_type": "todos", "object_id": "t2",
              "checksum": -7i32, "data": Bson::Null },
            { "op_id": 4i32, "op": "MOVE", "checksum": 1i32 },
            { "op_id": "9223372036854775807", "op": "CLEAR", "checksum": -0.0f64 },
        ],
    } };
    let json = json!({"data": {
        "bucket": "user[\"u1\"]", "has_more": true, "after": null, "next_after": "5",
        "data": [
            {"op_id": "1", "op": "PUT", "object_type": "lists", "object_id": "l1",
             "checksum": 10, "data": "{\"name\":\"Groceries\",\"n\":1}"},
            {"op_id": 2, "op": "PUT", "object_type": "todos", "object_id": "t1", "subkey": "s1",
             "checksum": 3000000000u32, "data": {"b": [1, 2.5, null], "a": "x"}},
            {"op_id": "3", "op": "REMOVE", "object_type": "todos", "object_id": "t2", "checksum": -7, "data": null},
            {"op_id": 4, "op": "MOVE", "checksum": 1},
            {"op_id": "9223372036854775807", "op": "CLEAR", "checksum": -0.0},
        ],
    }});
    let bytes = sync_line(&doc, &json);
    let SyncLine::Data(data) = parse_binary(&bytes).unwrap() else { panic!("not a data line") };
    assert_eq!(data.bucket, "user[\"u1\"]");
    assert!(data.has_more);
    let ops: Vec<_> = data.data.iter().map(|op| (op.op_id, op.op, op.key(), op.checksum, op.data.as_deref())).collect();
    assert_eq!(
        ops,
        [
            (1, OpType::PUT, "lists/l1/null".to_owned(), Checksum(10), Some("{\"name\":\"Groceries\",\"n\":1}")),
            // Object data is re-encoded as JSON text (keys sorted).
            (2, OpType::PUT, "todos/t1/s1".to_owned(), Checksum(3_000_000_000), Some("{\"a\":\"x\",\"b\":[1,2.5,null]}")),
            (3, OpType::REMOVE, "todos/t2/null".to_owned(), Checksum(-7i32 as u32), None),
            (4, OpType::MOVE, "//null".to_owned(), Checksum(1), None),
            (i64::MAX, OpType::CLEAR, "//null".to_owned(), Checksum(0), None),
        ]
    );
    // Strings of a BSON line are borrowed, never copied.
    assert!(matches!(data.data[0].data, Some(Cow::Borrowed(_))));
    assert!(matches!(data.data[0].object_id, Some(Cow::Borrowed("l1"))));
}

#[test]
fn checkpoint_diff_line() {
    let doc = doc! { "checkpoint_diff": {
        "last_op_id": "12",
        "write_checkpoint": Bson::Null,
        "updated_buckets": [{ "bucket": "b1", "checksum": 99i32, "priority": 0i32 }],
        "removed_buckets": ["old", "gone"],
    } };
    let json = json!({"checkpoint_diff": {
        "last_op_id": "12", "write_checkpoint": null,
        "updated_buckets": [{"bucket": "b1", "checksum": 99, "priority": 0}],
        "removed_buckets": ["old", "gone"],
    }});
    let bytes = sync_line(&doc, &json);
    let SyncLine::CheckpointDiff(diff) = parse_binary(&bytes).unwrap() else { panic!("not a diff") };
    assert_eq!((diff.last_op_id, diff.write_checkpoint), (12, None));
    assert_eq!(diff.updated_buckets.len(), 1);
    assert_eq!((&*diff.updated_buckets[0].bucket, diff.updated_buckets[0].checksum), ("b1", Checksum(99)));
    assert_eq!(diff.updated_buckets[0].priority(), 0);
    assert_eq!(diff.removed_buckets, ["old", "gone"]);
}

#[test]
fn completion_token_and_unknown_lines() {
    let complete = sync_line(&doc! { "checkpoint_complete": { "last_op_id": "12" } }, &json!({"checkpoint_complete": {"last_op_id": "12"}}));
    assert!(matches!(parse_binary(&complete).unwrap(), SyncLine::CheckpointComplete(c) if c.last_op_id == 12));
    let complete = sync_line(&doc! { "checkpoint_complete": { "last_op_id": 1i64 << 40 } }, &json!({"checkpoint_complete": {"last_op_id": 1i64 << 40}}));
    assert!(matches!(parse_binary(&complete).unwrap(), SyncLine::CheckpointComplete(c) if c.last_op_id == 1 << 40));

    let partial = sync_line(
        &doc! { "partial_checkpoint_complete": { "last_op_id": "12", "priority": 1i32 } },
        &json!({"partial_checkpoint_complete": {"last_op_id": "12", "priority": 1}}),
    );
    assert!(matches!(
        parse_binary(&partial).unwrap(),
        SyncLine::PartialCheckpointComplete(p) if p.last_op_id == 12 && p.priority == 1
    ));

    for (value, expected) in [(Bson::Int32(30), 30), (Bson::Int64(3600), 3600), (Bson::Int32(0), 0)] {
        let bytes = sync_line(&doc! { "token_expires_in": value }, &json!({"token_expires_in": expected}));
        assert!(matches!(parse_binary(&bytes).unwrap(), SyncLine::TokenExpiresIn(n) if n == expected));
    }

    let bytes = sync_line(&doc! { "future_kind": { "x": [1i32] } }, &json!({"future_kind": {"x": [1]}}));
    assert!(matches!(parse_binary(&bytes).unwrap(), SyncLine::Unknown(kind) if kind == "future_kind"));
}

#[test]
fn bad_sync_lines_name_the_problem() {
    let cases = [
        (
            doc! { "checkpoint_complete": { "last_op_id": ObjectId::from_bytes([1; 12]) } },
            "unsupported BSON element type 0x07 (ObjectId) for key \"last_op_id\"",
        ),
        (
            doc! { "data": { "bucket": "b", "data": [{ "op_id": "1", "op": "PUT", "checksum": 1i32,
                "data": Binary { subtype: BinarySubtype::Generic, bytes: vec![0] } }] } },
            "(at key \"data.data.0.data\")",
        ),
        (
            doc! { "data": { "bucket": "b", "data": [{ "op_id": "1", "op": "PUT", "checksum": f64::NAN }] } },
            "checksum NaN is not an integral 32-bit number",
        ),
        (
            doc! { "data": { "bucket": "b", "data": [{ "op_id": "1", "op": "PUT", "checksum": f64::INFINITY }] } },
            "checksum inf is not an integral 32-bit number",
        ),
        (
            doc! { "checkpoint": { "last_op_id": "1", "buckets": [{ "bucket": "b", "checksum": 1i32,
                "updated": DateTime::from_millis(0) }] } },
            "unsupported BSON element type 0x09 (UTC datetime) for key \"updated\"",
        ),
        (doc! { "token_expires_in": "soon" }, "invalid type: string \"soon\", expected i64"),
    ];
    for (doc, needle) in cases {
        let err = parse_binary(&encode(&doc)).unwrap_err().to_string();
        assert!(err.contains("malformed sync line (BSON)"), "{doc}: {err}");
        assert!(err.contains(needle), "{doc}: {err}");
    }
}
