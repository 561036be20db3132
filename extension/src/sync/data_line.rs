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
//!
//! The lookup itself goes through `ps_oplog_row` (and, for the rare
//! "irregular" keys whose type or id is NULL or holds a '/', the small
//! partial index `ps_oplog_irregular_key`), not through a (bucket, key)
//! index: schema version 3 dropped that index, whose random-order inserts
//! cost about a quarter of storing a line (see
//! `sql/migrations/0003_oplog_key_through_row.up.sql` for why the two
//! lookups find exactly the ops a (bucket, key) lookup would).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

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
/// SQL: removes a bucket's current op for a key of a regular op, found by
/// the (row_type, row_id) the key starts with; returns its checksum and id.
const DELETE_OP_BY_ROW: &str = "DELETE FROM ps_oplog INDEXED BY ps_oplog_row
     WHERE row_type = ?1 AND row_id = ?2 AND bucket = ?3 AND key = ?4 RETURNING hash, op_id";
/// SQL: removes a bucket's irregular op for a key (the condition is the
/// partial index's, word for word, so that SQLite can use it).
const DELETE_IRREGULAR_OP: &str = "DELETE FROM ps_oplog INDEXED BY ps_oplog_irregular_key
     WHERE bucket = ?1 AND key = ?2
       AND (row_type IS NULL OR row_id IS NULL OR instr(row_type, '/') > 0 OR instr(row_id, '/') > 0)
     RETURNING hash, op_id";
/// SQL: whether a bucket holds irregular ops at all.
const HAS_IRREGULAR_OPS: &str = "SELECT EXISTS(SELECT 1 FROM ps_oplog INDEXED BY ps_oplog_irregular_key
     WHERE bucket = ?1
       AND (row_type IS NULL OR row_id IS NULL OR instr(row_type, '/') > 0 OR instr(row_id, '/') > 0))";
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

/// Whether an op's key is irregular: its type or id is missing or holds a
/// '/', so the key's first two '/' do not end them.
fn is_irregular(op: &OplogEntry<'_>) -> bool {
    match (op.object_type.as_deref(), op.object_id.as_deref()) {
        (Some(t), Some(id)) => t.contains('/') || id.contains('/'),
        _ => true,
    }
}

/// Writes `op`'s key (`type/id/subkey`, see [`OplogEntry::key`]) to the
/// end of `buf`.
fn push_key(buf: &mut String, op: &OplogEntry<'_>) {
    buf.push_str(op.object_type.as_deref().unwrap_or(""));
    buf.push('/');
    buf.push_str(op.object_id.as_deref().unwrap_or(""));
    buf.push('/');
    buf.push_str(op.subkey.as_deref().unwrap_or("null"));
}

/// The (row_type, row_id) a regular op with this key has: the text before
/// the key's first '/' and between its first and second.
fn row_of_key(key: &str) -> (&str, &str) {
    let (row_type, rest) = key.split_once('/').unwrap_or((key, ""));
    let (row_id, _) = rest.split_once('/').unwrap_or((rest, ""));
    (row_type, row_id)
}

/// PUTs waiting for a multi-row INSERT. Their keys are written one after
/// the other into `keys`, which is reused: no allocation per op.
struct PendingPuts<'l, 'c> {
    db: &'c Connection,
    bucket: i64,
    rows: Vec<(&'l OplogEntry<'l>, std::ops::Range<usize>)>,
    keys: String,
    full: Option<Statement<'c>>,
}

