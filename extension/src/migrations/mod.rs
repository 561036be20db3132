//! The internal schema and its migrations.
//!
//! Each version is a pair of files in `sql/migrations/`: `NNNN_name.up.sql`
//! brings the database from version N-1 to N, `NNNN_name.down.sql` takes it
//! back. When a version is applied its down SQL is stored in
//! `ps_migration.down_migrations`, so that an *older* oplite that opens a
//! database written by a newer one can step down using the SQL the newer
//! build recorded, without knowing what it was.
//!
//! `ps_migration.down_migrations` holds a JSON array of `{"sql": "..."}`
//! objects, run in order.
//!
//! Imports run one way: this module moves between versions; [`adopt`]
//! converts a database the PowerSync core wrote, after [`core_upgrade`]
//! brings an older core's database to the core version it starts from; the
//! list of versions is a leaf both read.

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

pub mod adopt;
pub mod core_upgrade;
mod versions;

pub use versions::{Migration, LATEST_VERSION, MIGRATIONS};

use crate::error::{OpliteError, Result, SqliteResultExt};

/// SQL: the table that records applied versions.
const CREATE_MIGRATION_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS ps_migration(id INTEGER PRIMARY KEY, down_migrations TEXT)";

#[derive(Serialize, Deserialize)]
struct DownStep {
    sql: String,
}

/// The database's internal schema version: 0 when oplite never ran on it.
pub fn current_version(db: &Connection) -> Result<i64> {
    let exists: bool = db
        .query_row(
            "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ps_migration')",
            [],
            |row| row.get(0),
        )
        .context("reading the internal schema version")?;
    if !exists {
        return Ok(0);
    }
    // No context: a failure names this statement, which says what it read
    // (the reference's message for a broken ps_migration, error_test).
    db.query_row("SELECT ifnull(max(id), 0) as version FROM ps_migration", [], |row| row.get(0)).context("")
}

/// Moves the database to internal schema version `target`, up with this
/// build's migrations or down with the SQL the database recorded.
/// Must run inside a transaction: a failure leaves the version as it was.
pub fn migrate_to(db: &Connection, target: i64) -> Result<()> {
    if !(0..=LATEST_VERSION).contains(&target) {
        return Err(OpliteError::InvalidArgument {
            function: "oplite_migrate",
            message: format!("no internal schema version {target} (this build knows 0 to {LATEST_VERSION})"),
            type_mismatch: false,
        });
    }
    let mut version = current_version(db)?;
    if adopt::is_core_database(db)? {
        // The PowerSync core's tables and history, whatever its version
        // number reads as in oplite's numbering (see adopt.rs).
        adopt::adopt(db, version, step_down)?;
        record(db, &MIGRATIONS[0])?;
        version = MIGRATIONS[0].version;
    }
    while version > target {
        step_down(db, version)?;
        version = current_version(db)?;
    }
    for migration in MIGRATIONS.iter().filter(|m| m.version > version && m.version <= target) {
        step_up(db, migration)?;
    }
    Ok(())
}

fn step_up(db: &Connection, migration: &Migration) -> Result<()> {
    let context = format!("applying internal migration {}", migration.version);
    db.execute_batch(CREATE_MIGRATION_TABLE).context(&context)?;
    db.execute_batch(migration.up).context(&context)?;
    record(db, migration)
}

/// Writes `migration`'s row in ps_migration, with its down SQL.
fn record(db: &Connection, migration: &Migration) -> Result<()> {
    let context = format!("recording internal migration {}", migration.version);
    let down = serde_json::to_string(&[DownStep { sql: migration.down.to_owned() }])
        .map_err(|e| OpliteError::Internal(e.to_string()))?;
    db.execute(
        "INSERT INTO ps_migration(id, down_migrations) VALUES(?1, ?2)",
        params![migration.version, down],
    )
    .context(&context)?;
    Ok(())
}

