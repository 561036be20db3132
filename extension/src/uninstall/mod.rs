//! `oplite_uninstall()`: the way back to the PowerSync core, in place.
//!
//! oplite adopts a database the core wrote (`migrations/adopt.rs`); this is
//! the other direction. One call, in the caller's transaction, rewrites the
//! file into the layout the core 0.5.3 leaves (its internal version 14), so
//! that an app going back to the core keeps what it downloaded (buckets,
//! positions, checksums: the next sync asks only for what is new) and what
//! it has not uploaded yet (`ps_crud`, `ps_tx`), and oplite can adopt the
//! file again afterwards. Typed data tables get `id, data` back
//! (`data_tables`); the internal tables and indexes get the core's
//! statements ([`layout`]); oplite's own tables and index go; `ps_migration`
//! gets the core's rows. The views and their triggers are dropped: their
//! text comes from the app's schema, which oplite does not keep, and the
//! core's `powersync_replace_schema` (every SDK calls it when it opens a
//! database) creates its own. docs/architecture.md, "Switching back", has
//! the long story.

mod data_tables;
pub mod layout;

use rusqlite::types::Value;
use rusqlite::Connection;
use serde::Serialize;

use crate::error::{OpliteError, Result, SqliteResultExt};
use crate::migrations::{adopt, current_version, migrate_to, LATEST_VERSION};
use crate::schema::ddl::Layout;
use crate::schema::installed::Installed;
use crate::schema::quote::identifier;
use crate::schema::replace::with_savepoint;
use crate::sql_args::require_transaction;
use crate::sqlite::{register_scalar, Purity};
use data_tables::Converted;

/// The core's `ps_migration` rows.
const CORE_MIGRATIONS: &str = include_str!("../../../sql/uninstall/ps_migration.sql");

/// oplite's own tables and index, which the core does not have.
const OPLITE_OBJECTS: &[(&str, &str)] =
    &[("table", "ps_oplite_kv"), ("table", "ps_oplite_raw_tables"), ("index", "ps_oplog_deleted")];

/// What `oplite_uninstall()` did, returned to the caller as JSON.
#[derive(Debug, Serialize, Default)]
pub struct Report {
    /// False when the database already had the core's layout.
    pub changed: bool,
    /// The core's internal version the database now has.
    pub core_version: i64,
    /// oplite's internal version it had (0 when the core wrote it).
    pub oplite_version: i64,
    /// Typed data tables converted to `id, data`.
    pub data_tables: Vec<Converted>,
    /// Generated views dropped, with their triggers.
    pub views_dropped: Vec<String>,
    /// Internal tables rebuilt under the core's statement.
    pub tables_rebuilt: Vec<String>,
    /// The core's indexes (re)created.
    pub indexes_created: Vec<String>,
    /// oplite's own tables and indexes dropped.
    pub dropped: Vec<String>,
    /// Uploads still queued, kept.
    pub uploads_queued: i64,
    /// What the app does next.
    pub next: &'static str,
}

const NEXT: &str = "open the database with the PowerSync core and call powersync_replace_schema with the app's schema \
                    (the SDKs do when they open a database): it creates the views and their triggers";

/// Registers `oplite_uninstall()` on `db`.
pub fn register(db: &Connection) -> Result<()> {
    register_scalar(
        db,
        "oplite_uninstall",
        0,
        Purity::DirectOnly,
        Box::new(|db, _| {
            let report = uninstall(db)?;
            Ok(Value::Text(serde_json::to_string(&report).map_err(|e| OpliteError::Internal(e.to_string()))?))
        }),
    )
}

