//! The upload queue: how local writes through the views become ps_crud
//! entries, grouped by transaction.
//!
//! Every entry of one transaction carries the same `tx_id`, and the next
//! transaction gets the next one (`ps_tx.next_tx`). Knowing where a
//! transaction starts and ends needs SQLite's help; the connection's commit
//! hook belongs to the host, so, as in the reference core, a virtual table
//! does it: `powersync_crud`. SQLite calls its `xBegin` when the first
//! statement of a transaction that may write to it starts (which takes the
//! next `tx_id`, so a statement that matches no row still uses one up), its
//! savepoint callbacks as statements and savepoints open and end, and
//! `xSync` as the transaction commits.
//!
//! Each entry is written when the trigger that makes it runs: the ps_crud
//! row, the ps_updated_rows mark and, once per transaction, the upload
//! gate in ps_kv. They are ordinary writes of the app's statement, so
//! SQLite's own journal undoes them with a failed statement, a `ROLLBACK
//! TO` or a rollback, the queue is visible inside the transaction, and
//! nothing of it waits in memory for a commit that may never come. The
//! triggers hand the row's values to `oplite_crud_put` / `_patch` /
//! `_delete`, which render the JSON ([`super::crud_json`]) and run the
//! inserts as nested statements; each trigger also names `powersync_crud`
//! in an INSERT that never runs (`INSERT INTO powersync_crud(op) SELECT
//! NULL WHERE 0`), which is enough for SQLite to make the table part of the
//! transaction. Costs and the earlier in-memory design are in
//! docs/architecture.md.
//!
//! `powersync_crud` also accepts the reference's own INSERTs (columns `op,
//! id, type, data, old_values, metadata, options`, data already JSON) and
//! `powersync_crud_(data, options)` (a complete entry), for triggers
//! written against the reference.

use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::Connection;

use super::apply::in_sync_operation;
use super::crud_json::{self, read_items};
use crate::error::{OpliteError, Result, SqliteResultExt};
use crate::sql_args::{self, int_coerced, text_coerced};
use crate::sqlite::{register_function, register_write_only_table, Purity, WriteOnlyTable};

/// SQL: the tx_id the next transaction gets.
const READ_NEXT_TX: &str = "SELECT ifnull((SELECT next_tx FROM ps_tx WHERE id = 1), 1)";
/// SQL: records that `?1` is taken (idempotent: repeated at commit in case
/// a ROLLBACK TO undid the write made at `xBegin`).
const TAKE_TX: &str = "UPDATE ps_tx SET next_tx = max(ifnull(next_tx, 1), ?1 + 1) WHERE id = 1";
/// SQL: queues one entry.
const QUEUE_ENTRY: &str = "INSERT INTO ps_crud(tx_id, data) VALUES (?1, ?2)";
/// SQL: marks its row for re-derivation at the next full apply.
const MARK_UPDATED: &str = "INSERT OR IGNORE INTO ps_updated_rows(row_type, row_id) VALUES (?1, ?2)";
/// SQL: after a local write, no checkpoint may be applied until the server
/// confirms the upload, and the checkpoint requests seen before the write
/// cannot confirm it (docs/protocol.md, write checkpoints).
const RECORD_LOCAL_WRITE: &str = "INSERT OR REPLACE INTO ps_kv(key, value) VALUES('target_checkpoint_request_id', 9223372036854775807);
DELETE FROM ps_kv WHERE key IN ('last_seen_checkpoint_request_id', 'last_applied_checkpoint_request_id')";

/// The declared columns of `powersync_crud`.
const CRUD_TABLE: &str =
    "CREATE TABLE x(op TEXT, id TEXT, type TEXT, data TEXT, old_values TEXT, metadata TEXT, options INT)";
/// The declared columns of `powersync_crud_`.
const RAW_CRUD_TABLE: &str = "CREATE TABLE x(data TEXT, options INT)";

/// `options` bit of `powersync_crud` and `powersync_crud_`: skip a PATCH
/// whose data is `{}`.
const IGNORE_EMPTY_UPDATE: i64 = 16;

