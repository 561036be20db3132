//! sync_local: making the app's tables match the oplog, atomically.
//!
//! An apply writes every row whose newest op changed since the last apply
//! (plus the rows in `ps_updated_rows` for a full apply): the data of the
//! newest PUT across the buckets in scope, or a delete when none holds the
//! row. Two queries find those rows (see [`strategy`] for when each is
//! used); neither builds a temporary b-tree, which the plan tests check.
//! Bucket bookkeeping (`last_applied_op`, counters, `ps_sync_state`) is the
//! caller's, and so are the strategy stats: whatever moves `last_applied_op`
//! recounts `oplite_pending_ops` (see [`pending_ops_above`]).

mod from_scratch;
mod job;
mod sink;
pub mod strategy;

use std::collections::BTreeMap;

use rusqlite::{Connection, Row};

use crate::sqlite::CachedSql;
use crate::error::{Result, SqliteResultExt};
use crate::schema::RawTable;
pub use job::{Apply, Stage};
pub use sink::RowSink;
pub use strategy::{Decision, ScopeStats, Setting, Strategy};

/// SQL: incremental, all buckets.
pub const INCREMENTAL: &str = include_str!("../../../sql/sync_local/incremental.sql");
/// SQL: incremental, the buckets in :buckets.
pub const INCREMENTAL_BUCKETS: &str = include_str!("../../../sql/sync_local/incremental_buckets.sql");
/// SQL: from scratch, all buckets, one row type.
pub const FROM_SCRATCH: &str = include_str!("../../../sql/sync_local/from_scratch.sql");
/// SQL: from scratch, the buckets in :buckets, one row type.
pub const FROM_SCRATCH_BUCKETS: &str = include_str!("../../../sql/sync_local/from_scratch_buckets.sql");
pub use from_scratch::{CHUNK_END, DELETED_ROWS, NEXT_ROW, TYPE_BOUNDS};
/// SQL: rows in ps_updated_rows with their newest data.
pub const UPDATED_ROWS: &str = include_str!("../../../sql/sync_local/updated_rows.sql");
/// SQL: the stats of a full apply.
const SCOPE_STATS: &str = include_str!("../../../sql/sync_local/scope_stats.sql");
/// SQL: the stats of a partial apply of the buckets in ?1.
const SCOPE_STATS_BUCKETS: &str = include_str!("../../../sql/sync_local/scope_stats_buckets.sql");

/// Which buckets an apply covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every bucket, plus `ps_updated_rows`.
    Full,
    /// Only these buckets (by `ps_buckets.id`): a partial checkpoint.
    Buckets(Vec<i64>),
}

impl Scope {
    fn bucket_json(&self) -> Option<String> {
        match self {
            Scope::Full => None,
            Scope::Buckets(ids) => Some(serde_json::to_string(ids).unwrap_or_else(|_| "[]".into())),
        }
    }
}

/// What an apply did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApplyReport {
    /// The strategy that ran and why.
    pub decision: Decision,
    /// The stats it was chosen from.
    pub stats: ScopeStats,
    /// Rows written (inserted or replaced).
    pub rows_put: u64,
    /// Rows deleted.
    pub rows_deleted: u64,
}

impl ApplyReport {
    /// The report as JSON, for `oplite_last_apply()`.
    pub fn to_json(&self) -> String {
        serde_json::json!({
            "strategy": self.decision.strategy.name(),
            "reason": self.decision.reason,
            "buckets": self.stats.buckets,
            "never_applied": self.stats.never_applied,
            "ops": self.stats.ops,
            "pending_ops": self.stats.pending_ops,
            "updated_rows": self.stats.updated_rows,
            "walked_ops": self.stats.walked_ops,
            "rows_put": self.rows_put,
            "rows_deleted": self.rows_deleted,
        })
        .to_string()
    }
}

/// An incremental apply without app triggers holds up to this many bytes
/// of changed rows and writes them in (type, id) order, the data tables' key
/// order: written in op order they land at random places of those B-trees,
/// and once the pages outnumber SQLite's page cache they are spilled and
/// read again (1% of 1M rows re-sent: 46% more page reads, 37% more writes
/// than in key order; see docs/benchmarks.md).
const ORDERED_CHUNK_BYTES: usize = 1 << 20;

