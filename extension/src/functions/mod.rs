//! The registration hub of the SQL functions: [`register`] calls the
//! `register(db)` of every module that defines functions, those here (one
//! submodule per concern) and those of `schema/`, `sync/` and `uninstall/`. Nothing else
//! lives here, so no module needs to import from the hub; the checks every
//! function makes on its arguments are in `sql_args.rs`.

mod ids;
mod init;
mod key_encoding;
mod version;

use rusqlite::Connection;

use crate::error::Result;

/// Registers every SQL function on `db`.
pub fn register(db: &Connection) -> Result<()> {
    // The pre-close hook first: the functions below cache statements.
    crate::sqlite::register_pre_close(db)?;
    version::register(db)?;
    ids::register(db)?;
    init::register(db)?;
    key_encoding::register(db)?;
    crate::sync::register(db)?;
    crate::schema::register(db)?;
    crate::uninstall::register(db)?;
    Ok(())
}
