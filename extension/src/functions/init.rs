//! `powersync_init()` and `oplite_migrate(version)`: bring the internal
//! schema to the version this build needs, and create the client id.

use rusqlite::types::Value;
use rusqlite::Connection;

use super::{int_arg, require_transaction};
use crate::error::{OpliteError, Result, SqliteResultExt};
use crate::functions::ids::random_uuid;
use crate::migrations::{migrate_to, LATEST_VERSION};
use crate::sqlite::{register_scalar, Purity};

/// Brings the internal schema to the latest version and makes sure a client
/// id exists. Idempotent.
pub fn powersync_init(db: &Connection) -> Result<()> {
    migrate_to(db, LATEST_VERSION)?;
    db.execute(
        "INSERT OR IGNORE INTO ps_kv(key, value) VALUES('client_id', ?1)",
        [random_uuid()],
    )
    .context("creating the client id")?;
    Ok(())
}

pub(super) fn register(db: &Connection) -> Result<()> {
    register_scalar(
        db,
        "powersync_init",
        0,
        Purity::Volatile,
        Box::new(|db, _| {
            require_transaction(db, "powersync_init")?;
            powersync_init(db)?;
            Ok(Value::Text(String::new()))
        }),
    )?;
    register_scalar(
        db,
        "oplite_migrate",
        1,
        Purity::Volatile,
        Box::new(|db, args| {
            require_transaction(db, "oplite_migrate")?;
            let target = int_arg(args, 0, "oplite_migrate")?.ok_or_else(|| OpliteError::InvalidArgument {
                function: "oplite_migrate",
                message: "argument 1 (target version) must not be NULL".into(),
                type_mismatch: false,
            })?;
            migrate_to(db, target)?;
            Ok(Value::Integer(target))
        }),
    )
}
