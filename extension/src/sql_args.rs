//! What every SQL function checks about how it was called: its arguments'
//! types and, for functions that change state, that a transaction is open.
//! The SQL functions live in `functions/`, `schema/` and `sync/`; keeping
//! these checks in a module of their own, rather than in the registration
//! hub `functions/mod.rs`, lets all three use them without importing from
//! the module that registers them, and makes every function report a bad
//! call with the same error.

use rusqlite::types::ValueRef;
use rusqlite::Connection;

use crate::error::{OpliteError, Result};

/// Fails with `SQLITE_MISUSE` unless `db` is inside a transaction.
/// Functions that change state require one (see docs/protocol.md), so that
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
