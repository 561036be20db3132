//! Sync lines as typed structs, decoded straight from JSON text or BSON.
//!
//! Every line is an object with one key naming its kind. The structs borrow
//! from the input where the encoding allows (BSON strings always, JSON
//! strings without escapes), so a data line of 1000 ops costs one `Vec` and
//! the op data that had to be unescaped, not a generic JSON tree.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::checksum::Checksum;
use crate::error::{OpliteError, Result};

/// The default bucket priority when a checkpoint names none.
pub const DEFAULT_PRIORITY: i32 = 3;

/// One line of the sync stream.
#[derive(Debug)]
pub enum SyncLine<'a> {
    /// A full checkpoint: every bucket the client should hold.
    Checkpoint(Checkpoint<'a>),
    /// Changes to the last checkpoint.
    CheckpointDiff(CheckpointDiff<'a>),
    /// All data of the checkpoint has been sent.
    CheckpointComplete(CheckpointComplete),
    /// All data of buckets up to a priority has been sent.
    PartialCheckpointComplete(PartialCheckpointComplete),
    /// Ops for one bucket.
    Data(DataLine<'a>),
    /// Seconds until the token expires (also a keep-alive).
    TokenExpiresIn(i64),
    /// A line of a kind this client does not know; logged and ignored.
    Unknown(String),
}

/// `{"checkpoint": ...}`
#[derive(Debug, Deserialize)]
pub struct Checkpoint<'a> {
    /// The op id the checkpoint is complete at.
    #[serde(deserialize_with = "op_id")]
    pub last_op_id: i64,
    /// The write checkpoint the server has processed uploads up to.
    #[serde(default, deserialize_with = "optional_op_id")]
    pub write_checkpoint: Option<i64>,
    /// Every bucket with its checksum.
    #[serde(borrow)]
    pub buckets: Vec<BucketChecksum<'a>>,
    /// The streams the server syncs for this client.
    #[serde(default)]
    pub streams: Vec<StreamDescription>,
}

/// `{"checkpoint_diff": ...}`
#[derive(Debug, Deserialize)]
pub struct CheckpointDiff<'a> {
    /// The op id the new checkpoint is complete at.
    #[serde(deserialize_with = "op_id")]
    pub last_op_id: i64,
    /// The write checkpoint the server has processed uploads up to.
    #[serde(default, deserialize_with = "optional_op_id")]
    pub write_checkpoint: Option<i64>,
    /// Buckets added or changed.
    #[serde(borrow)]
    pub updated_buckets: Vec<BucketChecksum<'a>>,
    /// Buckets no longer part of the checkpoint.
    #[serde(borrow)]
    pub removed_buckets: Vec<Cow<'a, str>>,
}

/// A bucket's entry in a checkpoint.
#[derive(Clone, Debug, Deserialize)]
pub struct BucketChecksum<'a> {
    /// The bucket's name.
    #[serde(borrow)]
    pub bucket: Cow<'a, str>,
    /// The sum of all op checksums of the bucket.
    pub checksum: Checksum,
    /// 0 is highest; 3 when absent.
    #[serde(default, deserialize_with = "optional_priority")]
    pub priority: Option<i32>,
    /// The number of ops in the bucket, for progress.
    #[serde(default)]
    pub count: Option<i64>,
    /// The streams the bucket is synced for.
    #[serde(default)]
    pub subscriptions: Vec<BucketSubscription>,
}

impl BucketChecksum<'_> {
    /// The priority, defaulting to 3.
    pub fn priority(&self) -> i32 {
        self.priority.unwrap_or(DEFAULT_PRIORITY)
    }

    /// A copy that owns its strings.
    pub fn into_owned(self) -> BucketChecksum<'static> {
        BucketChecksum {
            bucket: Cow::Owned(self.bucket.into_owned()),
            checksum: self.checksum,
            priority: self.priority,
            count: self.count,
            subscriptions: self.subscriptions,
        }
    }
}

/// A stream the server included in a checkpoint.
#[derive(Clone, Debug, Deserialize)]
pub struct StreamDescription {
    /// The stream's name.
    pub name: String,
    /// Whether the server syncs it without a subscription.
    pub is_default: bool,
    /// Subscriptions to it the server could not resolve.
    pub errors: Vec<StreamError>,
}