fn step_down(db: &Connection, version: i64) -> Result<()> {
    let context = format!("reverting internal migration {version}");
    let recorded: Option<Option<String>> = db
        .query_row("SELECT down_migrations FROM ps_migration WHERE id = ?1", [version], |row| row.get(0))
        .optional()
        .context(&context)?;
    let steps: Vec<DownStep> = match recorded.flatten() {
        Some(json) => serde_json::from_str(&json).map_err(|e| OpliteError::SchemaVersion {
            found: version,
            latest: LATEST_VERSION,
            message: format!("ps_migration.down_migrations of version {version} is not valid: {e}"),
        })?,
        None => {
            return Err(OpliteError::SchemaVersion {
                found: version,
                latest: LATEST_VERSION,
                message: format!("no down migration recorded for version {version}"),
            })
        }
    };
    for step in &steps {
        db.execute_batch(&step.sql).context(&context)?;
    }
    // The last step down removes ps_migration itself.
    if current_version_table_exists(db)? {
        db.execute("DELETE FROM ps_migration WHERE id >= ?1", [version]).context(&context)?;
    }
    Ok(())
}

fn current_version_table_exists(db: &Connection) -> Result<bool> {
    db.query_row(
        "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ps_migration')",
        [],
        |row| row.get(0),
    )
    .context("checking for ps_migration")
}

#[cfg(all(test, feature = "bundled"))]
mod tests {
    use super::*;

    fn schema(db: &Connection) -> Vec<String> {
        let mut stmt = db
            .prepare("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY name")
            .unwrap();
        stmt.query_map([], |row| row.get(0)).unwrap().map(|r| r.unwrap()).collect()
    }

    #[test]
    fn up_down_up_round_trips() {
        let db = Connection::open_in_memory().unwrap();
        assert_eq!(current_version(&db).unwrap(), 0);
        migrate_to(&db, LATEST_VERSION).unwrap();
        assert_eq!(current_version(&db).unwrap(), LATEST_VERSION);
        let first = schema(&db);
        assert!(first.iter().any(|sql| sql.contains("CREATE TABLE ps_oplog")));
        migrate_to(&db, 0).unwrap();
        assert_eq!(current_version(&db).unwrap(), 0);
        assert!(schema(&db).is_empty(), "down to 0 leaves nothing: {:?}", schema(&db));
        migrate_to(&db, LATEST_VERSION).unwrap();
        assert_eq!(schema(&db), first);
    }

    #[test]
    fn a_newer_version_steps_down_with_its_recorded_sql() {
        let db = Connection::open_in_memory().unwrap();
        migrate_to(&db, LATEST_VERSION).unwrap();
        // Pretend a newer build added a table and recorded how to drop it.
        let newer = LATEST_VERSION + 1;
        db.execute_batch("CREATE TABLE ps_future(x)").unwrap();
        db.execute(
            "INSERT INTO ps_migration(id, down_migrations) VALUES(?1, ?2)",
            params![newer, r#"[{"sql":"DROP TABLE ps_future"}]"#],
        )
        .unwrap();
        migrate_to(&db, LATEST_VERSION).unwrap();
        assert_eq!(current_version(&db).unwrap(), LATEST_VERSION);
        assert!(!schema(&db).iter().any(|sql| sql.contains("ps_future")));
    }

    #[test]
    fn a_newer_version_without_a_way_down_is_an_error() {
        let db = Connection::open_in_memory().unwrap();
        migrate_to(&db, LATEST_VERSION).unwrap();
        db.execute("INSERT INTO ps_migration(id, down_migrations) VALUES(?1, NULL)", [LATEST_VERSION + 1])
            .unwrap();
        let err = migrate_to(&db, LATEST_VERSION).unwrap_err();
        assert!(matches!(err, OpliteError::SchemaVersion { .. }), "{err}");
        assert!(err.to_string().contains("no down migration"), "{err}");
    }

    #[test]
    fn unknown_target_is_rejected() {
        let db = Connection::open_in_memory().unwrap();
        assert!(migrate_to(&db, LATEST_VERSION + 5).is_err());
        assert!(migrate_to(&db, -1).is_err());
    }
}
