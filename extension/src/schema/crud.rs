//! The upload queue: how local writes through the views become ps_crud
//! entries, grouped by transaction.
//!
//! # Why it is built this way
//!
//! Every entry of one transaction carries the same `tx_id`, and the next
//! transaction gets the next one (`ps_tx.next_tx`). Knowing where a
//! transaction starts and ends needs SQLite's help; the connection's commit
//! hook belongs to the host, so oplite uses a virtual table instead:
//! `powersync_crud`. SQLite calls its `xBegin` when the first statement of a
//! transaction that may write to it starts, its savepoint callbacks as
//! statements and savepoints open, roll back and release, and `xSync`,
//! `xCommit` or `xRollback` at the end. As in the reference core, `xBegin`
//! takes the next `tx_id` (so a statement that matches no row still uses
//! one up).
//!
//! The reference writes every entry *through* that table as it happens:
//! per row, nested INSERTs into ps_crud, ps_updated_rows and ps_kv, each
//! page they touch copied into the statement journal of the app's
//! statement. oplite's triggers instead hand the entry to
//! `oplite_crud_put` / `_patch` / `_delete`, which render its JSON from the
//! row's values ([`super::crud_json`]) and append it to a buffer in memory.
//! The buffer is written in `xSync`, when the transaction commits, with one
//! `INSERT ... SELECT` per table (the buffer reads back as the rows of
//! `powersync_crud`): per row, the app's statement then only writes its own
//! data table. Savepoint callbacks keep the buffer exact: a
//! `ROLLBACK TO` (or a failed statement) drops the entries made since.
//!
//! Measured with benches/views.rs (callgrind, 5k single-row inserts in one
//! transaction, instructions per row): plain table 8.8k; oplite writing
//! ps_crud and ps_updated_rows from the trigger body 31k; buffered and
//! flushed with one INSERT ... SELECT per table 24k (the view and trigger
//! machinery alone, writing only the data table, is about 12k). The rest
//! is the queue's own volume: each entry's JSON is larger than the row.
//!
//! One visible difference: a transaction's entries appear in ps_crud when it
//! commits, not while it runs. Everything that reads ps_crud (the SDKs'
//! upload loop, checkpoint application) does so in transactions of its own.
//!
//! Each trigger still names `powersync_crud` in an INSERT that never runs
//! (`INSERT INTO powersync_crud(op) SELECT NULL WHERE 0`): that is enough for
//! SQLite to make the table part of the statement's transaction.
//!
//! `powersync_crud` also accepts the reference's own INSERTs (columns `op,
//! id, type, data, old_values, metadata, options`, data already JSON) and
//! `powersync_crud_(data)` (a complete entry), for triggers written against
//! the reference.

use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::types::{Value, ValueRef};
use rusqlite::Connection;

use super::crud_json::{self, read_items};
use crate::error::{OpliteError, Result, SqliteResultExt};
use crate::sqlite::{register_function, register_write_only_table, Purity, WriteOnlyTable};

/// SQL: the tx_id the next transaction gets.
const READ_NEXT_TX: &str = "SELECT ifnull((SELECT next_tx FROM ps_tx WHERE id = 1), 1)";
/// SQL: records that `?1` is taken (idempotent: repeated at commit in case
/// a ROLLBACK TO undid the write made at `xBegin`).
const TAKE_TX: &str = "UPDATE ps_tx SET next_tx = max(ifnull(next_tx, 1), ?1 + 1) WHERE id = 1";
/// SQL: after a local write, no checkpoint may be applied until the server
/// confirms the upload (PROTOCOL.md, write checkpoints).
const SET_TARGET: &str =
    "INSERT OR REPLACE INTO ps_kv(key, value) VALUES('target_checkpoint_request_id', 9223372036854775807)";
/// SQL: forgets the checkpoint requests seen before the local write.
const FORGET_REQUESTS: &str =
    "DELETE FROM ps_kv WHERE key IN ('last_seen_checkpoint_request_id', 'last_applied_checkpoint_request_id')";
/// SQL: queues the transaction's entries (reading `powersync_crud` returns
/// them, see [`CrudTable`]).
const QUEUE_ENTRIES: &str = "INSERT INTO ps_crud(data, tx_id) SELECT data, ?1 FROM powersync_crud";
/// SQL: marks their rows for re-derivation at the next full apply.
const MARK_UPDATED: &str =
    "INSERT OR IGNORE INTO ps_updated_rows(row_type, row_id) SELECT type, id FROM powersync_crud WHERE type IS NOT NULL";

