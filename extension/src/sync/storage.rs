//! Everything the sync engine reads and writes in the internal tables.
//!
//! The state machine in [`super::client`] decides; this module runs the SQL
//! (storing data lines is [`super::data_line`]'s).

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension};

use super::checksum::Checksum;
use super::line::BucketChecksum;
use super::status::PriorityStatus;
use crate::sqlite::CachedSql;
use crate::error::{Result, SqliteResultExt};

/// A bucket's stored checksum halves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoredChecksum {
    /// Checksums of ops no longer in the oplog (superseded, removed, moved).
    pub add: Checksum,
    /// Checksums of the ops in the oplog.
    pub op: Checksum,
}

impl StoredChecksum {
    /// The bucket's total checksum.
    pub fn total(self) -> Checksum {
        self.add + self.op
    }
}

/// Progress counters of a stored bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// `count_at_last`: ops held at the last full apply.
    pub at_last: i64,
    /// `count_since_last`: ops downloaded since then.
    pub since_last: i64,
}

/// Buckets to put in the stream request: (name, last_op), in rowid order.
pub fn requested_buckets(db: &Connection) -> Result<Vec<(String, i64)>> {
    let mut stmt = db
        .prepare_cached("SELECT name, last_op FROM ps_buckets WHERE pending_delete = 0 ORDER BY id")
        .context("listing buckets")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).context("listing buckets")?;
    rows.collect::<rusqlite::Result<_>>().context("listing buckets")
}

/// Names of all stored buckets.
pub fn bucket_names(db: &Connection) -> Result<Vec<String>> {
    let mut stmt = db.prepare_cached("SELECT name FROM ps_buckets ORDER BY id").context("listing buckets")?;
    let rows = stmt.query_map([], |r| r.get(0)).context("listing buckets")?;
    rows.collect::<rusqlite::Result<_>>().context("listing buckets")
}

/// Progress counters of every stored bucket, by name.
pub fn counters(db: &Connection) -> Result<HashMap<String, Counters>> {
    let mut stmt = db
        .prepare_cached("SELECT name, count_at_last, count_since_last FROM ps_buckets")
        .context("reading bucket counters")?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, Counters { at_last: r.get(1)?, since_last: r.get(2)? })))
        .context("reading bucket counters")?;
    rows.collect::<rusqlite::Result<_>>().context("reading bucket counters")
}

/// Sets these buckets' progress counters to zero (the server's counts no
/// longer fit the local ones, e.g. after compaction).
pub fn reset_counters(db: &Connection, names: &[&str]) -> Result<()> {
    if names.is_empty() {
        return Ok(());
    }
    let mut stmt = db
        .prepare_cached("UPDATE OR FAIL ps_buckets SET count_at_last = 0, count_since_last = 0 WHERE name = ?1")
        .context("resetting bucket counters")?;
    for name in names {
        stmt.execute([name]).context("resetting bucket counters")?;
    }
    Ok(())
}

/// SQL: marks every row of a bucket's ops for re-derivation.
pub const MARK_BUCKET_ROWS_UPDATED: &str = "INSERT OR IGNORE INTO ps_updated_rows(row_type, row_id)
     SELECT row_type, row_id FROM ps_oplog WHERE bucket = ?1";

/// Deletes buckets with their ops; the rows they held are marked for
/// re-derivation at the next full apply.
pub fn delete_buckets(db: &Connection, names: &[String]) -> Result<()> {
    if names.is_empty() {
        return Ok(());
    }
    let mut find = db.prepare_cached("SELECT id FROM ps_buckets WHERE name = ?1").context("deleting buckets")?;
    let mut mark = db.prepare_cached(MARK_BUCKET_ROWS_UPDATED).context("deleting buckets")?;
    let mut ops = db.prepare_cached("DELETE FROM ps_oplog WHERE bucket = ?1").context("deleting buckets")?;
    let mut bucket = db.prepare_cached("DELETE FROM ps_buckets WHERE id = ?1").context("deleting buckets")?;
    for name in names {
        let Some(id) = find.query_row([name], |r| r.get::<_, i64>(0)).optional().context("deleting buckets")? else {
            continue;
        };
        mark.execute([id]).context("deleting bucket rows")?;
        ops.execute([id]).context("deleting bucket ops")?;
        bucket.execute([id]).context("deleting bucket")?;
    }
    Ok(())
}

/// The stored checksum of every bucket, by name.
pub fn checksums(db: &Connection) -> Result<HashMap<String, StoredChecksum>> {
    let mut stmt = db
        .prepare_cached("SELECT name, add_checksum, op_checksum FROM ps_buckets")
        .context("reading checksums")?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                StoredChecksum { add: Checksum::from_i64(r.get(1)?), op: Checksum::from_i64(r.get(2)?) },
            ))
        })
        .context("reading checksums")?;
    rows.collect::<rusqlite::Result<_>>().context("reading checksums")
}

/// True when the upload queue holds entries.
pub fn has_pending_uploads(db: &Connection) -> Result<bool> {
    db.query_row_cached("SELECT EXISTS(SELECT 1 FROM ps_crud)", [], |r| r.get(0))
        .context("checking the upload queue")
}

