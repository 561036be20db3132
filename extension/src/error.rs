//! The one error type of the crate.
//!
//! Every failure oplite reports to SQLite goes through [`OpliteError`]: each
//! variant says what went wrong, names the input at fault, and maps to a
//! SQLite result code with [`OpliteError::code`]. The codes are the
//! reference core's for the same kind of failure (a refused argument is
//! `SQLITE_CONSTRAINT_DATATYPE`, a state error `SQLITE_MISUSE`, a sync
//! protocol error `SQLITE_ABORT`), so a host that branches on them sees no
//! difference. Errors raised by SQLite itself keep their extended code, so a
//! host can still tell a retryable `SQLITE_BUSY` from a full disk.

use std::ffi::c_int;
use std::fmt;

use rusqlite::ffi;

/// Everything that can go wrong inside oplite.
#[derive(Debug)]
#[non_exhaustive]
pub enum OpliteError {
    /// A function that changes state was called outside a transaction.
    /// Maps to `SQLITE_MISUSE`.
    NotInTransaction {
        /// The SQL function that was called.
        function: &'static str,
    },
    /// A function was called in a state where it cannot run, for example a
    /// sync line with no active sync iteration. Maps to `SQLITE_MISUSE`.
    Misuse {
        /// What was called.
        function: &'static str,
        /// Why it cannot run now.
        reason: String,
    },
    /// An argument had the wrong type or value. Maps to
    /// `SQLITE_CONSTRAINT_DATATYPE`, as the reference's argument errors.
    InvalidArgument {
        /// The SQL function that was called.
        function: &'static str,
        /// Which argument, and what was wrong with it.
        message: String,
        /// True when the argument had the wrong SQLite type (the code is
        /// the same: the reference does not tell the two apart).
        type_mismatch: bool,
    },
    /// Input from the app could not be decoded (JSON): a schema, stream
    /// parameters. Maps to `SQLITE_CONSTRAINT_DATATYPE`, as an argument
    /// error. (Sync lines that do not decode are [`OpliteError::Protocol`].)
    Malformed {
        /// What was being decoded, e.g. "sync line" or "schema".
        what: &'static str,
        /// The decoder's explanation, with position where known.
        message: String,
    },
    /// A schema asks for something SQLite cannot create in this database: a
    /// view whose name another object or a virtual table holds, a column
    /// type a CAST cannot take. Maps to `SQLITE_ERROR`, the code SQLite
    /// gives the reference core's failing statement in these cases.
    SchemaConflict {
        /// What the schema asked for and what stands in the way.
        message: String,
    },
    /// Data stored in the database could not be decoded (an op's row JSON).
    /// Maps to `SQLITE_ERROR`, as SQLite's JSON functions report it to the
    /// reference core.
    StoredData {
        /// What was being decoded.
        what: &'static str,
        /// What was wrong with it.
        message: String,
    },
    /// `ps_kv` has no client id (it was deleted, or a read-only connection
    /// could not create it). Maps to `SQLITE_ABORT`, as in the reference.
    MissingClientId,
    /// The sync stream broke the protocol: an undecodable line, or a line
    /// that makes no sense in the current state. Maps to `SQLITE_ABORT`.
    Protocol {
        /// What was wrong, naming the line or field.
        message: String,
    },
    /// The database's internal schema is newer than this build and records
    /// no way down, or is otherwise unusable. Maps to `SQLITE_SCHEMA`.
    SchemaVersion {
        /// The version found in `ps_migration`.
        found: i64,
        /// The newest version this build knows.
        latest: i64,
        /// What is missing.
        message: String,
    },
    /// SQLite failed while oplite ran a statement. Keeps SQLite's extended
    /// result code and the context oplite was in.
    Sqlite {
        /// What oplite was doing, e.g. "applying migration 1".
        context: String,
        /// The SQL of the statement that failed, when oplite names it (a
        /// statement from the app, such as a raw table's).
        statement: Option<String>,
        /// The error SQLite returned.
        source: rusqlite::Error,
    },
    /// A bug in oplite: an invariant did not hold, or a panic was caught at
    /// the FFI boundary. Maps to `SQLITE_INTERNAL`.
    Internal(String),
}

