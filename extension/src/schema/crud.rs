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
//! transaction that may write to it starts, and `xCommit` / `xRollback` /
//! `xRollbackTo` after. As in the reference core, `xBegin` takes the next
//! `tx_id` (so a statement that matches no row still uses one up).
//!
//! The reference then writes every entry *through* that table, one
//! `xUpdate` per row, each running its own nested INSERT statements. oplite's
//! triggers instead write ps_crud and ps_updated_rows with plain INSERTs in
//! the trigger body (no nested statements, no statement journals), using
//! two small functions:
//!
//! - `oplite_crud_put` / `_patch` / `_delete` render the entry's JSON
//!   directly from the row's values ([`super::crud_json`]);
//! - `oplite_crud_tx(with_kv)` returns the transaction's `tx_id`, and the
//!   first time in a transaction writes `target_checkpoint_request_id` and
//!   deletes the last seen / applied checkpoint keys in ps_kv, as the
//!   reference does on a local write.
//!
//! Each trigger still names `powersync_crud` in an INSERT that never runs
//! (`INSERT INTO powersync_crud(op) SELECT NULL WHERE 0`): that is enough for
//! SQLite to call `xBegin` for the statement and to tell the table about the
//! transaction's end.
//!
//! Unlike the reference, a `ROLLBACK TO` (or a failed statement) that undoes
//! the `ps_tx` or ps_kv write does not leave the transaction without it:
//! the table notes the rollback and the next entry writes both again.
//!
//! `powersync_crud` also accepts the reference's own INSERTs (columns `op,
//! id, type, data, old_values, metadata, options`, data already JSON) and
//! `powersync_crud_(data)` (a complete entry), for triggers written against
//! the reference.

use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::types::{Value, ValueRef};
use rusqlite::{params, Connection};

use super::crud_json::{self, read_items};
use crate::error::{OpliteError, Result, SqliteResultExt};
use crate::sqlite::{register_function, register_write_only_table, CallContext, Purity, WriteOnlyTable};

/// SQL: the tx_id the next transaction gets.
const READ_NEXT_TX: &str = "SELECT ifnull((SELECT next_tx FROM ps_tx WHERE id = 1), 1)";
/// SQL: records that `?1` is taken (idempotent, so it can be redone after a
/// ROLLBACK TO).
const TAKE_TX: &str = "UPDATE ps_tx SET next_tx = max(ifnull(next_tx, 1), ?1 + 1) WHERE id = 1";
/// SQL: after a local write, no checkpoint may be applied until the server
/// confirms the upload (PROTOCOL.md, write checkpoints).
const SET_TARGET: &str =
    "INSERT OR REPLACE INTO ps_kv(key, value) VALUES('target_checkpoint_request_id', 9223372036854775807)";
/// SQL: forgets the checkpoint requests seen before the local write.
const FORGET_REQUESTS: &str =
    "DELETE FROM ps_kv WHERE key IN ('last_seen_checkpoint_request_id', 'last_applied_checkpoint_request_id')";
/// SQL: queues one entry.
const QUEUE_ENTRY: &str = "INSERT INTO ps_crud(data, tx_id) VALUES(?1, ?2)";
/// SQL: marks a row for re-derivation at the next full apply.
const MARK_UPDATED: &str = "INSERT OR IGNORE INTO ps_updated_rows(row_type, row_id) VALUES(?1, ?2)";

/// The declared columns of `powersync_crud`.
const CRUD_TABLE: &str =
    "CREATE TABLE x(op TEXT, id TEXT, type TEXT, data TEXT, old_values TEXT, metadata TEXT, options INT)";
/// The declared columns of `powersync_crud_`.
const RAW_CRUD_TABLE: &str = "CREATE TABLE x(data TEXT, options INT)";

/// `options` bit of `powersync_crud`: skip a PATCH whose data is `{}`.
const IGNORE_EMPTY_UPDATE: i64 = 16;

/// The transaction as the queue sees it.
#[derive(Debug, Default, Clone, Copy)]
struct TxState {
    /// The tx_id of the open transaction, from `xBegin`.
    tx_id: Option<i64>,
    /// `ps_tx.next_tx` is past `tx_id` (false again after a ROLLBACK TO).
    tx_taken: bool,
    /// ps_kv has the local-write keys (false again after a ROLLBACK TO).
    kv_written: bool,
}

/// Per-connection state shared by `powersync_crud`, `powersync_crud_` and
/// `oplite_crud_tx`.
#[derive(Default)]
pub struct CrudQueue {
    state: Mutex<TxState>,
}

