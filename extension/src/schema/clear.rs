//! `powersync_clear(flags)` and `powersync_trigger_resync(forget_sync_state)`.
//!
//! Clearing removes everything this device synced or queued, keeping the
//! client id: the oplog, buckets, upload queue, untyped rows, sync state,
//! stream subscriptions and every synced data table (flag 1: local-only
//! tables too; raw tables run their `clear` statement). A soft clear (flag
//! 2) keeps what was downloaded (ps_oplog, ps_buckets) and only marks every
//! bucket as not applied, so the next checkpoint rebuilds the tables
//! without downloading again. `powersync_trigger_resync` does only that
//! marking (and with a true argument also forgets the sync state).
//!
//! Observed in the reference: a soft clear and a resync are refused while a
//! sync iteration is active; the sync engine reports that through
//! [`set_sync_iteration_active`].

use std::sync::atomic::{AtomicBool, Ordering};

use rusqlite::types::Value;
use rusqlite::Connection;

use super::installed::Installed;
use super::quote::identifier;
use super::raw::load_raw_tables;
use crate::error::{OpliteError, Result, SqliteResultExt};
use crate::sql_args::{int_coerced, require_transaction};
use crate::sqlite::{client_data, register_scalar, ClientDataKey, Purity};

/// `powersync_clear` flag: also clear local-only tables.
pub const CLEAR_LOCAL: i64 = 1;
/// `powersync_clear` flag: keep downloaded data (soft clear).
pub const CLEAR_SOFT: i64 = 2;

/// SQL: what every clear removes.
const CLEAR_QUEUE_AND_STATE: &str = "DELETE FROM ps_crud;
DELETE FROM ps_untyped;
DELETE FROM ps_updated_rows;
DELETE FROM ps_kv WHERE key != 'client_id';
DELETE FROM ps_sync_state;
DELETE FROM ps_stream_subscriptions;";
/// SQL: a hard clear also forgets what was downloaded.
const CLEAR_DOWNLOADS: &str = "DELETE FROM ps_oplog; DELETE FROM ps_buckets;";
/// SQL: every bucket needs applying again.
/// (oplite_pending_ops: every op above 0 is new again, for sync_local's
/// choice; counted as those held less those at or below 0, usually none.)
const MARK_UNAPPLIED: &str = "UPDATE ps_buckets SET last_applied_op = 0,
  oplite_pending_ops = oplite_op_count
    - (SELECT count(*) FROM ps_oplog INDEXED BY ps_oplog_opid WHERE bucket = ps_buckets.id AND op_id <= 0);";

/// Whether a sync iteration is running on a connection.
#[derive(Default)]
pub struct SyncIteration {
    active: AtomicBool,
}

static SYNC_ITERATION: ClientDataKey<SyncIteration> = ClientDataKey::new(c"oplite.sync_iteration");

/// Called by the sync engine when an iteration starts (true) and ends.
pub fn set_sync_iteration_active(db: &Connection, active: bool) {
    client_data(db, &SYNC_ITERATION).active.store(active, Ordering::SeqCst);
}

/// Whether a sync iteration is running on `db`'s connection.
pub fn sync_iteration_active(db: &Connection) -> bool {
    client_data(db, &SYNC_ITERATION).active.load(Ordering::SeqCst)
}

fn refuse_during_sync(db: &Connection, function: &'static str) -> Result<()> {
    if sync_iteration_active(db) {
        return Err(OpliteError::InvalidArgument {
            function,
            message: "Cannot clear or trigger resync while a sync iteration is active.".into(),
            type_mismatch: false,
        });
    }
    Ok(())
}

/// Clears local data; see the module documentation for `flags`.
pub fn clear(db: &Connection, flags: i64) -> Result<()> {
    if flags & CLEAR_SOFT != 0 {
        refuse_during_sync(db, "powersync_clear")?;
    }
    db.execute_batch(CLEAR_QUEUE_AND_STATE).context("clearing local data")?;
    if flags & CLEAR_SOFT != 0 {
        db.execute_batch(MARK_UNAPPLIED).context("clearing local data")?;
    } else {
        db.execute_batch(CLEAR_DOWNLOADS).context("clearing local data")?;
    }
    // The deletes and a raw table's clear statement run as a sync
    // operation, as the reference's do: the upload triggers of direct
    // tables and the app's crud triggers on a raw table (WHEN NOT
    // powersync_in_sync_operation()) must not queue the cleared rows for
    // upload (the Node SDK's disconnectAndClear with a raw table).
    let _sync = super::apply::SyncOperationGuard::enter(db);
    for table in Installed::read(db)?.data_tables {
        if !table.local || flags & CLEAR_LOCAL != 0 {
            db.execute_batch(&format!("DELETE FROM {}", identifier(&table.name))).context("clearing a data table")?;
        }
    }
    for raw in load_raw_tables(db)? {
        if let Some(sql) = &raw.clear {
            db.execute_batch(sql).map_err(|e| OpliteError::sqlite(format!("clearing raw table {:?}", raw.name), e))?;
        }
    }
    Ok(())
}

/// Marks every bucket as not applied, so the next checkpoint re-applies
/// everything downloaded.
pub fn trigger_resync(db: &Connection, forget_sync_state: bool) -> Result<()> {
    trigger_resync_for(db, "powersync_trigger_resync", forget_sync_state)
}

/// [`trigger_resync`] on behalf of `function` (the one its error names).
pub fn trigger_resync_for(db: &Connection, function: &'static str, forget_sync_state: bool) -> Result<()> {
    refuse_during_sync(db, function)?;
    db.execute_batch(MARK_UNAPPLIED).context("triggering a resync")?;
    if forget_sync_state {
        db.execute_batch("DELETE FROM ps_sync_state").context("triggering a resync")?;
    }
    Ok(())
}

pub(super) fn register(db: &Connection) -> Result<()> {
    register_scalar(
        db,
        "powersync_clear",
        1,
        Purity::Volatile,
        Box::new(|db, args| {
            require_transaction(db, "powersync_clear")?;
            clear(db, i64::from(int_coerced(args, 0)))?;
            Ok(Value::Text(String::new()))
        }),
    )?;
    register_scalar(
        db,
        "powersync_trigger_resync",
        1,
        Purity::Volatile,
        Box::new(|db, args| {
            require_transaction(db, "powersync_trigger_resync")?;
            trigger_resync(db, int_coerced(args, 0) != 0)?;
            Ok(Value::Text(String::new()))
        }),
    )
}
