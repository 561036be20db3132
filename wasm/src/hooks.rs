//! Table-change notification: the names of the tables that committed
//! transactions changed, for UI code that re-runs its queries.
//!
//! Built on SQLite's update, commit and rollback hooks: the update hook
//! collects table names while a transaction runs, the commit hook moves them
//! to the committed set, the rollback hook drops them. The JS layer takes the
//! committed set after each call that left no transaction open and calls the
//! listeners. When oplite gains `powersync_update_hooks` (PROTOCOL.md §5)
//! this can read that instead; SQLite keeps one update hook per connection,
//! so the two must not both be installed.
//!
//! Names are reported as SQLite sees them: synced rows of types without a
//! schema land in `ps_untyped`, those with one in their data tables.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

/// Tables changed by the transaction in progress and by committed ones.
#[derive(Default)]
pub struct TableChanges {
    running: BTreeSet<String>,
    committed: BTreeSet<String>,
}

impl TableChanges {
    /// Takes the tables changed by transactions committed since the last call.
    pub fn take_committed(&mut self) -> Vec<String> {
        std::mem::take(&mut self.committed).into_iter().collect()
    }
}

/// Installs the hooks on `conn` and returns the shared change set.
pub fn install(conn: &mut Connection) -> rusqlite::Result<Arc<Mutex<TableChanges>>> {
    let changes = Arc::new(Mutex::new(TableChanges::default()));
    let on_update = changes.clone();
    conn.update_hook(Some(move |_action, _db: &str, table: &str, _rowid| {
        let mut changes = on_update.lock().unwrap();
        if !changes.running.contains(table) {
            changes.running.insert(table.to_owned());
        }
    }))?;
    let on_commit = changes.clone();
    conn.commit_hook(Some(move || {
        let mut changes = on_commit.lock().unwrap();
        let running = std::mem::take(&mut changes.running);
        changes.committed.extend(running);
        false // let the commit proceed
    }))?;
    let on_rollback = changes.clone();
    conn.rollback_hook(Some(move || on_rollback.lock().unwrap().running.clear()))?;
    Ok(changes)
}