/// The transaction as the queue sees it. Everything else of the queue is
/// in the database.
#[derive(Debug, Default)]
struct TxState {
    /// The tx_id of the open transaction, from `xBegin`.
    tx_id: Option<i64>,
    /// An entry was written in this transaction (its tx_id is taken again
    /// at commit).
    wrote: bool,
    /// The upload gate was recorded in ps_kv, and not rolled back since.
    gate_recorded: bool,
    /// `(savepoint index, gate_recorded when it opened)`, innermost last.
    savepoints: Vec<(i32, bool)>,
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

    /// The open transaction's tx_id, for an entry about to be written.
    fn take_tx_id(&self) -> Result<i64> {
        let mut state = self.state()?;
        let tx_id = state.tx_id.ok_or_else(|| OpliteError::Misuse {
            function: "oplite_crud_tx",
            reason: "no transaction has written to powersync_crud (the trigger must name it)".into(),
        })?;
        state.wrote = true;
        Ok(tx_id)
    }

    /// Closes the upload gate (ps_kv) for the first local write of the
    /// transaction; later calls only check a flag. The state lock is not
    /// held while SQL runs: it may fire the app's own triggers.
    fn record_local_write(&self, db: &Connection) -> Result<()> {
        if self.state()?.gate_recorded {
            return Ok(());
        }
        db.execute_batch(RECORD_LOCAL_WRITE).context("recording a local write")?;
        self.state()?.gate_recorded = true;
        Ok(())
    }

    /// Writes one entry of the open transaction, for the reference's queue
    /// tables and triggers of earlier oplite versions: its ps_crud row
    /// and, for a row of a table that is not insert-only, the
    /// ps_updated_rows mark and the upload gate. Writes made by a sync
    /// apply (triggers on raw tables that the apply fills) are not local
    /// writes and queue nothing.
    fn write(&self, db: &Connection, data: &str, row: Option<(&str, ValueRef<'_>)>) -> Result<()> {
        if in_sync_operation(db) {
            return Ok(());
        }
        let tx_id = self.take_tx_id()?;
        db.prepare_cached(QUEUE_ENTRY).and_then(|mut s| s.execute((tx_id, data))).context("queueing an upload")?;
        if let Some((row_type, id)) = row {
            let id = ToSqlOutput::Borrowed(id);
            db.prepare_cached(MARK_UPDATED).and_then(|mut s| s.execute((row_type, id))).context("marking an updated row")?;
            self.record_local_write(db)?;
        }
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

    /// As the transaction commits: makes sure its tx_id stays taken.
    fn sync(&self, db: &Connection) -> Result<()> {
        let (tx_id, wrote) = {
            let state = self.state()?;
            (state.tx_id, state.wrote)
        };
        match tx_id {
            Some(tx_id) if wrote => db.prepare_cached(TAKE_TX).and_then(|mut s| s.execute([tx_id])).context("taking a tx_id").map(drop),
            _ => Ok(()),
        }
    }

    fn end(&self) {
        if let Ok(mut state) = self.state.lock() {
            *state = TxState::default();
        }
    }

    fn savepoint(&self, index: i32) {
        if let Ok(mut state) = self.state.lock() {
            let recorded = state.gate_recorded;
            state.savepoints.retain(|(i, _)| *i < index);
            state.savepoints.push((index, recorded));
        }
    }

    fn release(&self, index: i32) {
        if let Ok(mut state) = self.state.lock() {
            state.savepoints.retain(|(i, _)| *i < index);
        }
    }

    /// SQLite undid the writes since savepoint `index`: the gate is
    /// recorded only if it was when that savepoint opened (one opened
    /// before this table joined the transaction saw nothing recorded).
    fn rollback_to(&self, index: i32) {
        if let Ok(mut state) = self.state.lock() {
            state.gate_recorded = state.savepoints.iter().find(|(i, _)| *i == index).is_some_and(|(_, recorded)| *recorded);
            state.savepoints.retain(|(i, _)| *i <= index);
        }
    }
}

/// `powersync_crud`: the reference's queue table, insert-only (a SELECT
/// returns no rows).
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
            self.0.sync(db)
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
    };
}

