//! `powersync_init()` and `oplite_migrate(version)`: bring the internal
//! schema to the version this build needs, and create the client id.

use rusqlite::types::Value;
use rusqlite::Connection;

use crate::client_id::powersync_init;
use crate::error::{OpliteError, Result};
use crate::migrations::migrate_to;
use crate::sql_args::{int_arg, require_transaction};
use crate::sqlite::{register_scalar, Purity};

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
