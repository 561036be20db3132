//! Sync diagnostics: with `"diagnostics": {}` in `start`'s options, an
//! iteration reports what it downloads in `HandleDiagnostics` instructions,
//! in the reference core's shapes, for the SDKs' sync inspector:
//!
//! - after every checkpoint (and checkpoint diff), each bucket's progress
//!   (`BucketStateChange`, `incremental: false`, buckets by name);
//! - after every data line of a bucket of the checkpoint being downloaded,
//!   that bucket's progress (`incremental: true`);
//! - the column types synced rows carry: a `SchemaChange` the first time a
//!   column of a type is seen with a value, and when a later value has
//!   another type (a column seen as text stays text; NULL is not a type).
//!
//! Types are read from the op's JSON as it is decoded, key by key; a value
//! that is not a scalar (true, false, an object, an array) ends the op's
//! reading there, as in the reference: the keys before it still count.
//! Separate from `client.rs`, which only calls in after a line is handled.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::line::{BucketChecksum, DataLine};
use super::progress::CounterMap;

/// The payload of `Instruction::HandleDiagnostics`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum DiagnosticsEvent {
    /// Download progress of buckets.
    BucketStateChange {
        /// The buckets reported, by name.
        changes: Vec<BucketState>,
        /// False after a checkpoint (every bucket), true after a data line.
        incremental: bool,
    },
    /// A column was seen with a (new) type.
    SchemaChange(ObservedType),
}

/// One bucket's progress.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BucketState {
    /// The bucket's name.
    pub name: String,
    /// Its counters.
    pub progress: BucketCounters,
}

/// A bucket's priority and counters, as the reference reports them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BucketCounters {
    /// The bucket's priority.
    pub priority: i32,
    /// Ops held at the last full apply.
    pub at_last: i64,
    /// Ops downloaded since.
    pub since_last: i64,
    /// The checkpoint's op count (0 when the server sent none).
    pub target_count: i64,
}

/// A column type seen in synced rows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ObservedType {
    /// The row type.
    pub table: String,
    /// The key in the row's JSON.
    pub column: String,
    /// The type of its value.
    pub value_type: ValueType,
}

/// The type of a synced value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ValueType {
    /// JSON null (never reported).
    Null,
    /// A JSON string.
    String,
    /// A JSON integer.
    Integer,
    /// A JSON number with a fraction or exponent.
    Real,
}

/// The column types seen so far in this iteration.
#[derive(Clone, Debug, Default)]
pub struct Diagnostics {
    seen: HashMap<String, HashMap<String, ValueType>>,
}

fn counters_of(bucket: &BucketChecksum<'_>, counters: &CounterMap) -> BucketCounters {
    let c = counters.get(&bucket.bucket);
    BucketCounters {
        priority: bucket.priority(),
        at_last: c.at_last,
        since_last: c.since_last,
        target_count: bucket.count.unwrap_or(0),
    }
}

fn bucket_change(changes: Vec<BucketState>, incremental: bool) -> DiagnosticsEvent {
    DiagnosticsEvent::BucketStateChange { changes, incremental }
}

