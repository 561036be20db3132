//! The SQL functions oplite registers, one module per concern.
//!
//! Each submodule has a `register(db)`; [`register`] calls them all. Shared
//! argument helpers live here so every function reports bad arguments the
//! same way.

mod ids;
mod init;
mod key_encoding;
mod version;

use rusqlite::types::ValueRef;
use rusqlite::Connection;

use crate::error::{OpliteError, Result};
pub use ids::client_id;
pub(crate) use init::powersync_init;
pub use key_encoding::remove_duplicate_key_encoding;

/// Registers every SQL function on `db`.
pub fn register(db: &Connection) -> Result<()> {
    version::register(db)?;
    ids::register(db)?;
    init::register(db)?;
    key_encoding::register(db)?;
    crate::sync::register(db)?;
    crate::schema::register(db)?;
    Ok(())
}

/// Fails with `SQLITE_MISUSE` unless `db` is inside a transaction.
/// Functions that change state require one (PROTOCOL.md section 1), so that
/// their effects commit or roll back with the caller's other writes.
pub(crate) fn require_transaction(db: &Connection, function: &'static str) -> Result<()> {
    if db.is_autocommit() {
        Err(OpliteError::NotInTransaction { function })
    } else {
        Ok(())
    }
}

/// Argument `index` as text; NULL is `None`, other types are an error.
pub(crate) fn text_arg<'a>(args: &[ValueRef<'a>], index: usize, function: &'static str) -> Result<Option<&'a str>> {
    match args.get(index) {
        None | Some(ValueRef::Null) => Ok(None),
        Some(ValueRef::Text(bytes)) => std::str::from_utf8(bytes).map(Some).map_err(|_| OpliteError::InvalidArgument {
            function,
            message: format!("argument {} is not valid UTF-8", index + 1),
            type_mismatch: false,
        }),
        Some(other) => Err(OpliteError::InvalidArgument {
            function,
            message: format!("argument {} must be text, got {}", index + 1, other.data_type()),
            type_mismatch: true,
        }),
    }
}

/// Argument `index` as an integer; NULL is `None`, other types are an error.
pub(crate) fn int_arg(args: &[ValueRef<'_>], index: usize, function: &'static str) -> Result<Option<i64>> {
    match args.get(index) {
        None | Some(ValueRef::Null) => Ok(None),
        Some(ValueRef::Integer(i)) => Ok(Some(*i)),
        Some(other) => Err(OpliteError::InvalidArgument {
            function,
            message: format!("argument {} must be an integer, got {}", index + 1, other.data_type()),
            type_mismatch: true,
        }),
    }
}