/// A subscription the server could not resolve.
#[derive(Clone, Debug, Deserialize)]
pub struct StreamError {
    /// Which subscription.
    pub subscription: ErrorSource,
    /// The server's explanation.
    pub message: String,
}

/// What a [`StreamError`] is about: the default subscription (any string)
/// or the request's explicit subscription at an index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorSource {
    /// The stream's default subscription.
    Default,
    /// `streams.subscriptions[i]` of the request.
    Explicit(usize),
}

impl<'de> Deserialize<'de> for ErrorSource {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SourceVisitor;
        impl Visitor<'_> for SourceVisitor {
            type Value = ErrorSource;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"default\" or the index of a requested subscription")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<ErrorSource, E> {
                Ok(ErrorSource::Default)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ErrorSource, E> {
                usize::try_from(v).map(ErrorSource::Explicit).map_err(|_| E::custom("subscription index too large"))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ErrorSource, E> {
                usize::try_from(v)
                    .map(ErrorSource::Explicit)
                    .map_err(|_| E::custom(format!("subscription index {v} is negative")))
            }
        }
        deserializer.deserialize_any(SourceVisitor)
    }
}

/// Why a checkpoint bucket is synced: `{"default": i}` (the checkpoint's
/// stream i) or `{"sub": i}` (the request's subscription i).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BucketSubscription {
    /// Derived from the default stream at this index of the checkpoint's streams.
    Default(usize),
    /// Derived from the explicit subscription at this index of the request.
    Explicit(usize),
}

impl<'de> Deserialize<'de> for BucketSubscription {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ReasonVisitor;
        impl<'de> Visitor<'de> for ReasonVisitor {
            type Value = BucketSubscription;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a bucket subscription: {\"default\": index} or {\"sub\": index}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let key: Cow<'de, str> =
                    map.next_key()?.ok_or_else(|| de::Error::custom("empty bucket subscription object"))?;
                let reason = match &*key {
                    "default" => BucketSubscription::Default(map.next_value()?),
                    "sub" => BucketSubscription::Explicit(map.next_value()?),
                    other => return Err(de::Error::unknown_variant(other, &["default", "sub"])),
                };
                if map.next_key::<IgnoredAny>()?.is_some() {
                    return Err(de::Error::custom("a bucket subscription has exactly one key"));
                }
                Ok(reason)
            }
        }
        deserializer.deserialize_map(ReasonVisitor)
    }
}

/// `{"checkpoint_complete": ...}`
#[derive(Debug, Deserialize)]
pub struct CheckpointComplete {
    /// The op id of the completed checkpoint.
    #[serde(deserialize_with = "op_id")]
    pub last_op_id: i64,
}

/// `{"partial_checkpoint_complete": ...}`
#[derive(Debug, Deserialize)]
pub struct PartialCheckpointComplete {
    /// The op id of the checkpoint.
    #[serde(deserialize_with = "op_id")]
    pub last_op_id: i64,
    /// Buckets of this priority or higher (lower number) are complete.
    #[serde(deserialize_with = "priority")]
    pub priority: i32,
}

/// `{"data": ...}`
#[derive(Debug, Deserialize)]
pub struct DataLine<'a> {
    /// The bucket the ops belong to.
    #[serde(borrow)]
    pub bucket: Cow<'a, str>,
    /// The ops, in op id order.
    #[serde(borrow)]
    pub data: Vec<OplogEntry<'a>>,
    /// Whether more data for this bucket follows in this checkpoint.
    #[serde(default)]
    pub has_more: bool,
}

/// The kind of an op.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum OpType {
    /// A row's new content.
    PUT,
    /// The row leaves this bucket.
    REMOVE,
    /// Only its checksum counts.
    MOVE,
    /// The bucket is emptied.
    CLEAR,
}