/// The crate's result type.
pub type Result<T, E = OpliteError> = std::result::Result<T, E>;

impl OpliteError {
    /// The SQLite (extended) result code this error reports to the host.
    pub fn code(&self) -> c_int {
        match self {
            OpliteError::NotInTransaction { .. } | OpliteError::Misuse { .. } => ffi::SQLITE_MISUSE,
            OpliteError::InvalidArgument { .. } | OpliteError::Malformed { .. } => ffi::SQLITE_CONSTRAINT_DATATYPE,
            OpliteError::SchemaConflict { .. } | OpliteError::StoredData { .. } => ffi::SQLITE_ERROR,
            OpliteError::Protocol { .. } | OpliteError::MissingClientId => ffi::SQLITE_ABORT,
            OpliteError::SchemaVersion { .. } => ffi::SQLITE_SCHEMA,
            OpliteError::Sqlite { source, .. } => match source {
                rusqlite::Error::SqliteFailure(e, _) => e.extended_code,
                _ => ffi::SQLITE_ERROR,
            },
            OpliteError::Internal(_) => ffi::SQLITE_INTERNAL,
        }
    }

    /// Wraps a SQLite error with what oplite was doing when it happened.
    pub fn sqlite(context: impl Into<String>, source: rusqlite::Error) -> Self {
        OpliteError::Sqlite { context: context.into(), statement: None, source }
    }

    /// Wraps a SQLite error from running the statement `sql`, with what
    /// oplite was doing: reported as `statement <sql>: ... (context: ...)`.
    pub fn sqlite_statement(sql: impl Into<String>, context: impl Into<String>, source: rusqlite::Error) -> Self {
        OpliteError::Sqlite { context: context.into(), statement: Some(sql.into()), source }
    }

    /// True for errors a host may retry as they are (`SQLITE_BUSY`,
    /// `SQLITE_LOCKED`).
    pub fn is_retryable(&self) -> bool {
        matches!(self.code() & 0xff, ffi::SQLITE_BUSY | ffi::SQLITE_LOCKED)
    }
}

impl fmt::Display for OpliteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpliteError::NotInTransaction { function } => {
                write!(f, "{function}: This function may only be called in transactions.")
            }
            OpliteError::Misuse { function, reason } => write!(f, "{function}(): {reason}"),
            OpliteError::InvalidArgument { function, message, .. } => {
                write!(f, "{function}(): {message}")
            }
            OpliteError::Malformed { what, message } => write!(f, "malformed {what}: {message}"),
            OpliteError::SchemaConflict { message } => write!(f, "powersync_replace_schema(): {message}"),
            OpliteError::StoredData { what, message } => write!(f, "malformed {what}: {message}"),
            OpliteError::MissingClientId => write!(f, "No client_id found in ps_kv"),
            OpliteError::Protocol { message } => write!(f, "Sync protocol error: {message}"),
            OpliteError::SchemaVersion { found, latest, message } => write!(
                f,
                "internal schema version {found} cannot be used by this build (latest {latest}): {message}"
            ),
            OpliteError::Sqlite { context, statement, source } => fmt_sqlite(f, context, statement.as_deref(), source),
            OpliteError::Internal(message) => write!(f, "internal error in oplite: {message}"),
        }
    }
}

/// A failed SQLite call as the reference core describes one. When the
/// statement is known (oplite names it, or SQLite does for a statement that
/// did not prepare): `statement <sql>: internal SQLite call returned <CODE>:
/// <SQLite's message>`, then what oplite was doing as `(context: ...)`
/// unless that is empty; otherwise what oplite was doing comes first.
/// Errors rusqlite raised itself (a value of the wrong type) keep its text.
fn fmt_sqlite(f: &mut fmt::Formatter<'_>, context: &str, statement: Option<&str>, source: &rusqlite::Error) -> fmt::Result {
    let (code, message, statement) = match source {
        rusqlite::Error::SqlInputError { error, msg, sql, .. } => (error, msg.clone(), Some(statement.unwrap_or(sql))),
        rusqlite::Error::SqliteFailure(error, msg) => {
            (error, msg.clone().unwrap_or_else(|| error.to_string()), statement)
        }
        other => return write!(f, "{context}: {other}"),
    };
    let returned = format!("internal SQLite call returned {}: {message}", code_name(code.extended_code));
    match statement {
        Some(sql) if context.is_empty() => write!(f, "statement {sql}: {returned}"),
        Some(sql) => write!(f, "statement {sql}: {returned} (context: {context})"),
        None => write!(f, "{context}: {returned}"),
    }
}