impl Diagnostics {
    /// After a checkpoint line: every bucket of the checkpoint.
    pub fn checkpoint(
        &self,
        buckets: &[BucketChecksum<'_>],
        counters: &CounterMap,
        out: &mut Vec<DiagnosticsEvent>,
    ) {
        let by_name: BTreeMap<&str, BucketCounters> =
            buckets.iter().map(|b| (&*b.bucket, counters_of(b, counters))).collect();
        let changes =
            by_name.into_iter().map(|(name, progress)| BucketState { name: name.to_owned(), progress }).collect();
        out.push(bucket_change(changes, false));
    }

    /// After a data line: the bucket's progress while a checkpoint that
    /// names it is being downloaded (`downloading`), then the column types.
    pub fn data_line(
        &mut self,
        line: &DataLine<'_>,
        downloading: Option<(&[BucketChecksum<'_>], &CounterMap)>,
        out: &mut Vec<DiagnosticsEvent>,
    ) {
        if let Some((buckets, counters)) = downloading {
            // The checkpoint's last entry for a name, as a map keeps it.
            if let Some(bucket) = buckets.iter().rev().find(|b| b.bucket == line.bucket) {
                let progress = counters_of(bucket, counters);
                out.push(bucket_change(vec![BucketState { name: line.bucket.to_string(), progress }], true));
            }
        }
        for op in &line.data {
            let (Some(data), Some(table)) = (&op.data, &op.object_type) else { continue };
            let columns = self.seen.entry(table.to_string()).or_default();
            let mut observer = Observer { table, columns, out };
            // An op whose data is not an object of scalars ends early.
            let _ = serde_json::Deserializer::from_str(data).deserialize_map(&mut observer);
        }
    }
}

/// Reads one row's JSON, recording each key's type as it goes.
struct Observer<'a> {
    table: &'a str,
    columns: &'a mut HashMap<String, ValueType>,
    out: &'a mut Vec<DiagnosticsEvent>,
}

impl Observer<'_> {
    fn observe(&mut self, column: String, value_type: ValueType) {
        if value_type == ValueType::Null {
            return;
        }
        let changed = match self.columns.get_mut(&column) {
            Some(known) if *known == value_type || *known == ValueType::String => false,
            Some(known) => {
                *known = value_type;
                true
            }
            None => {
                self.columns.insert(column.clone(), value_type);
                true
            }
        };
        if changed {
            self.out.push(DiagnosticsEvent::SchemaChange(ObservedType {
                table: self.table.to_owned(),
                column,
                value_type,
            }));
        }
    }
}

impl<'de> Visitor<'de> for &mut Observer<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a row object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "id" {
                map.next_value::<IgnoredAny>()?;
            } else {
                let Scalar(value_type) = map.next_value()?;
                self.observe(key, value_type);
            }
        }
        Ok(())
    }
}

/// A value's [`ValueType`]; anything but a string, number or null fails.
struct Scalar(ValueType);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ScalarVisitor;
        impl Visitor<'_> for ScalarVisitor {
            type Value = ValueType;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, a number or null")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<ValueType, E> {
                Ok(ValueType::String)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<ValueType, E> {
                Ok(ValueType::Integer)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<ValueType, E> {
                Ok(ValueType::Integer)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<ValueType, E> {
                Ok(ValueType::Real)
            }
            fn visit_unit<E: de::Error>(self) -> Result<ValueType, E> {
                Ok(ValueType::Null)
            }
        }
        deserializer.deserialize_any(ScalarVisitor).map(Scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::instruction::{to_json, Instruction};

    #[test]
    fn types_are_reported_when_new_or_changed_and_text_stays_text() {
        let mut d = Diagnostics::default();
        let mut out = Vec::new();
        let line = crate::sync::line::parse_text(
            r#"{"data":{"bucket":"b","data":[
              {"op_id":"1","op":"PUT","object_type":"t","object_id":"1","checksum":0,"data":"{\"id\":\"1\",\"a\":1,\"b\":null,\"c\":\"x\"}"},
              {"op_id":"2","op":"PUT","object_type":"t","object_id":"2","checksum":0,"data":"{\"a\":1.5,\"c\":2,\"d\":true,\"e\":1}"}]}}"#,
        )
        .unwrap();
        let crate::sync::line::SyncLine::Data(line) = line else { panic!("not a data line") };
        d.data_line(&line, None, &mut out);
        assert_eq!(
            to_json(&out.into_iter().map(Instruction::HandleDiagnostics).collect::<Vec<_>>()),
            r#"[{"HandleDiagnostics":{"SchemaChange":{"table":"t","column":"a","value_type":"Integer"}}},{"HandleDiagnostics":{"SchemaChange":{"table":"t","column":"c","value_type":"String"}}},{"HandleDiagnostics":{"SchemaChange":{"table":"t","column":"a","value_type":"Real"}}}]"#
        );
    }
}