/// The declared columns of `powersync_crud`.
const CRUD_TABLE: &str =
    "CREATE TABLE x(op TEXT, id TEXT, type TEXT, data TEXT, old_values TEXT, metadata TEXT, options INT)";
/// The declared columns of `powersync_crud_`.
const RAW_CRUD_TABLE: &str = "CREATE TABLE x(data TEXT, options INT)";

/// `options` bit of `powersync_crud`: skip a PATCH whose data is `{}`.
const IGNORE_EMPTY_UPDATE: i64 = 16;

/// One entry waiting for its transaction to commit.
#[derive(Debug)]
struct Entry {
    /// The ps_crud JSON.
    data: String,
    /// The row to mark in ps_updated_rows (insert-only tables mark none,
    /// and do not touch ps_kv).
    row: Option<(String, Value)>,
}

/// The transaction as the queue sees it.
#[derive(Debug, Default)]
struct TxState {
    /// The tx_id of the open transaction, from `xBegin`.
    tx_id: Option<i64>,
    /// Entries of the open transaction, in order.
    entries: Vec<Entry>,
    /// `(savepoint index, entries when it opened)`, innermost last.
    savepoints: Vec<(i32, usize)>,
}

/// Per-connection state shared by `powersync_crud`, `powersync_crud_` and
/// the crud functions.
#[derive(Default)]
pub struct CrudQueue {
    state: Mutex<TxState>,
}

