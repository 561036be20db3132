//! sync_local: making the app's tables match the oplog, atomically.
//!
//! An apply finds every row touched since the last apply (ops above each
//! bucket's `last_applied_op`, plus `ps_updated_rows` for a full apply),
//! resolves each to the data of its newest PUT across the buckets in scope
//! (or to a delete when none holds it) and writes the result through a
//! [`RowSink`]. Bucket bookkeeping (`last_applied_op`, counters,
//! `ps_sync_state`) is the caller's.

mod sink;

use rusqlite::Connection;

use crate::error::{Result, SqliteResultExt};
pub use sink::RowSink;

/// Which buckets an apply covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every bucket, plus `ps_updated_rows`.
    Full,
    /// Only these buckets (by `ps_buckets.id`): a partial checkpoint.
    Buckets(Vec<i64>),
}

/// What an apply did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApplyStats {
    /// Rows written (inserted or replaced).
    pub rows_put: u64,
    /// Rows deleted.
    pub rows_deleted: u64,
}

/// SQL: the incremental query of a full apply. One row per touched
/// (row_type, row_id), with the data of its newest PUT (NULL: delete).
const INCREMENTAL_FULL: &str = include_str!("../../../sql/sync_local/incremental_full.sql");
/// SQL: the incremental query of a partial apply; ?1 is a JSON array of
/// bucket ids.
const INCREMENTAL_BUCKETS: &str = include_str!("../../../sql/sync_local/incremental_buckets.sql");

/// Applies the oplog to the app's tables for `scope`.
pub fn apply(db: &Connection, scope: &Scope) -> Result<ApplyStats> {
    const CONTEXT: &str = "applying a checkpoint (sync_local)";
    let mut sink = RowSink::new(db)?;
    let mut stats = ApplyStats::default();
    let mut write = |row: &rusqlite::Row<'_>| -> Result<()> {
        let row_type: String = row.get(0).context(CONTEXT)?;
        let row_id: String = row.get(1).context(CONTEXT)?;
        let data: Option<String> = row.get(2).context(CONTEXT)?;
        match data {
            Some(data) => {
                sink.put(&row_type, &row_id, &data)?;
                stats.rows_put += 1;
            }
            None => {
                sink.delete(&row_type, &row_id)?;
                stats.rows_deleted += 1;
            }
        }
        Ok(())
    };
    match scope {
        Scope::Full => {
            let mut stmt = db.prepare(INCREMENTAL_FULL).context(CONTEXT)?;
            let mut rows = stmt.query([]).context(CONTEXT)?;
            while let Some(row) = rows.next().context(CONTEXT)? {
                write(row)?;
            }
        }
        Scope::Buckets(ids) => {
            let ids = serde_json::to_string(ids).unwrap_or_else(|_| "[]".into());
            let mut stmt = db.prepare(INCREMENTAL_BUCKETS).context(CONTEXT)?;
            let mut rows = stmt.query([ids]).context(CONTEXT)?;
            while let Some(row) = rows.next().context(CONTEXT)? {
                write(row)?;
            }
        }
    }
    if *scope == Scope::Full {
        db.execute("DELETE FROM ps_updated_rows", []).context(CONTEXT)?;
    }
    Ok(stats)
}