/// One op of a data line.
#[derive(Debug, Deserialize)]
pub struct OplogEntry<'a> {
    /// Its op id.
    #[serde(deserialize_with = "op_id")]
    pub op_id: i64,
    /// What it does.
    pub op: OpType,
    /// The row's type (table name).
    #[serde(default, borrow, deserialize_with = "optional_str")]
    pub object_type: Option<Cow<'a, str>>,
    /// The row's id.
    #[serde(default, borrow, deserialize_with = "optional_str")]
    pub object_id: Option<Cow<'a, str>>,
    /// Distinguishes several ops for one row in one bucket.
    #[serde(default, borrow, deserialize_with = "optional_str")]
    pub subkey: Option<Cow<'a, str>>,
    /// The op's checksum.
    pub checksum: Checksum,
    /// The row as JSON text (PUT only).
    #[serde(default, borrow, deserialize_with = "op_data")]
    pub data: Option<Cow<'a, str>>,
}

impl OplogEntry<'_> {
    /// The op's key within its bucket: `type/id/subkey`, with the text
    /// `null` for a missing subkey (as the reference core writes it).
    pub fn key(&self) -> String {
        format!(
            "{}/{}/{}",
            self.object_type.as_deref().unwrap_or(""),
            self.object_id.as_deref().unwrap_or(""),
            self.subkey.as_deref().unwrap_or("null")
        )
    }
}

/// Decodes a JSON text line.
pub fn parse_text(line: &str) -> Result<SyncLine<'_>> {
    serde_json::from_str(line).map_err(|e| OpliteError::Malformed {
        what: "sync line (JSON)",
        message: e.to_string(),
    })
}

/// Decodes a BSON line.
pub fn parse_binary(line: &[u8]) -> Result<SyncLine<'_>> {
    crate::bson::from_slice(line).map_err(|e| OpliteError::Malformed {
        what: "sync line (BSON)",
        message: e.to_string(),
    })
}

impl<'de> Deserialize<'de> for SyncLine<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(LineVisitor)
    }
}

struct LineVisitor;

impl<'de> Visitor<'de> for LineVisitor {
    type Value = SyncLine<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sync line: an object with one key naming its kind")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let key: Cow<'de, str> = map
            .next_key()?
            .ok_or_else(|| de::Error::custom("empty object: a sync line needs one key naming its kind"))?;
        let line = match &*key {
            "checkpoint" => SyncLine::Checkpoint(map.next_value()?),
            "checkpoint_diff" => SyncLine::CheckpointDiff(map.next_value()?),
            "checkpoint_complete" => SyncLine::CheckpointComplete(map.next_value()?),
            "partial_checkpoint_complete" => SyncLine::PartialCheckpointComplete(map.next_value()?),
            "data" => SyncLine::Data(map.next_value()?),
            "token_expires_in" => SyncLine::TokenExpiresIn(map.next_value()?),
            other => {
                map.next_value::<IgnoredAny>()?;
                SyncLine::Unknown(other.to_owned())
            }
        };
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(line)
    }
}

struct OpIdVisitor;

impl Visitor<'_> for OpIdVisitor {
    type Value = i64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an op id (a decimal string or an integer)")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<i64, E> {
        v.parse::<i64>().map_err(|_| E::custom(format!("op id {v:?} is not a 64-bit integer")))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        i64::try_from(v).map_err(|_| E::custom(format!("op id {v} is not a 64-bit integer")))
    }
}

/// A bucket priority: 0 (the highest) or more. `i32::MAX` is refused too:
/// the reference core keeps it to mean "every priority", and refuses it and
/// negative numbers in lines alike.
fn priority<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i32, D::Error> {
    let value = i32::deserialize(deserializer)?;
    if value < 0 || value == i32::MAX {
        return Err(de::Error::custom(format!("invalid bucket priority {value} (expected 0 to {})", i32::MAX - 1)));
    }
    Ok(value)
}

fn optional_priority<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i32>, D::Error> {
    #[derive(Deserialize)]
    struct Checked(#[serde(deserialize_with = "priority")] i32);
    Ok(Option::<Checked>::deserialize(deserializer)?.map(|Checked(value)| value))
}

fn op_id<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    deserializer.deserialize_any(OpIdVisitor)
}

fn optional_op_id<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<i64>, D::Error> {
    struct OptionalOpId;
    impl<'de> Visitor<'de> for OptionalOpId {
        type Value = Option<i64>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an op id or null")
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            op_id(d).map(Some)
        }
    }
    deserializer.deserialize_option(OptionalOpId)
}

