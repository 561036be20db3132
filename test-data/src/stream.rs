//! Benchmark stream shapes, generated lazily.
//!
//! The base shape is the published sync_local benchmark: op `n` (1..=N) is
//! a PUT of row `thisismyrowid<n>` of type `thisisatable` with data
//! `{"n":n}` and checksum `(n*17) mod 1e9`, in bucket `n mod 10`. Variants
//! change one thing each: wider rows (12 columns), many versions of fewer
//! rows (duplicates), 1000 buckets, one bucket.
//!
//! Nothing is held in memory: a bucket's ops are an arithmetic progression
//! of op ids (`b, b+B, b+2B, ...`), so the ops above any `after` are
//! computed on demand, and a stream of any length is an iterator of lines.
//! That is what keeps the demo's and the benchmarks' memory flat.
//!
//! With duplicates, op `n` writes row `((n-1) mod D) + 1`; D is a multiple
//! of the bucket count, so a row's ops all fall in the same bucket and each
//! new version supersedes the previous one there.

use std::collections::HashMap;

use serde_json::Value;

use crate::lines::{self, BucketEntry, DataLines, Encoding, OpSource};
use crate::server::ServerOp;

/// The row type of every generated op.
pub const ROW_TYPE: &str = "thisisatable";
/// Row ids are this prefix followed by the row number.
pub const ROW_ID_PREFIX: &str = "thisismyrowid";

/// What each row holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowShape {
    /// `{"n": n}`: the published benchmark.
    Small,
    /// Twelve columns of text, integers and reals (about 300 bytes).
    Wide,
}

/// A generated stream: how many ops, over how many buckets, of what rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamSpec {
    /// Ops in the stream (op ids 1..=ops).
    pub ops: u64,
    /// Buckets `bucket0` .. `bucket{buckets-1}`.
    pub buckets: u64,
    /// Row contents.
    pub rows: RowShape,
    /// Distinct rows (None: one row per op). Rounded up to a multiple of
    /// `buckets`.
    pub distinct_rows: Option<u64>,
    /// Ops per data line (the service sends up to 1000).
    pub ops_per_line: usize,
    /// Priority of every bucket.
    pub priority: i32,
    /// Seed of the values of wide rows.
    pub seed: u64,
}

impl StreamSpec {
    /// The published sync_local benchmark: `ops` ops over 10 buckets.
    pub fn benchmark(ops: u64) -> Self {
        StreamSpec {
            ops,
            buckets: 10,
            rows: RowShape::Small,
            distinct_rows: None,
            ops_per_line: 1000,
            priority: 3,
            seed: 1,
        }
    }

    /// The benchmark with 12-column rows.
    pub fn wide(ops: u64) -> Self {
        StreamSpec { rows: RowShape::Wide, ..Self::benchmark(ops) }
    }

    /// The benchmark where every row has 10 versions (ops / 10 rows).
    pub fn duplicates(ops: u64) -> Self {
        StreamSpec { distinct_rows: Some((ops / 10).max(1)), ..Self::benchmark(ops) }
    }

    /// The benchmark over 1000 buckets.
    pub fn many_buckets(ops: u64) -> Self {
        StreamSpec { buckets: 1000, ..Self::benchmark(ops) }
    }

    /// The benchmark in one bucket.
    pub fn single_bucket(ops: u64) -> Self {
        StreamSpec { buckets: 1, ..Self::benchmark(ops) }
    }

    /// A shape by name: `benchmark`, `wide`, `duplicates`, `many-buckets`,
    /// `single-bucket`.
    pub fn by_name(name: &str, ops: u64) -> Option<Self> {
        Some(match name {
            "benchmark" => Self::benchmark(ops),
            "wide" => Self::wide(ops),
            "duplicates" => Self::duplicates(ops),
            "many-buckets" => Self::many_buckets(ops),
            "single-bucket" => Self::single_bucket(ops),
            _ => return None,
        })
    }

