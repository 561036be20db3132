//! `powersync_update_hooks('install' | 'get')`: which tables committed
//! transactions changed.
//!
//! SDKs use this instead of their own hooks to refresh watched queries.
//! `install` puts oplite's update, commit and rollback hooks on the
//! connection (replacing the host's); `get` returns, as a JSON array of
//! names in sorted order, the tables changed by transactions that committed
//! since the previous `get`, and forgets them. Changes of a transaction that
//! rolls back are dropped. Names are SQLite's: data tables appear as
//! `ps_data__<type>`, internal tables as themselves (WITHOUT ROWID tables
//! such as ps_updated_rows are not reported by SQLite), as in the reference.

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};

use rusqlite::types::Value;
use rusqlite::Connection;

use crate::sql_args::text_arg;
use crate::error::{OpliteError, Result};
use crate::sqlite::{client_data, install_change_hooks, register_scalar, ChangeObserver, ClientDataKey, Purity};

#[derive(Default)]
struct Changes {
    /// Tables changed by the open transaction.
    pending: BTreeSet<String>,
    /// Tables changed by committed transactions since the last `get`.
    committed: BTreeSet<String>,
}

/// The per-connection record of changed tables.
#[derive(Default)]
pub struct TableChanges {
    changes: Mutex<Changes>,
}

impl ChangeObserver for TableChanges {
    fn changed(&self, table: &str) {
        if let Ok(mut changes) = self.changes.lock() {
            if !changes.pending.contains(table) {
                changes.pending.insert(table.to_owned());
            }
        }
    }
    fn committing(&self) {
        if let Ok(mut changes) = self.changes.lock() {
            let pending = std::mem::take(&mut changes.pending);
            changes.committed.extend(pending);
        }
    }
    fn rolled_back(&self) {
        if let Ok(mut changes) = self.changes.lock() {
            changes.pending.clear();
        }
    }
}

/// The connection's record, once hooks are installed. The record itself is
/// leaked on purpose (one per connection that installs hooks): SQLite may
/// call the rollback hook after freeing client data.
#[derive(Default)]
pub struct InstalledHooks {
    changes: OnceLock<&'static TableChanges>,
}

static HOOKS: ClientDataKey<InstalledHooks> = ClientDataKey::new(c"oplite.update_hooks");

/// Installs the hooks on `db` (again, if the host replaced them).
pub fn install(db: &Connection) {
    let changes = *client_data(db, &HOOKS).changes.get_or_init(|| Box::leak(Box::default()));
    install_change_hooks(db, changes);
}

/// The tables changed by committed transactions since the last call, as a
/// JSON array; forgets them.
pub fn take_committed_changes(db: &Connection) -> Result<String> {
    let Some(changes) = client_data(db, &HOOKS).changes.get() else {
        return Ok("[]".into());
    };
    let tables = match changes.changes.lock() {
        Ok(mut changes) => std::mem::take(&mut changes.committed),
        Err(_) => return Err(OpliteError::Internal("update hook state poisoned".into())),
    };
    serde_json::to_string(&tables).map_err(|e| OpliteError::Internal(e.to_string()))
}

pub(super) fn register(db: &Connection) -> Result<()> {
    register_scalar(
        db,
        "powersync_update_hooks",
        1,
        Purity::Volatile,
        // Anything but the two operations, a non-text argument included, is
        // an unknown operation (SQLITE_MISUSE), as in the reference.
        Box::new(|db, args| match text_arg(args, 0, "powersync_update_hooks").ok().flatten() {
            Some("install") => {
                install(db);
                Ok(Value::Null)
            }
            Some("get") => take_committed_changes(db).map(Value::Text),
            _ => Err(OpliteError::Misuse { function: "powersync_update_hooks", reason: "Unknown operation".into() }),
        }),
    )
}
