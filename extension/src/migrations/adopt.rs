//! Taking over a database the PowerSync core wrote.
//!
//! oplite is a drop-in for the PowerSync core, so an app that switches cores
//! opens a database whose `ps_migration` holds the core's history (versions
//! 1 to 14 at the time of writing) instead of oplite's. Read as oplite
//! versions, that history looks *newer* than this build, and stepping down
//! through the core's recorded SQL would undo the core's own schema. This
//! module recognises such a database and converts it in place instead: the
//! two cores share every table and column the SDKs read (see
//! docs/protocol.md), so adopting adds oplite's own columns and indexes, and
//! `powersync_replace_schema` later converts the JSON data tables to typed
//! storage like any other layout change. Nothing synced or queued is lost:
//! ps_oplog, ps_buckets, ps_crud, ps_kv and the data tables keep their rows.
//!
//! A core database newer than version 14 is first stepped down to 14 with
//! the SQL the core recorded (its own way down); an older one (versions 1
//! to 13, every SDK release before the 0.5 cores) is first brought up to 14
//! by `core_upgrade`, which replays what each core version did to the data.

use rusqlite::Connection;

use super::core_upgrade;
use super::versions::LATEST_VERSION;
use crate::error::{OpliteError, Result, SqliteResultExt};

/// The PowerSync core's internal schema version this module converts from.
pub const CORE_VERSION: i64 = core_upgrade::TARGET;

/// SQL: from the core's version 14 to oplite's version 1 (without the
/// `ps_migration` row, which the caller writes).
const ADOPT: &str = include_str!("../../../sql/migrations/adopt_powersync_core.sql");

/// SQL: is `ps_buckets` missing oplite's own stats column? Every oplite
/// version has it; the PowerSync core never had it.
const IS_CORE_DATABASE: &str = "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ps_buckets')
   AND NOT EXISTS(SELECT 1 FROM pragma_table_info('ps_buckets') WHERE name = 'oplite_op_count')";

/// Whether the database's internal tables were written by the PowerSync core
/// (as opposed to oplite, or nothing yet).
pub fn is_core_database(db: &Connection) -> Result<bool> {
    db.query_row(IS_CORE_DATABASE, [], |row| row.get(0)).context("checking who wrote ps_buckets")
}

/// Converts a PowerSync core database at `version` (its `ps_migration`
/// maximum) to oplite's version 1. `step_down` takes the database one
/// recorded version down (the migrations module's). Runs in the caller's
/// transaction.
pub fn adopt(db: &Connection, mut version: i64, step_down: impl Fn(&Connection, i64) -> Result<()>) -> Result<()> {
    if version < core_upgrade::OLDEST {
        return Err(OpliteError::SchemaVersion {
            found: version,
            latest: LATEST_VERSION,
            message: "ps_buckets was written by a PowerSync core, but ps_migration records none of its \
                      versions; delete the database file to sync from scratch"
                .into(),
        });
    }
    if version < CORE_VERSION {
        core_upgrade::upgrade(db, version)?;
        version = CORE_VERSION;
    }
    while version > CORE_VERSION {
        step_down(db, version)?;
        version = db
            .query_row("SELECT ifnull(max(id), 0) as version FROM ps_migration", [], |row| row.get(0))
            .context("reading the PowerSync core's schema version")?;
    }
    db.execute_batch(ADOPT).context("adopting a database written by the PowerSync core")
}
