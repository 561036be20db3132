//! Storing the ops of a data line in ps_oplog, fast.
//!
//! Two costs dominate a naive store (measured with `perf` on 100 lines of
//! 1000 ops): looking up the op a PUT supersedes (a `DELETE ... RETURNING`
//! per op, ~20%) and executing one INSERT per op (~30%, much of it opening
//! and closing cursors). So:
//!
//! - [`KnownKeys`] remembers, per bucket that was empty when this iteration
//!   first stored into it, a hash of every key stored since. A PUT whose key
//!   was never seen cannot supersede anything and skips the lookup. The set
//!   can only err towards an unnecessary lookup (a hash collision, or keys
//!   whose transaction the host rolled back), never towards a missed one,
//!   because every insert into such a bucket goes through it.
//! - PUTs are inserted [`BATCH`] rows per statement, flushed before any
//!   lookup so a later op of the same line sees the earlier ones.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use rusqlite::types::ToSql;
use rusqlite::{params, Connection, Statement};

use super::checksum::Checksum;
use super::line::{DataLine, OpType, OplogEntry};
use super::storage::{Counters, StoredChecksum};
use crate::error::{Result, SqliteResultExt};

const CONTEXT: &str = "storing a data line";

/// PUTs per INSERT statement.
const BATCH: usize = 100;

/// SQL: the bucket row (created on first data), with what storing updates.
const UPSERT_BUCKET: &str = "INSERT INTO ps_buckets(name) VALUES (?1)
     ON CONFLICT(name) DO UPDATE SET name = excluded.name
     RETURNING id, add_checksum, op_checksum, count_at_last, count_since_last, last_applied_op,
               oplite_op_count, oplite_pending_ops";
/// SQL: removes a bucket's current op for a key, returning its checksum and id.
const DELETE_OP_BY_KEY: &str = "DELETE FROM ps_oplog WHERE bucket = ?1 AND key = ?2 RETURNING hash, op_id";
/// SQL: marks a row for re-derivation at the next full apply.
const MARK_ROW_UPDATED: &str = "INSERT OR IGNORE INTO ps_updated_rows(row_type, row_id) VALUES (?1, ?2)";
/// SQL: marks every row of a bucket's ops for re-derivation.
pub const MARK_BUCKET_ROWS_UPDATED: &str = "INSERT OR IGNORE INTO ps_updated_rows(row_type, row_id)
     SELECT row_type, row_id FROM ps_oplog WHERE bucket = ?1";
/// SQL: the bucket's bookkeeping after the line.
const UPDATE_BUCKET: &str = "UPDATE ps_buckets SET
       last_op = ifnull(?2, last_op),
       last_applied_op = CASE WHEN ?3 THEN 0 ELSE last_applied_op END,
       add_checksum = ?4, op_checksum = ?5,
       count_since_last = ?6, downloaded_size = downloaded_size + ?7,
       oplite_op_count = ?8, oplite_pending_ops = ?9
     WHERE id = ?1";

fn insert_sql(rows: usize) -> String {
    // OR FAIL: a failing row keeps the rows before it, so SQLite needs no
    // statement journal for a multi-row insert (measured: 7% of storing).
    let mut sql = String::from("INSERT OR FAIL INTO ps_oplog(bucket, op_id, row_type, row_id, key, data, hash) VALUES ");
    for i in 0..rows {
        if i > 0 {
            sql.push(',');
        }
        sql.push_str("(?,?,?,?,?,?,?)");
    }
    sql
}

/// A hasher for keys that are already well-mixed 64-bit hashes.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

type KeySet = HashSet<u64, BuildHasherDefault<PassThrough>>;