/// SQL, an expression over a `ps_buckets` row in an UPDATE's SET: how many
/// of the bucket's ops the incremental walk visits once its
/// `last_applied_op` is `new_last_applied` (an SQL expression), those above
/// it. The strategy stats (`oplite_pending_ops`) equal this for every
/// bucket: storing keeps them op by op, and whatever sets `last_applied_op`
/// sets them from this. A bucket with no op above its old `last_applied_op`
/// has none above a higher one, so most buckets need no count at all; the
/// others take one seek of `ps_oplog_opid` plus a step per op left above.
pub fn pending_ops_above(new_last_applied: &str) -> String {
    format!(
        "CASE WHEN ps_buckets.oplite_pending_ops = 0 AND {new_last_applied} >= ps_buckets.last_applied_op THEN 0
         ELSE (SELECT count(*) FROM ps_oplog INDEXED BY ps_oplog_opid
                WHERE ps_oplog.bucket = ps_buckets.id AND ps_oplog.op_id > {new_last_applied}) END"
    )
}

/// Reads the stats of `scope`.
pub fn scope_stats(db: &Connection, scope: &Scope) -> Result<ScopeStats> {
    let read = |r: &Row<'_>| {
        Ok(ScopeStats {
            buckets: r.get(0)?,
            never_applied: r.get(1)?,
            ops: r.get(2)?,
            pending_ops: r.get(3)?,
            updated_rows: r.get(4)?,
            walked_ops: r.get(5)?,
            min_applied_op: r.get(6)?,
        })
    };
    match scope.bucket_json() {
        None => db.query_row_cached(SCOPE_STATS, [], read),
        Some(ids) => db.query_row_cached(SCOPE_STATS_BUCKETS, [ids], read),
    }
    .context("reading sync_local stats")
}

/// Applies the oplog to the app's tables for `scope`, in one go (see
/// [`Apply`] for an apply in steps). `raw_tables` (from `start`'s schema)
/// replace the raw tables `powersync_replace_schema` recorded.
pub fn apply(db: &Connection, scope: &Scope, setting: Setting, raw_tables: Option<&[RawTable]>) -> Result<ApplyReport> {
    let mut job = Apply::start(db, scope.clone(), setting, raw_tables)?;
    while !job.step(db, u64::MAX)? {}
    Ok(job.report())
}

/// The writer of one apply: takes the rows its queries yield (row_type,
/// row_id, data), orders them where triggers may observe the order, writes
/// them through the [`RowSink`] (and so the schema's [`crate::schema::RowWriter`])
/// and counts them.
struct ApplyWriter<'c> {
    sink: RowSink<'c>,
    rows_put: u64,
    rows_deleted: u64,
    /// When the app has triggers on data tables: the rows of both passes,
    /// written once each by [`ApplyWriter::flush`] in (type, id) order, as the
    /// reference core's single grouped query writes them.
    in_order: Option<BTreeMap<(String, String), Option<String>>>,
    /// Without app triggers: `in_order` is written out whenever it holds
    /// this many bytes (sorted runs of bounded memory) instead of at the end.
    chunk: Option<usize>,
    /// Bytes held in `in_order`.
    held: usize,
}

impl<'c> ApplyWriter<'c> {
    fn row(&mut self, row: &Row<'_>) -> Result<()> {
        const CONTEXT: &str = "applying a checkpoint (sync_local)";
        let row_type: String = row.get(0).context(CONTEXT)?;
        let row_id: String = row.get(1).context(CONTEXT)?;
        let data = row.get::<_, Option<String>>(2).context(CONTEXT)?;
        match &mut self.in_order {
            Some(rows) => {
                self.held += row_type.len() + row_id.len() + data.as_ref().map_or(0, String::len);
                rows.insert((row_type, row_id), data);
                match self.chunk {
                    Some(limit) if self.held >= limit => self.write_held(),
                    _ => Ok(()),
                }
            }
            None => self.write(&row_type, &row_id, data),
        }
    }

    /// Writes the rows held for ordering.
    fn flush(&mut self) -> Result<()> {
        self.write_held()?;
        self.in_order = None;
        Ok(())
    }

    /// Writes the rows held so far in (type, id) order and keeps holding.
    fn write_held(&mut self) -> Result<()> {
        let Some(rows) = self.in_order.as_mut() else { return Ok(()) };
        for ((row_type, row_id), data) in std::mem::take(rows) {
            self.write(&row_type, &row_id, data)?;
        }
        self.held = 0;
        Ok(())
    }

    fn write(&mut self, row_type: &str, row_id: &str, data: Option<String>) -> Result<()> {
        match data {
            Some(data) => {
                self.sink.put(row_type, row_id, &data)?;
                self.rows_put += 1;
            }
            None => {
                self.sink.delete(row_type, row_id)?;
                self.rows_deleted += 1;
            }
        }
        Ok(())
    }

    fn sink(&mut self) -> &mut RowSink<'c> {
        &mut self.sink
    }

    fn count(&mut self, put: u64, deleted: u64) {
        self.rows_put += put;
        self.rows_deleted += deleted;
    }
}