// Both tables read their columns as the reference does (sql_args'
// coercions): op, id and type as text (NULL as ''), data, old_values and
// metadata only when they are TEXT, options as an integer.
impl WriteOnlyTable for CrudTable {
    fn insert(&self, db: &Connection, values: &[ValueRef<'_>]) -> Result<()> {
        let text_only = |i: usize| match values.get(i) {
            Some(ValueRef::Text(t)) => std::str::from_utf8(t).map(Some).map_err(|_| bad("text is not UTF-8")),
            _ => Ok(None),
        };
        let op = text_coerced(db, values, 0)?;
        let op = op.as_ref();
        let id = text_coerced(db, values, 1)?;
        let id = ValueRef::Text(id.as_bytes());
        let row_type = text_coerced(db, values, 2)?;
        let row_type = row_type.as_ref();
        let data = text_only(3)?;
        let old = text_only(4)?;
        let metadata = match values.get(5) {
            Some(text @ ValueRef::Text(_)) => *text,
            _ => ValueRef::Null,
        };
        let options = i64::from(int_coerced(values, 6));
        if op == "PATCH" && options & IGNORE_EMPTY_UPDATE != 0 && data.is_none_or(|d| d.trim() == "{}") {
            return Ok(());
        }
        let entry = crud_json::raw_entry(op, id, row_type, if op == "DELETE" { None } else { data }, old, metadata)?;
        self.0.write(db, &entry, Some((row_type, id)))
    }
    queue_transaction_callbacks!();
}

impl WriteOnlyTable for RawCrudTable {
    fn insert(&self, db: &Connection, values: &[ValueRef<'_>]) -> Result<()> {
        // NULL is refused where the reference stores a NULL entry, which
        // no SDK can upload (docs/differences.md).
        if matches!(values.first(), None | Some(ValueRef::Null)) {
            return Err(bad("data must not be NULL: the upload queue could never upload the entry"));
        }
        let entry = text_coerced(db, values, 0)?;
        let options = i64::from(int_coerced(values, 1));
        if options & IGNORE_EMPTY_UPDATE != 0 && crud_json::is_empty_patch(&entry) {
            return Ok(());
        }
        self.0.write(db, &entry, None)
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

fn arg<'a>(args: &[ValueRef<'a>], i: usize) -> ValueRef<'a> {
    args.get(i).copied().unwrap_or(ValueRef::Null)
}

/// `oplite_put_entry(type, id, metadata, flags, name, value, ...)`: the
/// PUT entry, and the row it marks (none for insert-only tables).
fn put_from_args<'a>(args: &[ValueRef<'a>]) -> Result<(String, Option<(&'a str, ValueRef<'a>)>)> {
    let items = read_items(args.get(4..).unwrap_or(&[]), 1)?;
    let row_type = sql_args::required_text(args, 0, "oplite_put_entry")?;
    let flags = sql_args::int64_coerced(args, 3);
    let entry = crud_json::put_entry(row_type, arg(args, 1), arg(args, 2), flags, &items)?;
    Ok((entry, (flags & crud_json::PUT_INSERT_ONLY == 0).then(|| (row_type, arg(args, 1)))))
}

/// `oplite_patch_entry(type, id, metadata, flags, old_values, old_columns,
/// name, old, new, ...)`: the PATCH entry and its row.
fn patch_from_args<'a>(args: &[ValueRef<'a>]) -> Result<(String, Option<(&'a str, ValueRef<'a>)>)> {
    let f = "oplite_patch_entry";
    let items = read_items(args.get(6..).unwrap_or(&[]), 2)?;
    let old_columns: Option<Vec<String>> = sql_args::text_arg(args, 5, f)?
        .map(|json| serde_json::from_str(json).map_err(|e| OpliteError::Internal(format!("{f}: {e}"))))
        .transpose()?;
    let row_type = sql_args::required_text(args, 0, f)?;
    let entry =
        crud_json::patch_entry(row_type, arg(args, 1), arg(args, 2), sql_args::int64_coerced(args, 3), sql_args::text_arg(args, 4, f)?, old_columns.as_deref(), &items)?;
    Ok((entry, Some((row_type, arg(args, 1)))))
}

/// `oplite_delete_entry(type, id, metadata, old_values)`: the DELETE entry
/// and its row.
fn delete_from_args<'a>(args: &[ValueRef<'a>]) -> Result<(String, Option<(&'a str, ValueRef<'a>)>)> {
    let f = "oplite_delete_entry";
    let row_type = sql_args::required_text(args, 0, f)?;
    let entry = crud_json::delete_entry(row_type, arg(args, 1), arg(args, 2), sql_args::text_arg(args, 3, f)?)?;
    Ok((entry, Some((row_type, arg(args, 1)))))
}

