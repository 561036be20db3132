//! What every SQL function checks about how it was called: its arguments'
//! types and, for functions that change state, that a transaction is open.
//! Functions of the reference core's surface read their arguments as the
//! reference does ([`int_coerced`], [`text_coerced`]: as SQLite's own
//! `sqlite3_value_int` and `sqlite3_value_text`, never an error), so that
//! a host's driver binding `1` as REAL (every JavaScript driver) sees what
//! it would see with the reference; oplite's own functions are strict
//! ([`text_arg`], [`int_arg`]).
//! The SQL functions live in `functions/`, `schema/` and `sync/`; keeping
//! these checks in a module of their own, rather than in the registration
//! hub `functions/mod.rs`, lets all three use them without importing from
//! the module that registers them, and makes every function report a bad
//! call with the same error.

use std::borrow::Cow;

use rusqlite::types::ValueRef;
use rusqlite::Connection;

use crate::error::{OpliteError, Result, SqliteResultExt};

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

/// Argument `index` as text, which it must be (NULL is an error too).
pub(crate) fn required_text<'a>(args: &[ValueRef<'a>], index: usize, function: &'static str) -> Result<&'a str> {
    text_arg(args, index, function)?.ok_or_else(|| OpliteError::InvalidArgument {
        function,
        message: format!("argument {} must be text, got NULL", index + 1),
        type_mismatch: true,
    })
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

/// Argument `index` as `sqlite3_value_int64` reads it, which is how the
/// reference core reads its integer arguments: whatever the type, never an
/// error. NULL and missing are 0; a REAL is truncated toward zero (clamped
/// to the i64 range); TEXT and BLOB give the integer their text starts with
/// (after white space and a sign; `'1.5'` is 1, `'abc'` 0; clamped).
pub(crate) fn int64_coerced(args: &[ValueRef<'_>], index: usize) -> i64 {
    match args.get(index) {
        None | Some(ValueRef::Null) => 0,
        Some(ValueRef::Integer(i)) => *i,
        // `as` truncates toward zero and saturates, NaN is 0: SQLite's
        // sqlite3RealToI64.
        Some(ValueRef::Real(r)) => *r as i64,
        Some(ValueRef::Text(bytes)) | Some(ValueRef::Blob(bytes)) => leading_integer(bytes),
    }
}

/// Argument `index` as `sqlite3_value_int` reads it: [`int64_coerced`]
/// cut to its low 32 bits, as C's cast does (the reference reads its flags
/// with it, so `powersync_clear(4294967297)` is `powersync_clear(1)`).
pub(crate) fn int_coerced(args: &[ValueRef<'_>], index: usize) -> i32 {
    int64_coerced(args, index) as i32
}

/// The integer a text starts with, as SQLite's sqlite3Atoi64 reads it.
fn leading_integer(bytes: &[u8]) -> i64 {
    let mut rest = bytes;
    while let [b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r', tail @ ..] = rest {
        rest = tail;
    }
    let negative = matches!(rest.first(), Some(b'-'));
    if matches!(rest.first(), Some(b'-' | b'+')) {
        rest = &rest[1..];
    }
    let mut magnitude: u128 = 0;
    for digit in rest.iter().take_while(|b| b.is_ascii_digit()) {
        magnitude = (magnitude * 10 + u128::from(digit - b'0')).min(u128::from(u64::MAX));
    }
    if negative {
        if magnitude >= 1 << 63 {
            i64::MIN
        } else {
            -(magnitude as i64)
        }
    } else {
        i64::try_from(magnitude).unwrap_or(i64::MAX)
    }
}

/// Argument `index` as `sqlite3_value_text` reads it, which is how the
/// reference core reads its text arguments: NULL and missing are empty
/// text, numbers their text as SQLite renders them (a REAL through SQLite
/// itself, so `1.0` reads `'1.0'`), a BLOB its bytes.
pub(crate) fn text_coerced<'a>(db: &Connection, args: &[ValueRef<'a>], index: usize) -> Result<Cow<'a, str>> {
    Ok(match args.get(index) {
        None | Some(ValueRef::Null) => Cow::Borrowed(""),
        Some(ValueRef::Integer(i)) => Cow::Owned(i.to_string()),
        Some(ValueRef::Real(r)) => Cow::Owned(
            db.query_row("SELECT CAST(?1 AS TEXT)", [r], |row| row.get(0)).context("rendering a REAL argument")?,
        ),
        Some(ValueRef::Text(bytes)) | Some(ValueRef::Blob(bytes)) => String::from_utf8_lossy(bytes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(value: ValueRef<'_>) -> i64 {
        int64_coerced(&[value], 0)
    }

    #[test]
    fn integers_read_as_sqlite3_value_int64_reads_them() {
        assert_eq!(int(ValueRef::Null), 0);
        assert_eq!(int(ValueRef::Integer(-7)), -7);
        assert_eq!(int(ValueRef::Real(1.9)), 1);
        assert_eq!(int(ValueRef::Real(-1.9)), -1);
        assert_eq!(int(ValueRef::Real(1e300)), i64::MAX);
        assert_eq!(int(ValueRef::Real(f64::NAN)), 0);
        assert_eq!(int(ValueRef::Text(b" \t+12abc")), 12);
        assert_eq!(int(ValueRef::Text(b"-1.5")), -1);
        assert_eq!(int(ValueRef::Text(b"1e3")), 1);
        assert_eq!(int(ValueRef::Text(b"abc")), 0);
        assert_eq!(int(ValueRef::Text(b"9223372036854775808")), i64::MAX);
        assert_eq!(int(ValueRef::Text(b"-9223372036854775808")), i64::MIN);
        assert_eq!(int(ValueRef::Text(b"-99999999999999999999999")), i64::MIN);
        assert_eq!(int(ValueRef::Blob(b"31")), 31);
        assert_eq!(int_coerced(&[ValueRef::Integer(4_294_967_297)], 0), 1);
    }
}