    /// The names [`StreamSpec::by_name`] knows.
    pub const SHAPES: [&'static str; 5] = ["benchmark", "wide", "duplicates", "many-buckets", "single-bucket"];

    fn bucket_count(&self) -> u64 {
        self.buckets.max(1)
    }

    /// Distinct rows, rounded up to a multiple of the bucket count.
    pub fn distinct(&self) -> Option<u64> {
        let b = self.bucket_count();
        self.distinct_rows.map(|d| d.max(1).div_ceil(b) * b)
    }

    /// How many rows the client holds after a full sync.
    pub fn row_count(&self) -> u64 {
        match self.distinct() {
            Some(d) => d.min(self.ops),
            None => self.ops,
        }
    }

    /// The name of bucket `b`.
    pub fn bucket_name(b: u64) -> String {
        format!("bucket{b}")
    }

    /// The bucket index of a bucket name of this stream.
    pub fn bucket_index(&self, name: &str) -> Option<u64> {
        name.strip_prefix("bucket")?.parse().ok().filter(|&b| b < self.bucket_count())
    }

    /// The row op `n` writes.
    pub fn row_of(&self, n: u64) -> u64 {
        match self.distinct() {
            Some(d) => (n - 1) % d + 1,
            None => n,
        }
    }

    /// The bucket of op `n` (and of its row).
    pub fn bucket_of(&self, n: u64) -> u64 {
        n % self.bucket_count()
    }

    /// The checksum of op `n`.
    pub fn checksum(n: u64) -> u32 {
        ((n as u128 * 17) % 1_000_000_000) as u32
    }

    /// The first op id of bucket `b`.
    fn first_op(&self, b: u64) -> u64 {
        if b == 0 {
            self.bucket_count()
        } else {
            b
        }
    }

    /// Ops in bucket `b`.
    pub fn count(&self, b: u64) -> u64 {
        let first = self.first_op(b);
        if first > self.ops {
            0
        } else {
            (self.ops - first) / self.bucket_count() + 1
        }
    }

    /// Op ids of bucket `b` above `after`, ascending.
    pub fn op_ids(&self, b: u64, after: u64) -> impl Iterator<Item = u64> + Send + 'static {
        let step = self.bucket_count();
        let first = self.first_op(b);
        let start = if after < first { first } else { first + ((after - first) / step + 1) * step };
        let end = self.ops;
        (0..).map(move |k| start + k * step).take_while(move |&n| n <= end)
    }

    /// The checkpoint entry of bucket `b`.
    pub fn entry(&self, b: u64) -> BucketEntry {
        let checksum = self.op_ids(b, 0).fold(0u32, |sum, n| sum.wrapping_add(Self::checksum(n)));
        BucketEntry { bucket: Self::bucket_name(b), checksum, priority: self.priority, count: self.count(b) }
    }

    /// Every bucket's checkpoint entry.
    pub fn entries(&self) -> Vec<BucketEntry> {
        (0..self.bucket_count()).map(|b| self.entry(b)).collect()
    }

    /// The app schema for these rows (`powersync_replace_schema`): one table
    /// named [`ROW_TYPE`] with the columns of the row shape.
    pub fn schema(&self) -> Value {
        let columns: Vec<Value> = match self.rows {
            RowShape::Small => vec![serde_json::json!({"name": "n", "type": "integer"})],
            RowShape::Wide => [
                ("n", "integer"),
                ("name", "text"),
                ("description", "text"),
                ("price", "real"),
                ("quantity", "integer"),
                ("active", "integer"),
                ("category", "text"),
                ("created_at", "text"),
                ("updated_at", "text"),
                ("owner_id", "text"),
                ("score", "real"),
                ("notes", "text"),
            ]
            .iter()
            .map(|(name, kind)| serde_json::json!({"name": name, "type": kind}))
            .collect(),
        };
        serde_json::json!({"tables": [{"name": ROW_TYPE, "columns": columns}]})
    }

    /// The JSON text of op `n`'s row.
    pub fn row_data(&self, n: u64) -> String {
        match self.rows {
            RowShape::Small => format!("{{\"n\":{n}}}"),
            RowShape::Wide => {
                let h = mix(n ^ self.seed.rotate_left(17));
                let row = self.row_of(n);
                format!(
                    concat!(
                        "{{\"n\":{n},\"name\":\"item {row}\",\"description\":\"generated row {row} of the wide shape, version {n}\",",
                        "\"price\":{price}.{cents:02},\"quantity\":{qty},\"active\":{active},\"category\":\"category-{cat}\",",
                        "\"created_at\":\"2024-{month:02}-{day:02}T{hour:02}:00:00Z\",\"updated_at\":\"2025-{month:02}-{day:02}T{hour:02}:30:00Z\",",
                        "\"owner_id\":\"{owner:016x}\",\"score\":{score}.5,\"notes\":\"note {h:08x}\"}}"
                    ),
                    n = n,
                    row = row,
                    price = h % 1000,
                    cents = (h >> 10) % 100,
                    qty = (h >> 20) % 500,
                    active = (h >> 30) & 1,
                    cat = (h >> 31) % 20,
                    month = (h >> 36) % 12 + 1,
                    day = (h >> 40) % 28 + 1,
                    hour = (h >> 45) % 24,
                    owner = mix(h),
                    score = (h >> 50) % 100,
                    h = h as u32,
                )
            }
        }
    }