/// The name of a SQLite (extended) result code without its `SQLITE_`
/// prefix (`BUSY`, `CONSTRAINT_NOTNULL`), the form the reference core's
/// messages use; a code SQLite does not define is shown as its number.
pub fn code_name(code: c_int) -> String {
    const NAMES: &[(c_int, &str)] = &[
        (ffi::SQLITE_OK, "OK"),
        (ffi::SQLITE_ERROR, "ERROR"),
        (ffi::SQLITE_INTERNAL, "INTERNAL"),
        (ffi::SQLITE_PERM, "PERM"),
        (ffi::SQLITE_ABORT, "ABORT"),
        (ffi::SQLITE_BUSY, "BUSY"),
        (ffi::SQLITE_LOCKED, "LOCKED"),
        (ffi::SQLITE_NOMEM, "NOMEM"),
        (ffi::SQLITE_READONLY, "READONLY"),
        (ffi::SQLITE_INTERRUPT, "INTERRUPT"),
        (ffi::SQLITE_IOERR, "IOERR"),
        (ffi::SQLITE_CORRUPT, "CORRUPT"),
        (ffi::SQLITE_NOTFOUND, "NOTFOUND"),
        (ffi::SQLITE_FULL, "FULL"),
        (ffi::SQLITE_CANTOPEN, "CANTOPEN"),
        (ffi::SQLITE_PROTOCOL, "PROTOCOL"),
        (ffi::SQLITE_EMPTY, "EMPTY"),
        (ffi::SQLITE_SCHEMA, "SCHEMA"),
        (ffi::SQLITE_TOOBIG, "TOOBIG"),
        (ffi::SQLITE_CONSTRAINT, "CONSTRAINT"),
        (ffi::SQLITE_MISMATCH, "MISMATCH"),
        (ffi::SQLITE_MISUSE, "MISUSE"),
        (ffi::SQLITE_NOLFS, "NOLFS"),
        (ffi::SQLITE_AUTH, "AUTH"),
        (ffi::SQLITE_FORMAT, "FORMAT"),
        (ffi::SQLITE_RANGE, "RANGE"),
        (ffi::SQLITE_NOTADB, "NOTADB"),
        (ffi::SQLITE_NOTICE, "NOTICE"),
        (ffi::SQLITE_WARNING, "WARNING"),
        (ffi::SQLITE_ROW, "ROW"),
        (ffi::SQLITE_DONE, "DONE"),
        (ffi::SQLITE_BUSY_RECOVERY, "BUSY_RECOVERY"),
        (ffi::SQLITE_BUSY_SNAPSHOT, "BUSY_SNAPSHOT"),
        (ffi::SQLITE_BUSY_TIMEOUT, "BUSY_TIMEOUT"),
        (ffi::SQLITE_LOCKED_SHAREDCACHE, "LOCKED_SHAREDCACHE"),
        (ffi::SQLITE_LOCKED_VTAB, "LOCKED_VTAB"),
        (ffi::SQLITE_READONLY_RECOVERY, "READONLY_RECOVERY"),
        (ffi::SQLITE_READONLY_CANTLOCK, "READONLY_CANTLOCK"),
        (ffi::SQLITE_READONLY_ROLLBACK, "READONLY_ROLLBACK"),
        (ffi::SQLITE_READONLY_DBMOVED, "READONLY_DBMOVED"),
        (ffi::SQLITE_READONLY_CANTINIT, "READONLY_CANTINIT"),
        (ffi::SQLITE_READONLY_DIRECTORY, "READONLY_DIRECTORY"),
        (ffi::SQLITE_ABORT_ROLLBACK, "ABORT_ROLLBACK"),
        (ffi::SQLITE_CORRUPT_VTAB, "CORRUPT_VTAB"),
        (ffi::SQLITE_CORRUPT_SEQUENCE, "CORRUPT_SEQUENCE"),
        (ffi::SQLITE_CORRUPT_INDEX, "CORRUPT_INDEX"),
        (ffi::SQLITE_CANTOPEN_ISDIR, "CANTOPEN_ISDIR"),
        (ffi::SQLITE_CANTOPEN_FULLPATH, "CANTOPEN_FULLPATH"),
        (ffi::SQLITE_CONSTRAINT_CHECK, "CONSTRAINT_CHECK"),
        (ffi::SQLITE_CONSTRAINT_COMMITHOOK, "CONSTRAINT_COMMITHOOK"),
        (ffi::SQLITE_CONSTRAINT_FOREIGNKEY, "CONSTRAINT_FOREIGNKEY"),
        (ffi::SQLITE_CONSTRAINT_FUNCTION, "CONSTRAINT_FUNCTION"),
        (ffi::SQLITE_CONSTRAINT_NOTNULL, "CONSTRAINT_NOTNULL"),
        (ffi::SQLITE_CONSTRAINT_PRIMARYKEY, "CONSTRAINT_PRIMARYKEY"),
        (ffi::SQLITE_CONSTRAINT_TRIGGER, "CONSTRAINT_TRIGGER"),
        (ffi::SQLITE_CONSTRAINT_UNIQUE, "CONSTRAINT_UNIQUE"),
        (ffi::SQLITE_CONSTRAINT_VTAB, "CONSTRAINT_VTAB"),
        (ffi::SQLITE_CONSTRAINT_ROWID, "CONSTRAINT_ROWID"),
        (ffi::SQLITE_CONSTRAINT_PINNED, "CONSTRAINT_PINNED"),
        (ffi::SQLITE_CONSTRAINT_DATATYPE, "CONSTRAINT_DATATYPE"),
        (ffi::SQLITE_IOERR_READ, "IOERR_READ"),
        (ffi::SQLITE_IOERR_SHORT_READ, "IOERR_SHORT_READ"),
        (ffi::SQLITE_IOERR_WRITE, "IOERR_WRITE"),
        (ffi::SQLITE_IOERR_FSYNC, "IOERR_FSYNC"),
        (ffi::SQLITE_IOERR_TRUNCATE, "IOERR_TRUNCATE"),
        (ffi::SQLITE_IOERR_NOMEM, "IOERR_NOMEM"),
        (ffi::SQLITE_IOERR_LOCK, "IOERR_LOCK"),
        (ffi::SQLITE_IOERR_CLOSE, "IOERR_CLOSE"),
        (ffi::SQLITE_IOERR_DELETE, "IOERR_DELETE"),
        (ffi::SQLITE_IOERR_ACCESS, "IOERR_ACCESS"),
        (ffi::SQLITE_IOERR_SHMOPEN, "IOERR_SHMOPEN"),
        (ffi::SQLITE_IOERR_SHMMAP, "IOERR_SHMMAP"),
        (ffi::SQLITE_IOERR_SEEK, "IOERR_SEEK"),
        (ffi::SQLITE_IOERR_GETTEMPPATH, "IOERR_GETTEMPPATH"),
        (ffi::SQLITE_IOERR_CORRUPTFS, "IOERR_CORRUPTFS"),
    ];
    NAMES.iter().find(|(c, _)| *c == code).map_or_else(|| format!("code {code}"), |(_, name)| (*name).to_owned())
}