/// Rewrites the database into the PowerSync core's layout; see the module
/// documentation. Runs in the caller's transaction, in a savepoint: on
/// failure nothing has changed.
pub fn uninstall(db: &Connection) -> Result<Report> {
    const FUNCTION: &str = "oplite_uninstall";
    require_transaction(db, FUNCTION)?;
    if crate::schema::clear::sync_iteration_active(db) || crate::schema::in_sync_operation(db) {
        return Err(OpliteError::Misuse {
            function: FUNCTION,
            reason: "a sync iteration is active on this connection; stop it (powersync_control('stop', NULL)) first".into(),
        });
    }
    let version = current_version(db)?;
    if version == 0 {
        return Err(OpliteError::Misuse {
            function: FUNCTION,
            reason: "this database holds no PowerSync tables (ps_migration is missing)".into(),
        });
    }
    if adopt::is_core_database(db)? && version == adopt::CORE_VERSION {
        return Ok(Report { core_version: adopt::CORE_VERSION, uploads_queued: queued(db)?, next: NEXT, ..Report::default() });
    }
    with_savepoint(db, || {
        // An older oplite's database, or a core's of another version, is
        // first brought to this build's layout, which the steps know.
        migrate_to(db, LATEST_VERSION)?;
        let mut report = Report {
            changed: true,
            core_version: adopt::CORE_VERSION,
            oplite_version: current_version(db)?,
            next: NEXT,
            ..Report::default()
        };
        let installed = Installed::read(db)?;
        for view in installed.generated_views() {
            run(db, &format!("DROP VIEW {}", identifier(&view.name)))?;
            report.views_dropped.push(view.name.clone());
        }
        for table in &installed.data_tables {
            match table.layout {
                Layout::Typed => report.data_tables.push(data_tables::convert(db, table)?),
                // Core 0.5.4's own layout: the table, its indexes and its
                // upload triggers are the core's text already.
                Layout::Direct => {}
                // The core's layout already; its generated indexes are
                // oplite's text, and the core's replace_schema makes its own.
                Layout::Json => {
                    let ours = format!("{}__", table.name.to_lowercase());
                    for index in installed.data_indexes().filter(|i| i.table.eq_ignore_ascii_case(&table.name)) {
                        if index.name.to_lowercase().starts_with(&ours) {
                            run(db, &format!("DROP INDEX {}", identifier(&index.name)))?;
                        }
                    }
                }
            }
        }
        for (kind, name) in OPLITE_OBJECTS {
            run(db, &format!("DROP {} IF EXISTS {name}", kind.to_uppercase()))?;
            report.dropped.push((*name).to_owned());
        }
        let (rebuilt, indexes) = layout::restore(db)?;
        report.tables_rebuilt = rebuilt;
        report.indexes_created = indexes;
        db.execute_batch(CORE_MIGRATIONS).context("writing the PowerSync core's ps_migration rows")?;
        check(db)?;
        report.uploads_queued = queued(db)?;
        Ok(report)
    })
}

fn queued(db: &Connection) -> Result<i64> {
    db.query_row("SELECT count(*) FROM ps_crud", [], |r| r.get(0)).context("counting queued uploads")
}

/// Fails if anything of oplite's is left: an internal table or index that
/// is not the core's, word for word, or a trigger that calls oplite (it
/// would fail under the core). The last guard before the savepoint is
/// released.
fn check(db: &Connection) -> Result<()> {
    let core = layout::objects();
    let installed = Installed::read(db)?;
    for object in &installed.objects {
        let sql = object.sql.as_deref().unwrap_or("");
        // A direct table's indexes are named ps_data__* too, but belong to
        // the app's schema as the core writes it (schema/direct.rs).
        let internal = object.name.starts_with("ps_")
            && !object.table.starts_with(crate::schema::ddl::SYNCED_PREFIX)
            && !object.table.starts_with(crate::schema::ddl::LOCAL_PREFIX)
            && !(object.kind == "index" && crate::schema::direct::is_direct_index_sql(sql));
        let kind = object.kind.as_str();
        if matches!(kind, "table" | "index") && internal && !core.iter().any(|c| c.name == object.name && c.sql == sql) {
            return Err(OpliteError::Internal(format!("oplite_uninstall would leave the {kind} {} behind: {sql}", object.name)));
        }
        if kind == "trigger" && sql.to_lowercase().contains("oplite_") {
            return Err(OpliteError::Misuse {
                function: "oplite_uninstall",
                reason: format!("the trigger {} calls oplite's functions, which the PowerSync core lacks; drop it first", object.name),
            });
        }
    }
    Ok(())
}

/// Runs one of the uninstall's statements; a failure names it.
fn run(db: &Connection, sql: &str) -> Result<()> {
    db.execute_batch(sql).map_err(|e| OpliteError::sqlite(format!("oplite_uninstall: {sql}"), e))
}