    /// Op `n` as the service sends it.
    pub fn op(&self, n: u64) -> ServerOp {
        ServerOp {
            op_id: n as i64,
            op: "PUT",
            object_type: Some(ROW_TYPE.to_owned()),
            object_id: Some(format!("{ROW_ID_PREFIX}{}", self.row_of(n))),
            subkey: None,
            checksum: Self::checksum(n),
            data: Some(self.row_data(n)),
        }
    }

    /// The ops of bucket `b` above `after`.
    pub fn ops_after(&self, b: u64, after: u64) -> OpSource {
        let spec = self.clone();
        Box::new(self.op_ids(b, after).map(move |n| spec.op(n)))
    }

    /// For a row of this stream (`thisisatable` / `thisismyrowid<r>`), its
    /// bucket and the op id of its newest version.
    pub fn route(&self, row_type: &str, row_id: &str) -> Option<(u64, u64)> {
        if row_type != ROW_TYPE {
            return None;
        }
        let r: u64 = row_id.strip_prefix(ROW_ID_PREFIX)?.parse().ok()?;
        if r == 0 || r > self.row_count() {
            return None;
        }
        let newest = match self.distinct() {
            None => r,
            Some(d) => r + (self.ops - r) / d * d,
        };
        Some((self.bucket_of(newest), newest))
    }

    /// The whole stream for a client holding `after` (bucket name → last op
    /// id): a checkpoint, the data lines, checkpoint_complete. Lazy.
    pub fn lines(&self, encoding: Encoding, after: &HashMap<String, i64>) -> impl Iterator<Item = Vec<u8>> + Send {
        let entries = self.entries();
        let checkpoint = lines::encode(encoding, &lines::checkpoint(self.ops as i64, None, &entries));
        let complete = lines::encode(encoding, &lines::checkpoint_complete(self.ops as i64));
        let sources = (0..self.bucket_count())
            .map(|b| {
                let name = Self::bucket_name(b);
                let from = after.get(&name).copied().unwrap_or(0).max(0);
                (name, self.priority, from, self.ops_after(b, from as u64))
            })
            .collect();
        std::iter::once(checkpoint)
            .chain(DataLines::new(sources, self.ops_per_line, encoding))
            .chain(std::iter::once(complete))
    }

    /// The final rows, as `(id, data)` in id order: for tests of small
    /// streams (holds every row in memory).
    pub fn expected_rows(&self) -> Vec<(String, Value)> {
        let mut rows: Vec<(String, Value)> = (1..=self.row_count())
            .map(|r| {
                let (_, newest) = self.route(ROW_TYPE, &format!("{ROW_ID_PREFIX}{r}")).expect("row of the stream");
                (format!("{ROW_ID_PREFIX}{r}"), serde_json::from_str(&self.row_data(newest)).expect("valid JSON"))
            })
            .collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        rows
    }
}