/// An optional string, borrowed from the input when the decoder can.
fn optional_str<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    deserializer.deserialize_option(StrVisitor { reencode_objects: false })
}

/// Op data is JSON text; an object (sent without `raw_data`) is re-encoded.
fn op_data<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    deserializer.deserialize_option(StrVisitor { reencode_objects: true })
}

struct StrVisitor {
    reencode_objects: bool,
}

impl<'de> Visitor<'de> for StrVisitor {
    type Value = Option<Cow<'de, str>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.reencode_objects { "JSON text, an object or null" } else { "a string or null" })
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        if self.reencode_objects {
            d.deserialize_any(self)
        } else {
            d.deserialize_str(self)
        }
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(v)))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        if !self.reencode_objects {
            return Err(de::Error::invalid_type(de::Unexpected::Map, &self));
        }
        let value = serde_json::Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(Some(Cow::Owned(value.to_string())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_checkpoint() {
        let line = parse_text(
            r#"{"checkpoint":{"last_op_id":"3","write_checkpoint":null,"buckets":[{"bucket":"b1","checksum":-1,"priority":0,"count":3},{"bucket":"b2","checksum":6}]}}"#,
        )
        .unwrap();
        let SyncLine::Checkpoint(cp) = line else { panic!("{line:?}") };
        assert_eq!(cp.last_op_id, 3);
        assert_eq!(cp.write_checkpoint, None);
        assert_eq!(cp.buckets[0].checksum, Checksum(u32::MAX));
        assert_eq!(cp.buckets[0].priority(), 0);
        assert_eq!(cp.buckets[1].priority(), 3);
        assert!(matches!(cp.buckets[0].bucket, Cow::Borrowed("b1")));
    }

    #[test]
    fn parses_a_data_line_borrowing_what_it_can() {
        let text = r#"{"data":{"bucket":"b","has_more":false,"after":null,"next_after":"2","data":[
            {"op_id":"9223372036854775807","op":"PUT","object_type":"t","object_id":"a","checksum":1,"data":"{\"n\":1}"},
            {"op_id":"2","op":"REMOVE","object_type":"t","object_id":"b","subkey":"s","checksum":2.0},
            {"op_id":3,"op":"PUT","object_type":"t","object_id":"c","checksum":3,"data":{"n":3}}]}}"#;
        let SyncLine::Data(data) = parse_text(text).unwrap() else { panic!() };
        assert_eq!(data.data.len(), 3);
        assert_eq!(data.data[0].op_id, i64::MAX);
        assert_eq!(data.data[0].data.as_deref(), Some(r#"{"n":1}"#));
        assert!(matches!(data.data[0].object_id, Some(Cow::Borrowed("a"))));
        assert_eq!(data.data[0].key(), "t/a/null");
        assert_eq!(data.data[1].op, OpType::REMOVE);
        assert_eq!(data.data[1].key(), "t/b/s");
        assert_eq!(data.data[2].data.as_deref(), Some(r#"{"n":3}"#));
    }

    #[test]
    fn unknown_kinds_are_reported_not_rejected() {
        let line = parse_text(r#"{"future_thing":{"x":[1,2,3]}}"#).unwrap();
        assert!(matches!(line, SyncLine::Unknown(ref k) if k == "future_thing"));
    }

    #[test]
    fn bad_lines_name_what_is_wrong() {
        for (text, needle) in [
            ("{", "EOF"),
            ("{}", "empty object"),
            ("[1]", "sync line"),
            (r#"{"checkpoint":{"buckets":[]}}"#, "last_op_id"),
            (r#"{"checkpoint_complete":{"last_op_id":"x"}}"#, "not a 64-bit integer"),
            (r#"{"data":{"bucket":"b","data":[{"op_id":"1","op":"EXPLODE","checksum":0}]}}"#, "EXPLODE"),
            (r#"{"data":{"bucket":"b","data":[{"op_id":"1","op":"PUT","checksum":1.5}]}}"#, "integral"),
            (r#"{"data":{"bucket":"b","data":[{"op_id":"99999999999999999999","op":"PUT","checksum":1}]}}"#, "64-bit"),
        ] {
            let err = parse_text(text).unwrap_err().to_string();
            assert!(err.contains("malformed sync line"), "{text}: {err}");
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