impl CrudQueue {
    fn state(&self) -> Result<MutexGuard<'_, TxState>> {
        self.state.lock().map_err(|_| OpliteError::Internal("upload queue state poisoned".into()))
    }

    /// Adds an entry to the open transaction.
    fn push(&self, data: String, row: Option<(&str, ValueRef<'_>)>) -> Result<()> {
        let mut state = self.state()?;
        if state.tx_id.is_none() {
            return Err(OpliteError::Misuse {
                function: "oplite_crud",
                reason: "no transaction has written to powersync_crud (is this trigger from an older oplite?)".into(),
            });
        }
        let row = row.map(|(t, id)| (t.to_owned(), owned(id)));
        state.entries.push(Entry { data, row });
        Ok(())
    }

    fn begin(&self, db: &Connection) -> Result<()> {
        if self.state()?.tx_id.is_some() {
            return Ok(()); // the other queue table began this transaction
        }
        let tx_id: i64 = db.prepare_cached(READ_NEXT_TX).and_then(|mut s| s.query_row([], |r| r.get(0))).context("reading ps_tx")?;
        db.prepare_cached(TAKE_TX).and_then(|mut s| s.execute([tx_id])).context("taking a tx_id")?;
        *self.state()? = TxState { tx_id: Some(tx_id), ..TxState::default() };
        Ok(())
    }

    /// Writes the transaction's entries (from `xSync`, as it commits): one
    /// `INSERT ... SELECT` per table, reading the entries back through
    /// `powersync_crud`.
    fn flush(&self, db: &Connection) -> Result<()> {
        let (tx_id, entries, local_write) = {
            let state = self.state()?;
            (state.tx_id, state.entries.len(), state.entries.iter().any(|e| e.row.is_some()))
        };
        let Some(tx_id) = tx_id else { return Ok(()) };
        if entries == 0 {
            return Ok(());
        }
        db.prepare_cached(TAKE_TX).and_then(|mut s| s.execute([tx_id])).context("taking a tx_id")?;
        db.prepare_cached(QUEUE_ENTRIES).and_then(|mut s| s.execute([tx_id])).context("queueing uploads")?;
        if local_write {
            db.prepare_cached(MARK_UPDATED).and_then(|mut s| s.execute([])).context("marking updated rows")?;
            db.prepare_cached(SET_TARGET).and_then(|mut s| s.execute([])).context("recording a local write")?;
            db.prepare_cached(FORGET_REQUESTS).and_then(|mut s| s.execute([])).context("recording a local write")?;
        }
        self.state()?.entries.clear();
        Ok(())
    }

    fn row_count(&self) -> usize {
        self.state.lock().map_or(0, |s| s.entries.len())
    }

    /// Columns of `powersync_crud` when read: `data` is the entry, `type`
    /// and `id` the row it marks.
    fn column(&self, row: usize, column: usize, result: &mut dyn FnMut(ValueRef<'_>)) {
        let Ok(state) = self.state.lock() else { return };
        let Some(entry) = state.entries.get(row) else { return };
        match (column, &entry.row) {
            (1, Some((_, id))) => result(ValueRef::from(id)),
            (2, Some((row_type, _))) => result(ValueRef::Text(row_type.as_bytes())),
            (3, _) => result(ValueRef::Text(entry.data.as_bytes())),
            _ => {}
        }
    }

    fn end(&self) {
        if let Ok(mut state) = self.state.lock() {
            *state = TxState::default();
        }
    }

    fn savepoint(&self, index: i32) {
        if let Ok(mut state) = self.state.lock() {
            let len = state.entries.len();
            state.savepoints.retain(|(i, _)| *i < index);
            state.savepoints.push((index, len));
        }
    }

    fn release(&self, index: i32) {
        if let Ok(mut state) = self.state.lock() {
            state.savepoints.retain(|(i, _)| *i < index);
        }
    }

    fn rollback_to(&self, index: i32) {
        if let Ok(mut state) = self.state.lock() {
            // A savepoint opened before this table joined the transaction
            // has no mark: every entry came after it.
            let len = state.savepoints.iter().find(|(i, _)| *i == index).map_or(0, |(_, len)| *len);
            state.entries.truncate(len);
            state.savepoints.retain(|(i, _)| *i <= index);
        }
    }
}

/// `powersync_crud`: the reference's queue table. Reading it returns the
/// entries the open transaction has queued so far (`data` the ps_crud JSON,
/// `type` and `id` the row it marks, NULL for insert-only tables).
struct CrudTable(Arc<CrudQueue>);

/// `powersync_crud_`: a complete entry, queued as it is (insert-only tables
/// of the reference).
struct RawCrudTable(Arc<CrudQueue>);

/// The transaction callbacks both queue tables share.
macro_rules! queue_transaction_callbacks {
    () => {
        fn begin(&self, db: &Connection) -> Result<()> {
            self.0.begin(db)
        }
        fn sync(&self, db: &Connection) -> Result<()> {
            self.0.flush(db)
        }
        fn commit(&self) {
            self.0.end()
        }
        fn rollback(&self) {
            self.0.end()
        }
        fn savepoint(&self, index: i32) {
            self.0.savepoint(index)
        }
        fn release(&self, index: i32) {
            self.0.release(index)
        }
        fn rollback_to(&self, index: i32) {
            self.0.rollback_to(index)
        }
        fn row_count(&self) -> usize {
            self.0.row_count()
        }
        fn column(&self, row: usize, column: usize, result: &mut dyn FnMut(ValueRef<'_>)) {
            self.0.column(row, column, result)
        }
    };
}

impl WriteOnlyTable for CrudTable {
    fn insert(&self, _db: &Connection, values: &[ValueRef<'_>]) -> Result<()> {
        let text = |i: usize| -> Result<Option<&str>> {
            match values.get(i).copied().unwrap_or(ValueRef::Null) {
                ValueRef::Null => Ok(None),
                ValueRef::Text(t) => std::str::from_utf8(t).map(Some).map_err(|_| bad("text is not UTF-8")),
                other => Err(bad(&format!("column {} must be text, got {}", i + 1, other.data_type()))),
            }
        };
        let op = text(0)?.ok_or_else(|| bad("op is required"))?;
        let id = values.get(1).copied().unwrap_or(ValueRef::Null);
        let row_type = text(2)?.ok_or_else(|| bad("type is required"))?;
        let data = text(3)?;
        let old = text(4)?;
        let metadata = values.get(5).copied().unwrap_or(ValueRef::Null);
        let options = values.get(6).and_then(|v| v.as_i64().ok()).unwrap_or(0);
        if op == "PATCH" && options & IGNORE_EMPTY_UPDATE != 0 && data.is_none_or(|d| d.trim() == "{}") {
            return Ok(());
        }
        let entry = crud_json::raw_entry(op, id, row_type, if op == "DELETE" { None } else { data }, old, metadata)?;
        self.0.push(entry, Some((row_type, id)))
    }
    queue_transaction_callbacks!();
}

impl WriteOnlyTable for RawCrudTable {
    fn insert(&self, _db: &Connection, values: &[ValueRef<'_>]) -> Result<()> {
        let entry = match values.first().copied().unwrap_or(ValueRef::Null) {
            ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
            _ => return Err(bad("data must be text")),
        };
        self.0.push(entry, None)
    }
    queue_transaction_callbacks!();
}

/// A value as an owned SQLite value (text kept even if not UTF-8).
pub(crate) fn owned(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Integer(i),
        ValueRef::Real(r) => Value::Real(r),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

fn bad(message: &str) -> OpliteError {
    OpliteError::InvalidArgument { function: "powersync_crud", message: message.to_owned(), type_mismatch: false }
}

fn arg_text<'a>(args: &[ValueRef<'a>], i: usize, function: &'static str) -> Result<&'a str> {
    match args.get(i) {
        Some(ValueRef::Text(t)) => std::str::from_utf8(t).map_err(|_| OpliteError::Internal(format!("{function}: not UTF-8"))),
        _ => Err(OpliteError::Internal(format!("{function}: argument {} must be text", i + 1))),
    }
}

fn arg_opt_text<'a>(args: &[ValueRef<'a>], i: usize, function: &'static str) -> Result<Option<&'a str>> {
    match args.get(i) {
        None | Some(ValueRef::Null) => Ok(None),
        _ => arg_text(args, i, function).map(Some),
    }
}

fn arg_int(args: &[ValueRef<'_>], i: usize) -> i64 {
    args.get(i).and_then(|v| v.as_i64().ok()).unwrap_or(0)
}

fn arg<'a>(args: &[ValueRef<'a>], i: usize) -> ValueRef<'a> {
    args.get(i).copied().unwrap_or(ValueRef::Null)
}

/// Registers the queue tables and the functions the triggers call.
pub fn register(db: &Connection) -> Result<()> {
    let queue = Arc::new(CrudQueue::default());
    register_write_only_table(db, "powersync_crud", CRUD_TABLE, Arc::new(CrudTable(queue.clone())))?;
    register_write_only_table(db, "powersync_crud_", RAW_CRUD_TABLE, Arc::new(RawCrudTable(queue.clone())))?;

    // oplite_crud_put(type, id, metadata, flags, name, value, ...)
    let put_queue = queue.clone();
    register_function(
        db,
        "oplite_crud_put",
        -1,
        Purity::Volatile,
        Box::new(move |_, args| {
            let items = read_items(args.get(4..).unwrap_or(&[]), 1)?;
            let row_type = arg_text(args, 0, "oplite_crud_put")?;
            let flags = arg_int(args, 3);
            let entry = crud_json::put_entry(row_type, arg(args, 1), arg(args, 2), flags, &items)?;
            let row = (flags & crud_json::PUT_INSERT_ONLY == 0).then(|| (row_type, arg(args, 1)));
            put_queue.push(entry, row)?;
            Ok(Value::Null)
        }),
    )?;
    // oplite_crud_patch(type, id, metadata, flags, old_values, old_columns, name, old, new, ...)
    let patch_queue = queue.clone();
    register_function(
        db,
        "oplite_crud_patch",
        -1,
        Purity::Volatile,
        Box::new(move |_, args| {
            let f = "oplite_crud_patch";
            let items = read_items(args.get(6..).unwrap_or(&[]), 2)?;
            let old_columns: Option<Vec<String>> = arg_opt_text(args, 5, f)?
                .map(|json| serde_json::from_str(json).map_err(|e| OpliteError::Internal(format!("{f}: {e}"))))
                .transpose()?;
            let row_type = arg_text(args, 0, f)?;
            let entry = crud_json::patch_entry(
                row_type,
                arg(args, 1),
                arg(args, 2),
                arg_int(args, 3),
                arg_opt_text(args, 4, f)?,
                old_columns.as_deref(),
                &items,
            )?;
            patch_queue.push(entry, Some((row_type, arg(args, 1))))?;
            Ok(Value::Null)
        }),
    )?;
    // oplite_crud_delete(type, id, metadata, old_values)
    let delete_queue = queue;
    register_function(
        db,
        "oplite_crud_delete",
        4,
        Purity::Volatile,
        Box::new(move |_, args| {
            let f = "oplite_crud_delete";
            let row_type = arg_text(args, 0, f)?;
            let entry = crud_json::delete_entry(row_type, arg(args, 1), arg(args, 2), arg_opt_text(args, 3, f)?)?;
            delete_queue.push(entry, Some((row_type, arg(args, 1))))?;
            Ok(Value::Null)
        }),
    )?;
    // oplite_crud_chunk(arity, name, value..., ...): columns of wide tables.
    register_function(
        db,
        "oplite_crud_chunk",
        -1,
        Purity::Deterministic,
        Box::new(|_, args| {
            let arity = arg_int(args, 0).clamp(1, 2) as usize;
            crud_json::encode_chunk(args.get(1..).unwrap_or(&[]), arity).map(Value::Blob)
        }),
    )?;
    // oplite_json_merge(object, ...): JSON objects with disjoint keys, joined.
    register_function(
        db,
        "oplite_json_merge",
        -1,
        Purity::Deterministic,
        Box::new(|_, args| {
            let objects: Vec<&str> = (0..args.len()).map(|i| arg_text(args, i, "oplite_json_merge")).collect::<Result<_>>()?;
            Ok(Value::Text(crud_json::merge_objects(&objects)))
        }),
    )
}