/// SplitMix64's finaliser: a cheap hash of `n`.
fn mix(n: u64) -> u64 {
    let mut z = n.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &[u8]) -> Value {
        serde_json::from_slice(line).unwrap()
    }

    #[test]
    fn benchmark_shape_matches_the_published_one() {
        let spec = StreamSpec::benchmark(25);
        let op = spec.op(13);
        assert_eq!(op.object_id.as_deref(), Some("thisismyrowid13"));
        assert_eq!(op.object_type.as_deref(), Some("thisisatable"));
        assert_eq!(op.data.as_deref(), Some(r#"{"n":13}"#));
        assert_eq!(op.checksum, 221);
        assert_eq!(StreamSpec::checksum(100_000_000), 700_000_000);
        assert_eq!(spec.bucket_of(13), 3);
        assert_eq!(spec.op_ids(3, 0).collect::<Vec<_>>(), vec![3, 13, 23]);
        assert_eq!(spec.op_ids(0, 0).collect::<Vec<_>>(), vec![10, 20]);
        assert_eq!(spec.op_ids(3, 3).collect::<Vec<_>>(), vec![13, 23]);
        assert_eq!(spec.op_ids(3, 14).collect::<Vec<_>>(), vec![23]);
        assert_eq!(spec.op_ids(3, 23).count(), 0);
        assert_eq!((0..10).map(|b| spec.count(b)).sum::<u64>(), 25);
    }

    #[test]
    fn stream_lines_cover_every_op_once_with_matching_checksums() {
        for spec in [
            StreamSpec { ops_per_line: 7, ..StreamSpec::benchmark(1003) },
            StreamSpec { ops_per_line: 7, ..StreamSpec::duplicates(1003) },
            StreamSpec { ops_per_line: 3, ..StreamSpec::many_buckets(2500) },
            StreamSpec::wide(50),
        ] {
            let lines: Vec<Value> = spec.lines(Encoding::Json, &HashMap::new()).map(|l| parse(&l)).collect();
            let checkpoint = &lines[0]["checkpoint"];
            assert_eq!(checkpoint["last_op_id"], spec.ops.to_string());
            let mut sums: HashMap<String, (u32, u64)> = HashMap::new();
            let mut seen = 0;
            for line in &lines[1..lines.len() - 1] {
                let data = &line["data"];
                for op in data["data"].as_array().unwrap() {
                    let entry = sums.entry(data["bucket"].as_str().unwrap().to_owned()).or_default();
                    entry.0 = entry.0.wrapping_add(op["checksum"].as_u64().unwrap() as u32);
                    entry.1 += 1;
                    seen += 1;
                    let _: Value = serde_json::from_str(op["data"].as_str().unwrap()).unwrap();
                }
            }
            assert_eq!(seen, spec.ops);
            for bucket in checkpoint["buckets"].as_array().unwrap() {
                let (sum, count) = sums.get(bucket["bucket"].as_str().unwrap()).copied().unwrap_or_default();
                assert_eq!(bucket["checksum"].as_u64().unwrap() as u32, sum);
                assert_eq!(bucket["count"].as_u64().unwrap(), count);
            }
            assert_eq!(lines.last().unwrap()["checkpoint_complete"]["last_op_id"], spec.ops.to_string());
        }
    }

    #[test]
    fn resuming_sends_only_ops_above_after() {
        let spec = StreamSpec { ops_per_line: 4, ..StreamSpec::benchmark(100) };
        let after: HashMap<String, i64> = [("bucket3".to_owned(), 53)].into();
        let ops: Vec<u64> = spec
            .lines(Encoding::Json, &after)
            .map(|l| parse(&l))
            .filter(|l| l["data"]["bucket"] == "bucket3")
            .flat_map(|l| {
                l["data"]["data"].as_array().unwrap().iter().map(|op| op["op_id"].as_str().unwrap().parse().unwrap()).collect::<Vec<u64>>()
            })
            .collect();
        assert_eq!(ops, vec![63, 73, 83, 93]);
    }

    #[test]
    fn duplicates_keep_a_row_in_one_bucket_and_route_to_its_newest_version() {
        let spec = StreamSpec::duplicates(1000);
        assert_eq!(spec.distinct(), Some(100));
        assert_eq!(spec.row_count(), 100);
        for n in 1..=1000 {
            assert_eq!(spec.bucket_of(n), spec.row_of(n) % 10);
        }
        assert_eq!(spec.route(ROW_TYPE, "thisismyrowid7"), Some((7, 907)));
        assert_eq!(spec.route(ROW_TYPE, "thisismyrowid100"), Some((0, 1000)));
        assert_eq!(spec.route(ROW_TYPE, "thisismyrowid101"), None);
        assert_eq!(spec.expected_rows().len(), 100);
    }

    #[test]
    fn wide_rows_have_twelve_columns() {
        let spec = StreamSpec::wide(10);
        let row: Value = serde_json::from_str(&spec.row_data(3)).unwrap();
        assert_eq!(row.as_object().unwrap().len(), 12);
        let columns = spec.schema()["tables"][0]["columns"].as_array().unwrap().clone();
        let names: Vec<&str> = columns.iter().map(|c| c["name"].as_str().unwrap()).collect();
        let mut keys: Vec<&str> = row.as_object().unwrap().keys().map(String::as_str).collect();
        let mut sorted = names.clone();
        sorted.sort();
        keys.sort();
        assert_eq!(sorted, keys, "the schema lists every column of a wide row");
        assert_eq!(spec.row_data(3), StreamSpec::wide(10).row_data(3));
    }

    #[test]
    fn bson_lines_have_consistent_lengths() {
        let spec = StreamSpec { ops_per_line: 5, ..StreamSpec::benchmark(30) };
        for line in spec.lines(Encoding::Bson, &HashMap::new()) {
            assert_eq!(i32::from_le_bytes(line[0..4].try_into().unwrap()) as usize, line.len());
        }
    }
}