type EntryFromArgs = for<'a> fn(&[ValueRef<'a>]) -> Result<(String, Option<(&'a str, ValueRef<'a>)>)>;

/// The entry functions: `(name for the triggers, name in triggers of
/// earlier oplite versions, arity, how the arguments make an entry)`.
const ENTRY_FUNCTIONS: [(&str, &str, i32, EntryFromArgs); 3] = [
    ("oplite_put_entry", "oplite_crud_put", -1, put_from_args),
    ("oplite_patch_entry", "oplite_crud_patch", -1, patch_from_args),
    ("oplite_delete_entry", "oplite_crud_delete", 4, delete_from_args),
];

/// Registers the queue tables and the functions the triggers call.
///
/// The triggers ([`super::triggers`]) insert into ps_crud and
/// ps_updated_rows themselves, as statements of the trigger program:
/// `oplite_*_entry` renders an entry's JSON, `oplite_crud_tx()` is the
/// transaction's tx_id and `oplite_crud_local_write()` records the upload
/// gate once per transaction. Triggers written by earlier versions of
/// oplite call `oplite_crud_put` / `_patch` / `_delete`, which queue the
/// entry themselves (until `powersync_replace_schema` writes the new
/// triggers).
pub fn register(db: &Connection) -> Result<()> {
    let queue = Arc::new(CrudQueue::default());
    register_write_only_table(db, "powersync_crud", CRUD_TABLE, Arc::new(CrudTable(queue.clone())))?;
    register_write_only_table(db, "powersync_crud_", RAW_CRUD_TABLE, Arc::new(RawCrudTable(queue.clone())))?;

    for (name, legacy_name, arity, from_args) in ENTRY_FUNCTIONS {
        register_function(db, name, arity, Purity::Deterministic, Box::new(move |_, args| Ok(Value::Text(from_args(args)?.0))))?;
        let legacy_queue = queue.clone();
        register_function(
            db,
            legacy_name,
            arity,
            Purity::Volatile,
            Box::new(move |ctx, args| {
                let (entry, row) = from_args(args)?;
                legacy_queue.write(ctx.db()?, &entry, row)?;
                Ok(Value::Null)
            }),
        )?;
    }
    let tx_queue = queue.clone();
    register_function(db, "oplite_crud_tx", 0, Purity::Volatile, Box::new(move |_, _| tx_queue.take_tx_id().map(Value::Integer)))?;
    let gate_queue = queue;
    register_function(
        db,
        "oplite_crud_local_write",
        0,
        Purity::Volatile,
        Box::new(move |ctx, _| {
            gate_queue.record_local_write(ctx.db()?)?;
            Ok(Value::Integer(1))
        }),
    )?;
    // oplite_crud_chunk(arity, name, value..., ...): columns of wide tables.
    register_function(
        db,
        "oplite_crud_chunk",
        -1,
        Purity::Deterministic,
        Box::new(|_, args| {
            let arity = sql_args::int64_coerced(args, 0).clamp(1, 2) as usize;
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
            let objects: Vec<&str> = (0..args.len()).map(|i| sql_args::required_text(args, i, "oplite_json_merge")).collect::<Result<_>>()?;
            Ok(Value::Text(crud_json::merge_objects(&objects)))
        }),
    )?;
    // powersync_json_merge(object, ...): the reference core's variant, for
    // apps and SDKs that call it: plain text (the reference sets the JSON
    // subtype before its result, which clears it), no empty-object skipping;
    // NULL arguments are skipped, as core 0.5.4 does.
    register_function(
        db,
        "powersync_json_merge",
        -1,
        Purity::Deterministic,
        Box::new(|ctx, args| {
            let db = ctx.db()?;
            let objects: Vec<Option<std::borrow::Cow<'_, str>>> = (0..args.len())
                .map(|i| match args[i] {
                    ValueRef::Null => Ok(None),
                    _ => text_coerced(&db, args, i).map(Some),
                })
                .collect::<Result<_>>()?;
            let objects: Vec<Option<&str>> = objects.iter().map(|o| o.as_deref()).collect();
            crud_json::concat_present_objects(&objects).map(Value::Text)
        }),
    )
}
