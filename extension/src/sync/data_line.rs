//! Storing the ops of a data line in ps_oplog, fast: storing lines is most
//! of a download's time. Two costs dominate a naive store (measured with
//! `perf` on 100 lines of 1000 ops): looking up the op a PUT supersedes (a
//! `DELETE ... RETURNING` per op, ~20%) and executing one INSERT per op
//! (~30%, much of it opening and closing cursors). So [`KnownKeys`] skips
//! the lookup for keys a bucket cannot hold yet, PUTs are inserted
//! `BATCH` rows per statement (`PendingPuts`), and the lookup goes
//! through `ps_oplog_row` (`rows_of_key`) instead of a (bucket, key)
//! index. The measurements behind each are in docs/benchmarks.md.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use rusqlite::{params, CachedStatement, Connection};

use super::checksum::Checksum;
use super::line::{DataLine, OpType, OplogEntry};
use super::storage::{Counters, StoredChecksum, MARK_BUCKET_ROWS_UPDATED};
use crate::sqlite::CachedSql;
use crate::error::{Result, SqliteResultExt};
use crate::sqlite::{BorrowingStatement, Param};

const CONTEXT: &str = "storing a data line";

/// PUTs per INSERT statement. The statement is prepared once per line, and
/// preparing costs about as much per row as running it saves: under
/// callgrind (store bench, 100 lines) 25 rows took 2.2% fewer instructions
/// than 100, and 10 or 50 more than 25.
const BATCH: usize = 25;

/// SQL: the bucket row (created on first data), with what storing updates.
const UPSERT_BUCKET: &str = "INSERT INTO ps_buckets(name) VALUES (?1)
     ON CONFLICT(name) DO UPDATE SET name = excluded.name
     RETURNING id, add_checksum, op_checksum, count_at_last, count_since_last, last_applied_op,
               oplite_op_count, oplite_pending_ops";
/// SQL: removes a bucket's op for a key among the ops of one row (`IS`:
/// a NULL type or id is written as "" in the key); returns its checksum
/// and id.
const DELETE_OP_OF_ROW: &str = "DELETE FROM ps_oplog INDEXED BY ps_oplog_row
     WHERE row_type IS ?1 AND row_id IS ?2 AND bucket = ?3 AND key = ?4 RETURNING hash, op_id";
/// SQL: the same, by a walk of the bucket's ops, for keys with so many '/'
/// that trying every row they can name would cost more.
const DELETE_OP_OF_BUCKET: &str = "DELETE FROM ps_oplog INDEXED BY ps_oplog_opid
     WHERE bucket = ?1 AND key = ?2 RETURNING hash, op_id";
/// SQL: marks a row for re-derivation at the next full apply.
const MARK_ROW_UPDATED: &str = "INSERT OR IGNORE INTO ps_updated_rows(row_type, row_id) VALUES (?1, ?2)";
/// SQL: the bucket's bookkeeping after the line.
const UPDATE_BUCKET: &str = "UPDATE ps_buckets SET
       last_op = ifnull(?2, last_op),
       last_applied_op = CASE WHEN ?3 THEN 0 ELSE last_applied_op END,
       add_checksum = ?4, op_checksum = ?5,
       count_since_last = ?6, downloaded_size = downloaded_size + ?7,
       oplite_op_count = ?8, oplite_pending_ops = ?9
     WHERE id = ?1";

/// SQL: [`insert_sql`] of one row.
const INSERT_ONE: &str = "INSERT OR FAIL INTO ps_oplog(bucket, op_id, row_type, row_id, key, data, hash) VALUES (?,?,?,?,?,?,?)";
/// Parameters of one op in [`insert_sql`].
const PARAMS_PER_OP: usize = 7;

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

/// A 64-bit hash of an op's key (`type/id/subkey`, as stored), eight
/// bytes at a time (byte-wise FNV-1a was measurable at 1M ops), finished
/// with a multiply-xorshift so the pass-through hasher gets mixed bits.
fn key_hash(key: &str) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ key.len() as u64;
    let mut chunks = key.as_bytes().chunks_exact(8);
    for chunk in &mut chunks {
        h = (h ^ u64::from_le_bytes(chunk.try_into().expect("8 bytes"))).wrapping_mul(K).rotate_left(31);
    }
    let mut last = [0u8; 8];
    last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h ^ u64::from_le_bytes(last)).wrapping_mul(K);
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
///
/// For every bucket that was empty when this iteration first stored into
/// it, a hash of every key stored since. A PUT whose key was never seen
/// cannot supersede anything and skips the lookup. The set can only err
/// towards an unnecessary lookup (a hash collision, or keys whose
/// transaction the host rolled back), never towards a missed one, because
/// every insert into such a bucket goes through it.
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
        match self.buckets.entry(bucket) {
            Entry::Occupied(known) => Ok(known.into_mut()),
            Entry::Vacant(slot) => {
                let empty: bool = db
                    .query_row_cached("SELECT NOT EXISTS(SELECT 1 FROM ps_oplog WHERE bucket = ?1)", [bucket], |r| r.get(0))
                    .context(CONTEXT)?;
                Ok(slot.insert(if empty { BucketKeys::Fresh(KeySet::default()) } else { BucketKeys::Unknown }))
            }
        }
    }
}