/// 64-bit FNV-1a of an op's key (`type/id/subkey`, as stored), finished
/// with a multiply-xorshift so the pass-through hasher gets mixed bits.
fn key_hash(key: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

enum BucketKeys {
    /// Empty when first seen: these are all the keys it can hold.
    Fresh(KeySet),
    /// Held ops before: every PUT looks up what it supersedes.
    Unknown,
}

/// Keys stored per bucket during one sync iteration.
#[derive(Default)]
pub struct KnownKeys {
    buckets: HashMap<i64, BucketKeys>,
}

impl std::fmt::Debug for KnownKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KnownKeys({} buckets)", self.buckets.len())
    }
}

impl KnownKeys {
    fn for_bucket(&mut self, db: &Connection, bucket: i64) -> Result<&mut BucketKeys> {
        if !self.buckets.contains_key(&bucket) {
            let empty: bool = db
                .query_row("SELECT NOT EXISTS(SELECT 1 FROM ps_oplog WHERE bucket = ?1)", [bucket], |r| r.get(0))
                .context(CONTEXT)?;
            let keys = if empty { BucketKeys::Fresh(KeySet::default()) } else { BucketKeys::Unknown };
            self.buckets.insert(bucket, keys);
        }
        Ok(self.buckets.get_mut(&bucket).expect("inserted above"))
    }
}

/// What storing a data line changed, for progress.
pub struct StoredLine {
    /// The bucket's counters after the line.
    pub counters: Counters,
}

/// PUTs waiting for a multi-row INSERT.
struct PendingPuts<'l, 'c> {
    db: &'c Connection,
    bucket: i64,
    rows: Vec<(&'l OplogEntry<'l>, String, i64)>,
    full: Option<Statement<'c>>,
}