impl OpliteError {
    /// The message a SQL function reports for this error: the function's
    /// name, a colon, then what went wrong, as the reference core reports
    /// its errors (`powersync_control: Sync protocol error: ...`). A message
    /// that already starts with the function's name is not named twice.
    pub fn reported_by(&self, function: &str) -> String {
        let message = self.to_string();
        let named = [format!("{function}: "), format!("{function}(): ")];
        match named.iter().find_map(|prefix| message.strip_prefix(prefix.as_str())) {
            Some(rest) => format!("{function}: {rest}"),
            None => format!("{function}: {message}"),
        }
    }
}

impl std::error::Error for OpliteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OpliteError::Sqlite { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Adds context to SQLite results: `stmt.execute(..).context("storing op")?`.
pub trait SqliteResultExt<T> {
    /// Converts a rusqlite error into [`OpliteError::Sqlite`] with `context`.
    fn context(self, context: &str) -> Result<T>;
}

impl<T> SqliteResultExt<T> for std::result::Result<T, rusqlite::Error> {
    fn context(self, context: &str) -> Result<T> {
        self.map_err(|e| OpliteError::sqlite(context, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_the_variant() {
        assert_eq!(OpliteError::NotInTransaction { function: "powersync_init" }.code(), ffi::SQLITE_MISUSE);
        assert_eq!(OpliteError::Internal("x".into()).code(), ffi::SQLITE_INTERNAL);
        let wrong_type = OpliteError::InvalidArgument { function: "f", message: "m".into(), type_mismatch: true };
        assert_eq!(wrong_type.code(), ffi::SQLITE_CONSTRAINT_DATATYPE);
        assert_eq!(OpliteError::SchemaConflict { message: "m".into() }.code(), ffi::SQLITE_ERROR);
        assert_eq!(OpliteError::MissingClientId.code(), ffi::SQLITE_ABORT);
        let busy = rusqlite::Error::SqliteFailure(
            ffi::Error { code: ffi::ErrorCode::DatabaseBusy, extended_code: ffi::SQLITE_BUSY_SNAPSHOT },
            None,
        );
        let err = OpliteError::sqlite("applying", busy);
        assert_eq!(err.code(), ffi::SQLITE_BUSY_SNAPSHOT);
        assert!(err.is_retryable());
        assert!(!OpliteError::Internal("x".into()).is_retryable());
    }

    #[test]
    fn messages_name_the_input() {
        let err = OpliteError::InvalidArgument {
            function: "powersync_control",
            message: "unknown operation 'bogus'".into(),
            type_mismatch: false,
        };
        assert_eq!(err.to_string(), "powersync_control(): unknown operation 'bogus'");
        assert_eq!(err.reported_by("powersync_control"), "powersync_control: unknown operation 'bogus'");
        assert_eq!(err.reported_by("other"), "other: powersync_control(): unknown operation 'bogus'");
        let err = OpliteError::NotInTransaction { function: "powersync_init" };
        assert_eq!(err.reported_by("powersync_init"), "powersync_init: This function may only be called in transactions.");
    }

    #[test]
    fn sqlite_errors_name_the_code() {
        let busy = rusqlite::Error::SqliteFailure(
            ffi::Error { code: ffi::ErrorCode::DatabaseBusy, extended_code: ffi::SQLITE_BUSY },
            Some("database is locked".into()),
        );
        let err = OpliteError::sqlite("reading ps_kv", busy);
        assert_eq!(err.to_string(), "reading ps_kv: internal SQLite call returned BUSY: database is locked");
        assert_eq!(code_name(ffi::SQLITE_CONSTRAINT_NOTNULL), "CONSTRAINT_NOTNULL");
        let not_null = rusqlite::Error::SqliteFailure(
            ffi::Error { code: ffi::ErrorCode::ConstraintViolation, extended_code: ffi::SQLITE_CONSTRAINT_NOTNULL },
            Some("NOT NULL constraint failed: users.name".into()),
        );
        let err = OpliteError::sqlite_statement("INSERT INTO users (id, name) VALUES (?, ?)", "replacing into users", not_null);
        assert_eq!(
            err.reported_by("powersync_control"),
            "powersync_control: statement INSERT INTO users (id, name) VALUES (?, ?): internal SQLite call returned \
             CONSTRAINT_NOTNULL: NOT NULL constraint failed: users.name (context: replacing into users)"
        );
        assert_eq!(code_name(12345), "code 12345");
    }
}