/// What storing a data line changed, for progress.
pub struct StoredLine {
    /// The bucket's counters after the line.
    pub counters: Counters,
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

/// An op that names no row: its type or its id is missing. As the
/// reference core, such an op is stored with NULL type, id and key, and
/// neither replaces nor is replaced by any other op.
fn rowless(op: &OplogEntry<'_>) -> bool {
    op.object_type.is_none() || op.object_id.is_none()
}

/// How many rows [`rows_of_key`] tries for `key` (without the NULL
/// variants): n(n-1)/2 for n '/'.
fn row_candidates(key: &str) -> usize {
    let slashes = key.bytes().filter(|b| *b == b'/').count();
    slashes * slashes.saturating_sub(1) / 2
}

/// Every (row_type, row_id) an op with this key can have: the type is the
/// key's text before one of its '/', the id the text from there to a later
/// '/'. Where either is "", the op may also have NULL there. A key with
/// two '/' (the usual case) has one candidate, with `n` '/' n(n-1)/2.
///
/// The lookup of the op a PUT supersedes goes through `ps_oplog_row`, not
/// through a (bucket, key) index: schema version 3 dropped that index,
/// whose random-order inserts cost about a quarter of storing a line. A key
/// is `type/id/subkey` (a NULL type or id written as ""); each candidate is
/// looked up by (row_type, row_id) and then checked for bucket and key, so
/// the ops found are exactly those a (bucket, key) lookup finds. When a key
/// names more rows than its bucket holds ops, the bucket's ops are walked
/// instead, so a key with many '/' costs at most a walk of its bucket.
fn rows_of_key(key: &str, mut each: impl FnMut(Option<&str>, Option<&str>) -> Result<()>) -> Result<()> {
    let slashes: Vec<usize> = key.match_indices('/').map(|(i, _)| i).collect();
    for (n, &type_end) in slashes.iter().enumerate() {
        for &id_end in &slashes[n + 1..] {
            let row_type = &key[..type_end];
            let row_id = &key[type_end + 1..id_end];
            for t in [Some(row_type), None].into_iter().take(if row_type.is_empty() { 2 } else { 1 }) {
                for id in [Some(row_id), None].into_iter().take(if row_id.is_empty() { 2 } else { 1 }) {
                    each(t, id)?;
                }
            }
        }
    }
    Ok(())
}

/// PUTs waiting for a multi-row INSERT. Their keys are written one after
/// the other into `keys`, which is reused: no allocation per op, and texts
/// are bound without copying ([`BorrowingStatement`]).
///
/// A later op of the same line that supersedes a PUT still waiting here
/// takes it out of the batch instead (that PUT already removed any stored
/// op with its key, so the database need not be asked); before, every
/// lookup flushed the batch, and a line whose ops all needed a lookup
/// prepared a one-row INSERT per op.
struct PendingPuts<'l, 'c> {
    db: &'c Connection,
    bucket: i64,
    rows: Vec<(&'l OplogEntry<'l>, std::ops::Range<usize>)>,
    keys: String,
    full: Option<BorrowingStatement<'c>>,
}

impl<'l, 'c> PendingPuts<'l, 'c> {
    fn push(&mut self, op: &'l OplogEntry<'l>) -> Result<()> {
        let from = self.keys.len();
        // A row-less op is stored without a key (an empty range, which no
        // key a lookup asks for equals).
        if !rowless(op) {
            push_key(&mut self.keys, op);
        }
        self.rows.push((op, from..self.keys.len()));
        if self.rows.len() == BATCH {
            self.flush()?;
        }
        Ok(())
    }

    /// Takes the waiting PUT with this key out of the batch: its op id and
    /// checksum.
    fn take(&mut self, key: &str) -> Option<(i64, Checksum)> {
        let i = self.rows.iter().position(|(_, range)| &self.keys[range.clone()] == key)?;
        let (op, _) = self.rows.remove(i);
        Some((op.op_id, op.checksum))
    }