impl<'l, 'c> PendingPuts<'l, 'c> {
    fn push(&mut self, op: &'l OplogEntry<'l>) -> Result<()> {
        let from = self.keys.len();
        push_key(&mut self.keys, op);
        self.rows.push((op, from..self.keys.len()));
        if self.rows.len() == BATCH {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let mut partial;
        let stmt = if self.rows.len() == BATCH {
            if self.full.is_none() {
                self.full = Some(self.db.prepare(&insert_sql(BATCH)).context(CONTEXT)?);
            }
            self.full.as_mut().expect("prepared above")
        } else {
            partial = self.db.prepare(&insert_sql(self.rows.len())).context(CONTEXT)?;
            &mut partial
        };
        let mut i = 0;
        for (op, key) in &self.rows {
            stmt.raw_bind_parameter(i + 1, self.bucket).context(CONTEXT)?;
            stmt.raw_bind_parameter(i + 2, op.op_id).context(CONTEXT)?;
            stmt.raw_bind_parameter(i + 3, op.object_type.as_deref()).context(CONTEXT)?;
            stmt.raw_bind_parameter(i + 4, op.object_id.as_deref()).context(CONTEXT)?;
            stmt.raw_bind_parameter(i + 5, &self.keys[key.clone()]).context(CONTEXT)?;
            stmt.raw_bind_parameter(i + 6, op.data.as_deref()).context(CONTEXT)?;
            stmt.raw_bind_parameter(i + 7, i64::from(op.checksum.0 as i32)).context(CONTEXT)?;
            i += 7;
        }
        stmt.raw_execute().context(CONTEXT)?;
        self.rows.clear();
        self.keys.clear();
        Ok(())
    }
}

/// Finds and removes the op a new op of a bucket supersedes.
struct Superseded<'c> {
    db: &'c Connection,
    bucket: i64,
    by_row: Statement<'c>,
    irregular: Option<Statement<'c>>,
    /// Whether the bucket may hold irregular ops: unknown until needed,
    /// and true as soon as this line stores one.
    has_irregular: Option<bool>,
}

