//! A prepared statement that binds text without copying it.
//!
//! rusqlite binds every text parameter with `SQLITE_TRANSIENT`, so SQLite
//! allocates and copies each one. Storing a data line binds four texts per
//! op, and that copying was 8% of the store benchmark's instructions
//! (`sqlite3_bind_text64` under callgrind). [`BorrowingStatement::execute`]
//! binds with `SQLITE_STATIC` instead, and runs the statement to the end,
//! resets it and clears its bindings before it returns: SQLite never keeps
//! a pointer beyond the borrow of the parameters.

use std::ffi::{c_char, c_int, CStr};
use std::marker::PhantomData;
use std::ptr;

use rusqlite::ffi;
use rusqlite::Connection;

/// One parameter value.
#[derive(Clone, Copy, Debug)]
pub enum Param<'a> {
    /// An integer.
    Int(i64),
    /// Text, or NULL.
    Text(Option<&'a str>),
}

/// Bound the usual way (copied) where a statement is rusqlite's own.
impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match *self {
            Param::Int(v) => Ok(v.into()),
            Param::Text(Some(text)) => Ok(text.into()),
            Param::Text(None) => Ok(rusqlite::types::Null.into()),
        }
    }
}

/// A statement prepared on a connection, run with borrowed parameters.
pub struct BorrowingStatement<'c> {
    db: *mut ffi::sqlite3,
    stmt: *mut ffi::sqlite3_stmt,
    _connection: PhantomData<&'c Connection>,
}

/// SQLite's error for `rc`, with the connection's message.
fn error(db: *mut ffi::sqlite3, rc: c_int) -> rusqlite::Error {
    // SAFETY: db is an open connection; the message is copied at once.
    let (code, message) = unsafe {
        let message = ffi::sqlite3_errmsg(db);
        let message = if message.is_null() { String::new() } else { CStr::from_ptr(message).to_string_lossy().into_owned() };
        (ffi::sqlite3_extended_errcode(db), message)
    };
    let code = if code & 0xff == rc & 0xff { code } else { rc };
    rusqlite::Error::SqliteFailure(ffi::Error::new(code), Some(message))
}

impl<'c> BorrowingStatement<'c> {
    /// Prepares `sql` (one statement) on `connection`.
    pub fn prepare(connection: &'c Connection, sql: &str) -> rusqlite::Result<Self> {
        // SAFETY: the handle stays open for 'c, which the statement cannot
        // outlive; the SQL is passed with its length.
        unsafe {
            let db = connection.handle();
            let mut stmt = ptr::null_mut();
            let len = c_int::try_from(sql.len()).map_err(|_| rusqlite::Error::SqliteFailure(ffi::Error::new(ffi::SQLITE_TOOBIG), None))?;
            let rc = ffi::sqlite3_prepare_v3(db, sql.as_ptr().cast::<c_char>(), len, 0, &mut stmt, ptr::null_mut());
            if rc != ffi::SQLITE_OK {
                ffi::sqlite3_finalize(stmt);
                return Err(error(db, rc));
            }
            Ok(BorrowingStatement { db, stmt, _connection: PhantomData })
        }
    }

    /// Binds `params` to parameters 1, 2, ... and runs the statement to the
    /// end (rows it returns are skipped).
    pub fn execute(&mut self, params: &[Param<'_>]) -> rusqlite::Result<()> {
        // SAFETY: self.stmt is a live statement of self.db. Text is bound
        // SQLITE_STATIC and the bindings are cleared before returning, while
        // `params` is still borrowed.
        unsafe {
            let mut rc = ffi::SQLITE_OK;
            for (i, param) in params.iter().enumerate() {
                let index = c_int::try_from(i + 1).unwrap_or(c_int::MAX);
                rc = match *param {
                    Param::Int(v) => ffi::sqlite3_bind_int64(self.stmt, index, v),
                    Param::Text(None) => ffi::sqlite3_bind_null(self.stmt, index),
                    Param::Text(Some(s)) => {
                        // An empty &str may dangle: point at a real byte.
                        let text = if s.is_empty() { c"".as_ptr() } else { s.as_ptr().cast::<c_char>() };
                        ffi::sqlite3_bind_text64(
                            self.stmt,
                            index,
                            text,
                            s.len() as u64,
                            ffi::SQLITE_STATIC(),
                            ffi::SQLITE_UTF8 as u8,
                        )
                    }
                };
                if rc != ffi::SQLITE_OK {
                    break;
                }
            }
            if rc == ffi::SQLITE_OK {
                rc = ffi::sqlite3_step(self.stmt);
                while rc == ffi::SQLITE_ROW {
                    rc = ffi::sqlite3_step(self.stmt);
                }
            }
            let result = if rc == ffi::SQLITE_DONE { Ok(()) } else { Err(error(self.db, rc)) };
            ffi::sqlite3_reset(self.stmt);
            ffi::sqlite3_clear_bindings(self.stmt);
            result
        }
    }
}

impl Drop for BorrowingStatement<'_> {
    fn drop(&mut self) {
        // SAFETY: the statement is finalized once, here.
        unsafe {
            ffi::sqlite3_finalize(self.stmt);
        }
    }
}

#[cfg(all(test, feature = "bundled"))]
mod tests {
    use super::*;

    #[test]
    fn binds_borrowed_text_and_reports_errors() {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch("CREATE TABLE t(a INTEGER, b TEXT, c TEXT UNIQUE)").unwrap();
        let mut insert = BorrowingStatement::prepare(&db, "INSERT INTO t VALUES (?, ?, ?)").unwrap();
        for i in 0..3 {
            let text = format!("row {i}");
            insert.execute(&[Param::Int(i), Param::Text(Some(&text)), Param::Text(Some(["", "x", "y"][i as usize]))]).unwrap();
        }
        insert.execute(&[Param::Int(3), Param::Text(None), Param::Text(None)]).unwrap();
        let rows: Vec<String> = db
            .prepare("SELECT a || '|' || ifnull(b, 'NULL') || '|' || ifnull(c, 'NULL') FROM t ORDER BY a")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(rows, ["0|row 0|", "1|row 1|x", "2|row 2|y", "3|NULL|NULL"]);
        let err = insert.execute(&[Param::Int(4), Param::Text(None), Param::Text(Some("x"))]).unwrap_err();
        assert_eq!(err.sqlite_error_code(), Some(rusqlite::ErrorCode::ConstraintViolation));
        assert!(err.to_string().contains("UNIQUE"), "{err}");
        assert!(BorrowingStatement::prepare(&db, "INSERT INTO nowhere VALUES (1)").is_err());
    }
}