    fn flush(&mut self) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let mut params = Vec::with_capacity(self.rows.len() * PARAMS_PER_OP);
        for (op, key) in &self.rows {
            let (row_type, row_id, key) = if rowless(op) {
                (None, None, None)
            } else {
                (op.object_type.as_deref(), op.object_id.as_deref(), Some(&self.keys[key.clone()]))
            };
            params.extend([
                Param::Int(self.bucket),
                Param::Int(op.op_id),
                Param::Text(row_type),
                Param::Text(row_id),
                Param::Text(key),
                Param::Text(op.data.as_deref()),
                Param::Int(i64::from(op.checksum.0 as i32)),
            ]);
        }
        if self.rows.len() == BATCH {
            if self.full.is_none() {
                self.full = Some(BorrowingStatement::prepare(self.db, &insert_sql(BATCH)).context(CONTEXT)?);
            }
            self.full.as_mut().expect("prepared above").execute(&params).context(CONTEXT)?;
        } else {
            // A partial batch ends a line, and a small sync's line has one
            // op: a cached one-row insert per op, not a statement prepared
            // for this many rows (preparing was most of a one-op store).
            let mut one = self.db.prepare_cached(INSERT_ONE).context(CONTEXT)?;
            for row in params.chunks(PARAMS_PER_OP) {
                one.execute(rusqlite::params_from_iter(row)).context(CONTEXT)?;
            }
        }
        drop(params);
        self.rows.clear();
        self.keys.clear();
        Ok(())
    }
}

/// Finds and removes the op a new op of a bucket supersedes.
struct Superseded<'c> {
    db: &'c Connection,
    bucket: i64,
    /// Prepared on first use: lines into fresh buckets never look up.
    of_row: Option<CachedStatement<'c>>,
    of_bucket: Option<CachedStatement<'c>>,
}

impl Superseded<'_> {
    /// Removes the bucket's current op for `key`, adding its checksum to
    /// `sums`; returns the removed op's id. `ops` is how many ops the
    /// bucket holds: a key that names more candidate rows than that is
    /// found by walking the bucket (both ways find the same ops; this
    /// bounds the cost of a key with many '/'). No PUT waiting in the
    /// batch may have this key.
    fn remove(&mut self, key: &str, ops: i64, sums: &mut StoredChecksum) -> Result<Option<i64>> {
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
        if i64::try_from(row_candidates(key)).unwrap_or(i64::MAX) > ops.max(1) {
            if self.of_bucket.is_none() {
                self.of_bucket = Some(self.db.prepare_cached(DELETE_OP_OF_BUCKET).context(CONTEXT)?);
            }
            let stmt = self.of_bucket.as_mut().expect("prepared above");
            take(&mut stmt.query(params![self.bucket, key]).context(CONTEXT)?)?;
            return Ok(removed);
        }
        if self.of_row.is_none() {
            self.of_row = Some(self.db.prepare_cached(DELETE_OP_OF_ROW).context(CONTEXT)?);
        }
        let (bucket, stmt) = (self.bucket, self.of_row.as_mut().expect("prepared above"));
        rows_of_key(key, |row_type, row_id| take(&mut stmt.query(params![row_type, row_id, bucket, key]).context(CONTEXT)?))?;
        Ok(removed)
    }
}