impl<'l, 'c> PendingPuts<'l, 'c> {
    fn push(&mut self, op: &'l OplogEntry<'l>, key: String) -> Result<()> {
        self.rows.push((op, key, i64::from(op.checksum.0 as i32)));
        if self.rows.len() == BATCH {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let mut params: Vec<&dyn ToSql> = Vec::with_capacity(self.rows.len() * 7);
        for (op, key, hash) in &self.rows {
            params.push(&self.bucket);
            params.push(&op.op_id);
            params.push(&op.object_type);
            params.push(&op.object_id);
            params.push(key);
            params.push(&op.data);
            params.push(hash);
        }
        if self.rows.len() == BATCH {
            if self.full.is_none() {
                self.full = Some(self.db.prepare(&insert_sql(BATCH)).context(CONTEXT)?);
            }
            self.full.as_mut().expect("prepared above").execute(params.as_slice()).context(CONTEXT)?;
        } else {
            self.db.prepare(&insert_sql(self.rows.len())).context(CONTEXT)?.execute(params.as_slice()).context(CONTEXT)?;
        }
        self.rows.clear();
        Ok(())
    }
}

/// Stores the ops of one data line. `size` is the line's length in bytes.
pub fn store_data_line(db: &Connection, line: &DataLine<'_>, size: usize, known: &mut KnownKeys) -> Result<StoredLine> {
    let (bucket, mut sums, mut counters, mut last_applied_op, mut op_count, mut pending_ops) = db
        .query_row(UPSERT_BUCKET, [&*line.bucket], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                StoredChecksum { add: Checksum::from_i64(r.get(1)?), op: Checksum::from_i64(r.get(2)?) },
                Counters { at_last: r.get(3)?, since_last: r.get(4)? },
                r.get::<_, i64>(5)?,
                r.get::<_, i64>(6)?,
                r.get::<_, i64>(7)?,
            ))
        })
        .context(CONTEXT)?;
    let keys = known.for_bucket(db, bucket)?;

    let mut delete_op = db.prepare(DELETE_OP_BY_KEY).context(CONTEXT)?;
    let mut mark_row = db.prepare(MARK_ROW_UPDATED).context(CONTEXT)?;
    let mut puts = PendingPuts { db, bucket, rows: Vec::with_capacity(BATCH), full: None };
    let mut cleared = false;

    // Removes the bucket's current op for `op`'s key, unless the key was
    // never stored; returns the removed op's id.
    let mut remove_current = |key: &str,
                              keys: &mut BucketKeys,
                              puts: &mut PendingPuts<'_, '_>,
                              sums: &mut StoredChecksum|
     -> Result<Option<i64>> {
        if let BucketKeys::Fresh(set) = keys {
            if !set.contains(&key_hash(key)) {
                return Ok(None);
            }
        }
        puts.flush()?;
        let mut rows = delete_op.query(params![bucket, key]).context(CONTEXT)?;
        let mut removed = None;
        while let Some(row) = rows.next().context(CONTEXT)? {
            let old = Checksum(row.get::<_, i64>(0).context(CONTEXT)? as u32);
            sums.add += old;
            sums.op = sums.op - old;
            removed = Some(row.get::<_, i64>(1).context(CONTEXT)?);
        }
        Ok(removed)
    };

    for op in &line.data {
        match op.op {
            OpType::PUT => {
                let key = op.key();
                if let Some(old_op) = remove_current(&key, keys, &mut puts, &mut sums)? {
                    op_count -= 1;
                    pending_ops -= i64::from(old_op > last_applied_op);
                }
                if let BucketKeys::Fresh(set) = keys {
                    set.insert(key_hash(&key));
                }
                op_count += 1;
                pending_ops += 1;
                sums.op += op.checksum;
                puts.push(op, key)?;
            }
            OpType::REMOVE => {
                let removed = remove_current(&op.key(), keys, &mut puts, &mut sums)?;
                if let Some(old_op) = removed {
                    op_count -= 1;
                    pending_ops -= i64::from(old_op > last_applied_op);
                }
                sums.add += op.checksum;
                // As the reference core: only a bucket that was applied
                // before can have put the row in the app's tables.
                if removed.is_some() && last_applied_op > 0 {
                    mark_row
                        .execute(params![op.object_type.as_deref(), op.object_id.as_deref()])
                        .context(CONTEXT)?;
                }
            }
            OpType::MOVE => sums.add += op.checksum,
            OpType::CLEAR => {
                puts.flush()?;
                db.execute(MARK_BUCKET_ROWS_UPDATED, [bucket]).context(CONTEXT)?;
                db.execute("DELETE FROM ps_oplog WHERE bucket = ?1", [bucket]).context(CONTEXT)?;
                sums = StoredChecksum { add: op.checksum, op: Checksum(0) };
                cleared = true;
                last_applied_op = 0;
                op_count = 0;
                pending_ops = 0;
            }
        }
    }
    puts.flush()?;
    counters.since_last += line.data.len() as i64;
    let last_op = line.data.last().map(|op| op.op_id);
    db.execute(
        UPDATE_BUCKET,
        params![
            bucket,
            last_op,
            cleared,
            sums.add.as_i64(),
            sums.op.as_i64(),
            counters.since_last,
            size as i64,
            op_count,
            pending_ops
        ],
    )
    .context(CONTEXT)?;
    Ok(StoredLine { counters })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn key(t: &str, id: &str, subkey: Option<&str>) -> String {
        OplogEntry {
            op_id: 1,
            op: OpType::PUT,
            object_type: Some(Cow::Borrowed(t)),
            object_id: Some(Cow::Borrowed(id)),
            subkey: subkey.map(Cow::Borrowed),
            checksum: Checksum(0),
            data: None,
        }
        .key()
    }

    #[test]
    fn key_hash_follows_the_stored_key() {
        // A missing subkey is stored as the text "null": the same key.
        assert_eq!(key_hash(&key("a", "b", None)), key_hash(&key("a", "b", Some("null"))));
        assert_ne!(key_hash(&key("a", "b", None)), key_hash(&key("a", "b", Some(""))));
        assert_ne!(key_hash(&key("ab", "c", None)), key_hash(&key("a", "bc", None)));
    }

    #[test]
    fn insert_sql_has_seven_parameters_per_row() {
        let sql = insert_sql(3);
        assert_eq!(sql.matches('?').count(), 21);
        assert!(sql.ends_with("(?,?,?,?,?,?,?)"));
    }
}