/// `ps_sync_state` as priority statuses, ascending.
pub fn sync_state(db: &Connection) -> Result<Vec<PriorityStatus>> {
    let mut stmt = db
        .prepare_cached("SELECT priority, CAST(last_synced_at AS INTEGER) FROM ps_sync_state ORDER BY priority")
        .context("reading ps_sync_state")?;
    let rows = stmt
        .query_map([], |r| Ok(PriorityStatus { priority: r.get(0)?, last_synced_at: r.get(1)?, has_synced: true }))
        .context("reading ps_sync_state")?;
    rows.collect::<rusqlite::Result<_>>().context("reading ps_sync_state")
}

/// Records a completed sync of priority `priority` (replacing every entry
/// of that priority or higher) at the current time; returns the time in
/// microseconds since the epoch.
pub fn record_sync(db: &Connection, priority: i32) -> Result<i64> {
    // SQLite's clock, at millisecond resolution like the reference core; it
    // works the same in the browser, where std's clock is unavailable.
    let now: i64 = db
        .query_row_cached("SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER) * 1000", [], |r| r.get(0))
        .context("reading the clock")?;
    db.execute_cached("DELETE FROM ps_sync_state WHERE priority <= ?1", [priority])
        .context("recording the sync")?;
    db.execute_cached("INSERT INTO ps_sync_state(priority, last_synced_at) VALUES (?1, ?2)", params![priority, now])
        .context("recording the sync")?;
    Ok(now)
}

/// `ps_buckets` ids of the named buckets that exist.
pub fn bucket_ids(db: &Connection, names: &[&str]) -> Result<Vec<i64>> {
    let mut stmt = db.prepare_cached("SELECT id FROM ps_buckets WHERE name = ?1").context("looking up buckets")?;
    let mut ids = Vec::with_capacity(names.len());
    for name in names {
        if let Some(id) = stmt.query_row([name], |r| r.get(0)).optional().context("looking up buckets")? {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// Bucket bookkeeping after a full apply: every bucket has applied what it
/// downloaded; the checkpoint's buckets are at its op id with their counts
/// taken as the new baseline. A bucket without a count keeps counting its
/// downloads (as the reference does; its next checkpoint then resets every
/// bucket's progress, see `client::Iteration::set_checkpoint`).
pub fn mark_applied(db: &Connection, buckets: &[BucketChecksum<'_>], last_op_id: i64) -> Result<()> {
    const CONTEXT: &str = "recording the applied checkpoint";
    // Each statement moves last_applied_op and recounts the ops above it
    // (the strategy stats, see sync_local::pending_ops_above). The
    // checkpoint's buckets first, so that the second statement finds only
    // buckets the checkpoint does not name (usually none).
    let mut update = db
        .prepare_cached(&format!(
            "UPDATE ps_buckets SET last_applied_op = ?2, last_op = ?2,
               count_at_last = ifnull(?3, count_at_last),
               count_since_last = CASE WHEN ?3 IS NULL THEN count_since_last ELSE 0 END,
               oplite_pending_ops = {}
             WHERE name = ?1",
            crate::sync_local::pending_ops_above("?2")
        ))
        .context(CONTEXT)?;
    for bucket in buckets {
        update.execute(params![&*bucket.bucket, last_op_id, bucket.count]).context(CONTEXT)?;
    }
    // OR FAIL: multi-row updates then need no statement journal, which
    // spills to a temporary file past 64 KiB (seen with 1000 buckets).
    db.prepare_cached(&format!(
        "UPDATE OR FAIL ps_buckets SET last_applied_op = last_op, oplite_pending_ops = {}
          WHERE last_applied_op != last_op",
        crate::sync_local::pending_ops_above("ps_buckets.last_op")
    ))
    .and_then(|mut s| s.execute([]))
    .context(CONTEXT)?;
    Ok(())
}

/// Records that buckets applied a partial checkpoint at `op_id`, with the
/// ops left above it (sync_local's stats). Progress counters are left for
/// the full apply.
pub fn mark_buckets_applied(db: &Connection, ids: &[i64], op_id: i64) -> Result<()> {
    let sql = format!(
        "UPDATE ps_buckets SET last_applied_op = ?2, last_op = ?2, oplite_pending_ops = {} WHERE id = ?1",
        crate::sync_local::pending_ops_above("?2")
    );
    let mut stmt = db.prepare_cached(&sql).context("recording a partial apply")?;
    for id in ids {
        stmt.execute(params![id, op_id]).context("recording a partial apply")?;
    }
    Ok(())
}

/// Sets `last_op` of the named buckets (those that exist).
pub fn set_last_op(db: &Connection, names: &[&str], op_id: i64) -> Result<()> {
    let mut stmt = db
        .prepare_cached("UPDATE ps_buckets SET last_op = ?2 WHERE name = ?1")
        .context("recording a validated checkpoint")?;
    for name in names {
        stmt.execute(params![name, op_id]).context("recording a validated checkpoint")?;
    }
    Ok(())
}