impl Superseded<'_> {
    /// Removes the bucket's current op for `key`, adding its checksum to
    /// `sums`; returns the removed op's id. Pending PUTs must be flushed.
    fn remove(&mut self, key: &str, sums: &mut StoredChecksum) -> Result<Option<i64>> {
        let mut removed = None;
        let mut take = |rows: &mut rusqlite::Rows<'_>| -> Result<()> {
            while let Some(row) = rows.next().context(CONTEXT)? {
                let old = Checksum(row.get::<_, i64>(0).context(CONTEXT)? as u32);
                sums.add += old;
                sums.op = sums.op - old;
                removed = Some(row.get::<_, i64>(1).context(CONTEXT)?);
            }
            Ok(())
        };
        let (row_type, row_id) = row_of_key(key);
        take(&mut self.by_row.query(params![row_type, row_id, self.bucket, key]).context(CONTEXT)?)?;
        let has_irregular = match self.has_irregular {
            Some(known) => known,
            None => {
                let found = self.db.query_row(HAS_IRREGULAR_OPS, [self.bucket], |r| r.get(0)).context(CONTEXT)?;
                *self.has_irregular.insert(found)
            }
        };
        if has_irregular {
            if self.irregular.is_none() {
                self.irregular = Some(self.db.prepare(DELETE_IRREGULAR_OP).context(CONTEXT)?);
            }
            let stmt = self.irregular.as_mut().expect("prepared above");
            take(&mut stmt.query(params![self.bucket, key]).context(CONTEXT)?)?;
        }
        Ok(removed)
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

    let mut superseded = Superseded {
        db,
        bucket,
        by_row: db.prepare(DELETE_OP_BY_ROW).context(CONTEXT)?,
        irregular: None,
        has_irregular: None,
    };
    let mut mark_row = None;
    let mut puts = PendingPuts {
        db,
        bucket,
        rows: Vec::with_capacity(BATCH),
        keys: String::with_capacity(BATCH * 48),
        full: None,
    };
    let mut key_buf = String::new();
    let mut cleared = false;

    // Removes the bucket's current op for `key`, unless the key was never
    // stored; returns the removed op's id.
    let remove_current = |key: &str,
                          keys: &mut BucketKeys,
                          puts: &mut PendingPuts<'_, '_>,
                          superseded: &mut Superseded<'_>,
                          sums: &mut StoredChecksum|
     -> Result<Option<i64>> {
        if let BucketKeys::Fresh(set) = keys {
            if !set.contains(&key_hash(key)) {
                return Ok(None);
            }
        }
        puts.flush()?;
        superseded.remove(key, sums)
    };

    for op in &line.data {
        match op.op {
            OpType::PUT => {
                key_buf.clear();
                push_key(&mut key_buf, op);
                if let Some(old_op) = remove_current(&key_buf, keys, &mut puts, &mut superseded, &mut sums)? {
                    op_count -= 1;
                    pending_ops -= i64::from(old_op > last_applied_op);
                }
                if let BucketKeys::Fresh(set) = keys {
                    set.insert(key_hash(&key_buf));
                }
                if is_irregular(op) {
                    superseded.has_irregular = Some(true);
                }
                op_count += 1;
                pending_ops += 1;
                sums.op += op.checksum;
                puts.push(op)?;
            }
            OpType::REMOVE => {
                key_buf.clear();
                push_key(&mut key_buf, op);
                let removed = remove_current(&key_buf, keys, &mut puts, &mut superseded, &mut sums)?;
                if let Some(old_op) = removed {
                    op_count -= 1;
                    pending_ops -= i64::from(old_op > last_applied_op);
                }
                sums.add += op.checksum;
                // As the reference core: only a bucket that was applied
                // before can have put the row in the app's tables.
                if removed.is_some() && last_applied_op > 0 {
                    if mark_row.is_none() {
                        mark_row = Some(db.prepare(MARK_ROW_UPDATED).context(CONTEXT)?);
                    }
                    mark_row
                        .as_mut()
                        .expect("prepared above")
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

    fn entry<'a>(t: Option<&'a str>, id: Option<&'a str>, subkey: Option<&'a str>) -> OplogEntry<'a> {
        OplogEntry {
            op_id: 1,
            op: OpType::PUT,
            object_type: t.map(Cow::Borrowed),
            object_id: id.map(Cow::Borrowed),
            subkey: subkey.map(Cow::Borrowed),
            checksum: Checksum(0),
            data: None,
        }
    }

    fn key(t: &str, id: &str, subkey: Option<&str>) -> String {
        entry(Some(t), Some(id), subkey).key()
    }

    #[test]
    fn key_hash_follows_the_stored_key() {
        // A missing subkey is stored as the text "null": the same key.
        assert_eq!(key_hash(&key("a", "b", None)), key_hash(&key("a", "b", Some("null"))));
        assert_ne!(key_hash(&key("a", "b", None)), key_hash(&key("a", "b", Some(""))));
        assert_ne!(key_hash(&key("ab", "c", None)), key_hash(&key("a", "bc", None)));
    }

    #[test]
    fn a_regular_key_starts_with_its_row() {
        for (t, id, subkey) in [("a", "b", None), ("a", "b", Some("c/d")), ("", "", Some("")), ("t", "x y", Some("null"))] {
            let op = entry(Some(t), Some(id), subkey);
            let mut buf = String::from("leftover");
            buf.clear();
            push_key(&mut buf, &op);
            assert_eq!(buf, op.key());
            assert!(!is_irregular(&op));
            assert_eq!(row_of_key(&buf), (t, id));
        }
        // Irregular ops: their keys can equal a regular op's key.
        assert_eq!(key("a/b", "c", None), key("a", "b", Some("c/null")));
        for (t, id) in [(Some("a/b"), Some("c")), (Some("a"), Some("/")), (None, Some("c")), (Some("a"), None)] {
            let op = entry(t, id, None);
            assert!(is_irregular(&op), "{t:?} {id:?}");
        }
    }

    #[test]
    fn irregular_lookups_use_the_partial_index_condition() {
        let up = include_str!("../../../sql/migrations/0003_oplog_key_through_row.up.sql");
        let condition = "row_type IS NULL OR row_id IS NULL OR instr(row_type, '/') > 0 OR instr(row_id, '/') > 0";
        assert!(up.contains(condition));
        assert!(DELETE_IRREGULAR_OP.contains(condition));
        assert!(HAS_IRREGULAR_OPS.contains(condition));
    }

    #[test]
    fn insert_sql_has_seven_parameters_per_row() {
        let sql = insert_sql(3);
        assert_eq!(sql.matches('?').count(), 21);
        assert!(sql.ends_with("(?,?,?,?,?,?,?)"));
    }
}