/// Stores the ops of one data line. `size` is the line's length in bytes.
pub fn store_data_line(db: &Connection, line: &DataLine<'_>, size: usize, known: &mut KnownKeys) -> Result<StoredLine> {
    let (bucket, mut sums, mut counters, mut last_applied_op, mut op_count, mut pending_ops) = db
        .query_row_cached(UPSERT_BUCKET, [&*line.bucket], |r| {
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

    let mut superseded = Superseded { db, bucket, of_row: None, of_bucket: None };
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

    // Removes the bucket's current op for `key` if `stored` (the key may
    // have been stored), from the batch or from ps_oplog; returns the
    // removed op's id.
    let remove_current = |stored: bool,
                          key: &str,
                          ops: i64,
                          puts: &mut PendingPuts<'_, '_>,
                          superseded: &mut Superseded<'_>,
                          sums: &mut StoredChecksum|
     -> Result<Option<i64>> {
        if !stored {
            return Ok(None);
        }
        if let Some((op_id, checksum)) = puts.take(key) {
            sums.add += checksum;
            sums.op = sums.op - checksum;
            return Ok(Some(op_id));
        }
        superseded.remove(key, ops, sums)
    };

    for op in &line.data {
        match op.op {
            OpType::PUT => {
                key_buf.clear();
                push_key(&mut key_buf, op);
                // One probe of the set: a key it did not hold is new.
                let stored = match keys {
                    _ if rowless(op) => false,
                    BucketKeys::Fresh(set) => !set.insert(key_hash(&key_buf)),
                    BucketKeys::Unknown => true,
                };
                if let Some(old_op) = remove_current(stored, &key_buf, op_count, &mut puts, &mut superseded, &mut sums)? {
                    op_count -= 1;
                    pending_ops -= i64::from(old_op > last_applied_op);
                }
                op_count += 1;
                // The incremental walk visits ops above the last apply
                // only: a re-sent op at or below it is no new work.
                pending_ops += i64::from(op.op_id > last_applied_op);
                sums.op += op.checksum;
                puts.push(op)?;
            }
            OpType::REMOVE => {
                key_buf.clear();
                push_key(&mut key_buf, op);
                let stored = match keys {
                    _ if rowless(op) => false,
                    BucketKeys::Fresh(set) => set.contains(&key_hash(&key_buf)),
                    BucketKeys::Unknown => true,
                };
                let removed = remove_current(stored, &key_buf, op_count, &mut puts, &mut superseded, &mut sums)?;
                if let Some(old_op) = removed {
                    op_count -= 1;
                    pending_ops -= i64::from(old_op > last_applied_op);
                }
                sums.add += op.checksum;
                // As the reference core: only a bucket that was applied
                // before can have put the row in the app's tables.
                if removed.is_some() && last_applied_op > 0 {
                    if mark_row.is_none() {
                        mark_row = Some(db.prepare_cached(MARK_ROW_UPDATED).context(CONTEXT)?);
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
                db.execute_cached(MARK_BUCKET_ROWS_UPDATED, [bucket]).context(CONTEXT)?;
                db.execute_cached("DELETE FROM ps_oplog WHERE bucket = ?1", [bucket]).context(CONTEXT)?;
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
    db.execute_cached(
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

    fn rows(key: &str) -> Vec<(Option<String>, Option<String>)> {
        let mut out = Vec::new();
        rows_of_key(key, |t, id| {
            out.push((t.map(str::to_owned), id.map(str::to_owned)));
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn every_row_an_op_with_the_key_can_have_is_a_candidate() {
        for (t, id, subkey) in [
            (Some("a"), Some("b"), None),
            (Some("a"), Some("b"), Some("c/d")),
            (Some("a/b"), Some("c"), None),
            (Some("a"), Some("b/c"), Some("x")),
            (Some(""), Some(""), Some("")),
            (None, Some("x"), None),
            (Some("t"), None, Some("/")),
            (None, None, None),
        ] {
            let op = entry(t, id, subkey);
            let mut buf = String::from("leftover");
            buf.clear();
            push_key(&mut buf, &op);
            assert_eq!(buf, op.key());
            let want = (t.map(str::to_owned), id.map(str::to_owned));
            assert!(rows(&buf).contains(&want), "{buf}: {:?} lacks {want:?}", rows(&buf));
        }
        let some = |t: &str, id: &str| (Some(t.to_owned()), Some(id.to_owned()));
        assert_eq!(rows("todos/1/null"), vec![some("todos", "1")]);
        assert_eq!(rows("a/b/c/null"), vec![some("a", "b"), some("a", "b/c"), some("a/b", "c")]);
        assert_eq!(rows("/x/s"), vec![some("", "x"), (None, Some("x".to_owned()))]);
        assert_eq!(row_candidates("todos/1/null"), 1);
        assert_eq!(row_candidates("a/b/c/null"), 3);
    }

    #[cfg(feature = "bundled")]
    #[test]
    fn the_row_lookup_seeks_on_type_and_id() {
        let db = Connection::open_in_memory().unwrap();
        crate::migrations::migrate_to(&db, crate::migrations::LATEST_VERSION).unwrap();
        let plan: String = db
            .query_row(&format!("EXPLAIN QUERY PLAN {DELETE_OP_OF_ROW}"), params![None::<&str>, "a", 1, "k"], |r| {
                r.get(3)
            })
            .unwrap();
        assert_eq!(plan, "SEARCH ps_oplog USING INDEX ps_oplog_row (row_type=? AND row_id=?)");
        let plan: String = db
            .query_row(&format!("EXPLAIN QUERY PLAN {DELETE_OP_OF_BUCKET}"), params![1, "k"], |r| r.get(3))
            .unwrap();
        assert_eq!(plan, "SEARCH ps_oplog USING INDEX ps_oplog_opid (bucket=?)");
    }

    #[test]
    fn insert_sql_has_seven_parameters_per_row() {
        assert_eq!(insert_sql(1), INSERT_ONE);
        assert_eq!(INSERT_ONE.matches('?').count(), PARAMS_PER_OP);
        let sql = insert_sql(3);
        assert_eq!(sql.matches('?').count(), 21);
        assert!(sql.ends_with("(?,?,?,?,?,?,?)"));
    }
}