impl CrudQueue {
    fn state(&self) -> Result<MutexGuard<'_, TxState>> {
        self.state.lock().map_err(|_| OpliteError::Internal("upload queue state poisoned".into()))
    }

    /// The open transaction's tx_id, writing `ps_tx` and (with `with_kv`)
    /// ps_kv first if this transaction has not yet. No lock is held while
    /// SQL runs, so triggers on those tables cannot deadlock.
    fn current_tx<'a>(&self, db: impl FnOnce() -> Result<&'a Connection>, with_kv: bool) -> Result<i64> {
        let state = *self.state()?;
        let tx_id = state.tx_id.ok_or_else(|| OpliteError::Misuse {
            function: "oplite_crud_tx",
            reason: "no transaction has written to powersync_crud (is this trigger from an older oplite?)".into(),
        })?;
        let need_tx = !state.tx_taken;
        let need_kv = with_kv && !state.kv_written;
        if need_tx || need_kv {
            let db = db()?;
            if need_tx {
                db.prepare_cached(TAKE_TX).and_then(|mut s| s.execute([tx_id])).context("taking a tx_id")?;
            }
            if need_kv {
                db.prepare_cached(SET_TARGET).and_then(|mut s| s.execute([])).context("recording a local write")?;
                db.prepare_cached(FORGET_REQUESTS).and_then(|mut s| s.execute([])).context("recording a local write")?;
            }
            let mut state = self.state()?;
            state.tx_taken |= need_tx;
            state.kv_written |= need_kv;
        }
        Ok(tx_id)
    }

    fn begin(&self, db: &Connection) -> Result<()> {
        if self.state()?.tx_id.is_some() {
            return Ok(()); // the other queue table began this transaction
        }
        let tx_id: i64 = db.prepare_cached(READ_NEXT_TX).and_then(|mut s| s.query_row([], |r| r.get(0))).context("reading ps_tx")?;
        db.prepare_cached(TAKE_TX).and_then(|mut s| s.execute([tx_id])).context("taking a tx_id")?;
        *self.state()? = TxState { tx_id: Some(tx_id), tx_taken: true, kv_written: false };
        Ok(())
    }

    fn end(&self) {
        if let Ok(mut state) = self.state.lock() {
            *state = TxState::default();
        }
    }

    fn rolled_back_to(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.tx_taken = false;
            state.kv_written = false;
        }
    }

    /// Queues `entry` for row (`row_type`, `id`) the way the reference's
    /// table does: ps_crud, ps_updated_rows and ps_kv.
    fn queue(&self, db: &Connection, entry: &str, row: Option<(&str, ValueRef<'_>)>) -> Result<()> {
        let tx_id = self.current_tx(|| Ok(db), row.is_some())?;
        db.prepare_cached(QUEUE_ENTRY).and_then(|mut s| s.execute(params![entry, tx_id])).context("queueing an upload")?;
        if let Some((row_type, id)) = row {
            db.prepare_cached(MARK_UPDATED).and_then(|mut s| s.execute(params![row_type, owned(id)])).context("marking an updated row")?;
        }
        Ok(())
    }
}

/// `powersync_crud`: the reference's queue table.
struct CrudTable(Arc<CrudQueue>);

impl WriteOnlyTable for CrudTable {
    fn insert(&self, db: &Connection, values: &[ValueRef<'_>]) -> Result<()> {
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
        self.0.queue(db, &entry, Some((row_type, id)))
    }
    fn begin(&self, db: &Connection) -> Result<()> {
        self.0.begin(db)
    }
    fn commit(&self) {
        self.0.end()
    }
    fn rollback(&self) {
        self.0.end()
    }
    fn rollback_to(&self, _savepoint: i32) {
        self.0.rolled_back_to()
    }
}

/// `powersync_crud_`: a complete entry, queued as it is (insert-only tables
/// of the reference).
struct RawCrudTable(Arc<CrudQueue>);

impl WriteOnlyTable for RawCrudTable {
    fn insert(&self, db: &Connection, values: &[ValueRef<'_>]) -> Result<()> {
        let entry = match values.first().copied().unwrap_or(ValueRef::Null) {
            ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
            _ => return Err(bad("data must be text")),
        };
        self.0.queue(db, &entry, None)
    }
    fn begin(&self, db: &Connection) -> Result<()> {
        self.0.begin(db)
    }
    fn commit(&self) {
        self.0.end()
    }
    fn rollback(&self) {
        self.0.end()
    }
    fn rollback_to(&self, _savepoint: i32) {
        self.0.rolled_back_to()
    }
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

    // oplite_crud_tx(with_kv): the open transaction's tx_id.
    let tx_queue = queue;
    register_function(
        db,
        "oplite_crud_tx",
        1,
        Purity::Volatile,
        Box::new(move |ctx: &CallContext, args| {
            let with_kv = arg_int(args, 0) != 0;
            tx_queue.current_tx(|| ctx.db(), with_kv).map(Value::Integer)
        }),
    )?;
    // oplite_crud_put(type, id, metadata, flags, name, value, ...)
    register_function(
        db,
        "oplite_crud_put",
        -1,
        Purity::Deterministic,
        Box::new(|_, args| {
            let items = read_items(args.get(4..).unwrap_or(&[]), 1)?;
            let row_type = arg_text(args, 0, "oplite_crud_put")?;
            crud_json::put_entry(row_type, arg(args, 1), arg(args, 2), arg_int(args, 3), &items).map(Value::Text)
        }),
    )?;
    // oplite_crud_patch(type, id, metadata, flags, old_values, old_columns, name, old, new, ...)
    register_function(
        db,
        "oplite_crud_patch",
        -1,
        Purity::Deterministic,
        Box::new(|_, args| {
            let f = "oplite_crud_patch";
            let items = read_items(args.get(6..).unwrap_or(&[]), 2)?;
            let old_columns: Option<Vec<String>> = arg_opt_text(args, 5, f)?
                .map(|json| serde_json::from_str(json).map_err(|e| OpliteError::Internal(format!("{f}: {e}"))))
                .transpose()?;
            let entry = crud_json::patch_entry(
                arg_text(args, 0, f)?,
                arg(args, 1),
                arg(args, 2),
                arg_int(args, 3),
                arg_opt_text(args, 4, f)?,
                old_columns.as_deref(),
                &items,
            )?;
            Ok(Value::Text(entry))
        }),
    )?;
    // oplite_crud_delete(type, id, metadata, old_values)
    register_function(
        db,
        "oplite_crud_delete",
        4,
        Purity::Deterministic,
        Box::new(|_, args| {
            let f = "oplite_crud_delete";
            crud_json::delete_entry(arg_text(args, 0, f)?, arg(args, 1), arg(args, 2), arg_opt_text(args, 3, f)?).map(Value::Text)
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
