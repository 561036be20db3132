//! Bringing a database an older PowerSync core wrote up to the core's
//! version 14, which `adopt` then converts to oplite's own schema.
//!
//! Every SDK release before the 0.5 cores left its database at one of the
//! core's internal versions 1 to 13. Each version changed the layout of the
//! tables that hold what the user has (ps_oplog, ps_buckets, ps_crud, ps_kv,
//! the sync times) and some moved data between them, so each is replayed
//! here, in order, for the data it carries: the SQL is in
//! `sql/migrations/core/NN_*.sql`, one file per core version, and the steps
//! that depend on the app's tables (dropping the generated views' triggers
//! before version 5, queueing dangling rows at version 6) are in code. No
//! `ps_migration` rows are written: adopting replaces the core's history
//! with oplite's, and the core's way down is never needed again.

use rusqlite::Connection;

use crate::error::{Result, SqliteResultExt};
use crate::schema::quote;
use crate::uuid::random_uuid;

/// The core version `adopt` starts from.
pub const TARGET: i64 = 14;

/// The oldest core version that can be brought up (version 1 created the
/// tables every later one changes).
pub const OLDEST: i64 = 1;

/// One core version's change.
enum Step {
    /// SQL only.
    Sql(&'static str),
    /// Version 3: ps_kv, and the client id in it.
    KeyValue(&'static str),
    /// Version 5: ps_oplog by bucket id; the generated views' triggers,
    /// which wrote to the old oplog, go first.
    BucketIds(&'static str),
    /// Version 6: synced rows without any op are queued for removal.
    DanglingRows,
    /// A version that changed no table the data lives in.
    Nothing,
}

/// The change to each core version, from 2 to [`TARGET`].
const STEPS: &[(i64, Step)] = &[
    (2, Step::Sql(include_str!("../../../sql/migrations/core/02_transactions.sql"))),
    (3, Step::KeyValue(include_str!("../../../sql/migrations/core/03_kv.sql"))),
    (4, Step::Sql(include_str!("../../../sql/migrations/core/04_op_checksum.sql"))),
    (5, Step::BucketIds(include_str!("../../../sql/migrations/core/05_bucket_ids.sql"))),
    (6, Step::DanglingRows),
    (7, Step::Sql(include_str!("../../../sql/migrations/core/07_sync_state.sql"))),
    (8, Step::Sql(include_str!("../../../sql/migrations/core/08_sync_state_key.sql"))),
    (9, Step::Sql(include_str!("../../../sql/migrations/core/09_bucket_counts.sql"))),
    (10, Step::Nothing),
    (11, Step::Sql(include_str!("../../../sql/migrations/core/11_stream_subscriptions.sql"))),
    (12, Step::Sql(include_str!("../../../sql/migrations/core/12_downloaded_size.sql"))),
    (13, Step::Sql(include_str!("../../../sql/migrations/core/13_microsecond_times.sql"))),
    (14, Step::Sql(include_str!("../../../sql/migrations/core/14_local_checkpoints.sql"))),
];

/// SQL: the triggers on the views the core generated (their definition ends
/// with its marker comment).
const GENERATED_VIEW_TRIGGERS: &str = "SELECT t.name FROM sqlite_master t
  WHERE t.type = 'trigger' AND t.tbl_name IN (
    SELECT v.name FROM sqlite_master v
    WHERE v.type = 'view' AND v.sql GLOB '*-- powersync-auto-generated')";

/// SQL: the synced-data tables (local-only tables have no ops).
const SYNCED_TABLES: &str =
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'ps_data__*'";

/// Brings a core database at `version` (OLDEST..TARGET) up to [`TARGET`].
/// Runs in the caller's transaction.
pub fn upgrade(db: &Connection, version: i64) -> Result<()> {
    for (to, step) in STEPS.iter().filter(|(to, _)| *to > version) {
        let context = format!("bringing the PowerSync core's schema from version {} to {to}", to - 1);
        match step {
            Step::Sql(sql) => db.execute_batch(sql).context(&context)?,
            Step::KeyValue(sql) => {
                db.execute_batch(sql).context(&context)?;
                db.execute("INSERT INTO ps_kv(key, value) VALUES('client_id', ?1)", [random_uuid()])
                    .context(&context)?;
            }
            Step::BucketIds(sql) => {
                for trigger in names(db, GENERATED_VIEW_TRIGGERS, &context)? {
                    db.execute_batch(&format!("DROP TRIGGER {}", quote::identifier(&trigger))).context(&context)?;
                }
                db.execute_batch(sql).context(&context)?;
            }
            Step::DanglingRows => queue_dangling_rows(db, &context)?,
            Step::Nothing => {}
        }
    }
    Ok(())
}

/// Core versions before 0.3.5 could leave synced rows behind whose ops were
/// gone; the core's version 6 queued every such row in ps_updated_rows, so
/// that the next apply removes it. Done here the same way.
fn queue_dangling_rows(db: &Connection, context: &str) -> Result<()> {
    for table in names(db, SYNCED_TABLES, context)? {
        let row_type = &table["ps_data__".len()..];
        let quoted = quote::identifier(&table);
        db.execute(
            &format!(
                "INSERT OR IGNORE INTO ps_updated_rows(row_type, row_id)
                 SELECT ?1, t.id FROM {quoted} t
                 WHERE NOT EXISTS (SELECT 1 FROM ps_oplog op WHERE op.row_type = ?1 AND op.row_id = t.id)"
            ),
            [row_type],
        )
        .context(context)?;
    }
    Ok(())
}

/// The first column of every row of `sql`.
fn names(db: &Connection, sql: &str, context: &str) -> Result<Vec<String>> {
    let mut stmt = db.prepare(sql).context(context)?;
    let rows = stmt.query_map([], |row| row.get(0)).context(context)?;
    rows.collect::<rusqlite::Result<_>>().context(context)
}
