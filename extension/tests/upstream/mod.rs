//! Support for the port of the reference core's own SQL-level test suite
//! (powersync-sqlite-core v0.5.3's `dart/test/`, with the changes core 0.5.4
//! made and the tests of core PR #218): every ported test is a function of a
//! [`Core`], run once against the reference core (0.5.4) and once against
//! oplite, so a test that passes on the reference proves the port is
//! faithful and its oplite twin shows where oplite still differs. A test
//! whose expectation 0.5.4 changed also runs against the 0.5.3 reference
//! (which the JS SDKs still bundle) with the v0.5.3 expectation.
//!
//! The Dart suite runs on a fake clock fixed at 2025-03-01 10:00 UTC; both
//! cores read the time through SQLite (`unixepoch('subsec')`), so the
//! connections here use a VFS whose clock is that fake time, per thread.
#![allow(dead_code)]

pub mod clock;
pub mod dump;
pub mod sync;


use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OpenFlags, ToSql};
use serde_json::{json, Map, Value};

use crate::common;

/// Which extension a test runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Core {
    /// The reference core 0.5.4 (`common::reference_so`).
    Reference,
    /// The reference core 0.5.3 (`common::reference_053_so`), for the
    /// tests whose v0.5.3 expectation 0.5.4 changed.
    Reference053,
    Oplite,
}

impl Core {
    /// Whether this core follows 0.5.3 where 0.5.4 changed behaviour.
    pub fn is_053(self) -> bool {
        self == Core::Reference053
    }

    /// A fresh in-memory database with this core, on the fake clock
    /// (which this sets back to its start).
    pub fn open(self) -> Connection {
        clock::reset();
        self.open_path(":memory:", OpenFlags::default())
    }

    /// A database file at `path` with this core, on the fake clock.
    pub fn open_path(self, path: impl AsRef<std::path::Path>, flags: OpenFlags) -> Connection {
        let db = Connection::open_with_flags_and_vfs(path, flags, clock::vfs_name()).unwrap();
        // As in the Dart package: no busy handler (rusqlite waits 5 s).
        db.busy_timeout(std::time::Duration::ZERO).unwrap();
        self.install(&db);
        db
    }

    /// Makes this core's functions available on `db`.
    pub fn install(self, db: &Connection) {
        match self {
            Core::Reference => common::load(db, &common::reference_so(), "sqlite3_powersync_init").unwrap(),
            Core::Reference053 => common::load(db, &common::reference_053_so(), "sqlite3_powersync_init").unwrap(),
            Core::Oplite => oplite::register(db).unwrap(),
        }
    }
}

/// Generates, for each listed test function `fn name(core: Core)`, a
/// module `name` with the tests `reference` and `oplite`; attributes given
/// after `oplite:` (e.g. `#[ignore = "oplite: ..."]`) go on the oplite one.
/// `name + reference_053` also generates `reference_053`, the test against
/// the 0.5.3 reference (for tests whose expectation 0.5.4 changed).
#[macro_export]
macro_rules! per_core {
    ($($name:ident $(+ $v053:ident)? $(, oplite: #[$attr:meta])? ;)*) => {
        $(
            mod $name {
                #[test]
                fn reference() {
                    super::$name($crate::upstream::Core::Reference)
                }
                $(
                    #[test]
                    fn $v053() {
                        super::$name($crate::upstream::Core::Reference053)
                    }
                )?
                #[test]
                $(#[$attr])?
                fn oplite() {
                    super::$name($crate::upstream::Core::Oplite)
                }
            }
        )*
    };
}

/// Generates, for each listed sync test `fn name(core: Core, bson: bool)`,
/// a module `name` with `text_reference`, `text_oplite`, `bson_reference`
/// and `bson_oplite` (the Dart sync tests run with both line encodings);
/// attributes after `oplite:` go on both oplite tests. `name +
/// reference_053` also generates `reference_053`, one test running both
/// encodings against the 0.5.3 reference.
#[macro_export]
macro_rules! per_core_and_encoding {
    ($($name:ident $(+ $v053:ident)? $(, oplite: #[$attr:meta])? ;)*) => {
        $(
            mod $name {
                use $crate::upstream::Core;
                #[test]
                fn text_reference() {
                    super::$name(Core::Reference, false)
                }
                #[test]
                fn bson_reference() {
                    super::$name(Core::Reference, true)
                }
                $(
                    #[test]
                    fn $v053() {
                        super::$name(Core::Reference053, false);
                        super::$name(Core::Reference053, true);
                    }
                )?
                #[test]
                $(#[$attr])?
                fn text_oplite() {
                    super::$name(Core::Oplite, false)
                }
                #[test]
                $(#[$attr])?
                fn bson_oplite() {
                    super::$name(Core::Oplite, true)
                }
            }
        )*
    };
}

/// Runs `sql` with `params` in its own transaction, rolled back on failure
/// (the Dart utilities' `executeInTx`).
pub fn execute_in_tx(db: &Connection, sql: &str, params: &[&dyn ToSql]) -> rusqlite::Result<()> {
    db.execute_batch("BEGIN")?;
    match run(db, sql, params) {
        Ok(()) => db.execute_batch("COMMIT"),
        Err(e) => {
            db.execute_batch("ROLLBACK")?;
            Err(e)
        }
    }
}

/// Runs one statement, reading and discarding any rows it returns.
pub fn run(db: &Connection, sql: &str, params: &[&dyn ToSql]) -> rusqlite::Result<()> {
    let mut stmt = db.prepare(sql)?;
    let mut rows = stmt.query(params)?;
    while rows.next()?.is_some() {}
    Ok(())
}

/// `execute_in_tx` that must succeed.
pub fn tx(db: &Connection, sql: &str, params: &[&dyn ToSql]) {
    execute_in_tx(db, sql, params).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// `run` that must succeed.
pub fn exec(db: &Connection, sql: &str, params: &[&dyn ToSql]) {
    run(db, sql, params).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// A SQL value as JSON (blobs as arrays of bytes).
pub fn sql_to_json(value: SqlValue) -> Value {
    match value {
        SqlValue::Null => Value::Null,
        SqlValue::Integer(i) => Value::from(i),
        SqlValue::Real(r) => Value::from(r),
        SqlValue::Text(t) => Value::from(t),
        SqlValue::Blob(b) => Value::from(b),
    }
}

/// The rows of a query, each as a JSON object keyed by column name.
pub fn try_select(db: &Connection, sql: &str, params: &[&dyn ToSql]) -> rusqlite::Result<Vec<Value>> {
    let mut stmt = db.prepare(sql)?;
    let names: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
    let rows = stmt.query_map(params, |row| {
        let mut map = Map::new();
        for (i, name) in names.iter().enumerate() {
            map.insert(name.clone(), sql_to_json(row.get(i)?));
        }
        Ok(Value::Object(map))
    })?;
    rows.collect()
}

/// `try_select` that must succeed.
pub fn select(db: &Connection, sql: &str, params: &[&dyn ToSql]) -> Vec<Value> {
    try_select(db, sql, params).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// The single value of a query returning one row and one column.
pub fn scalar(db: &Connection, sql: &str, params: &[&dyn ToSql]) -> Value {
    db.query_row(sql, params, |row| row.get::<_, SqlValue>(0)).map(sql_to_json).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Asserts that `result` is a SQLite error with this extended code and
/// message (the Dart suite's `isSqliteException`).
pub fn assert_sqlite_error<T: std::fmt::Debug>(result: rusqlite::Result<T>, code: i32, message: &str) {
    match result {
        Err(rusqlite::Error::SqliteFailure(e, msg)) => {
            assert_eq!((e.extended_code, msg.as_deref()), (code, Some(message)));
        }
        other => panic!("expected SQLite error {code} ({message}), got {other:?}"),
    }
}

/// Asserts that `result` is a SQLite error with this extended code whose
/// message contains `part`.
pub fn assert_fails_containing<T: std::fmt::Debug>(result: rusqlite::Result<T>, code: i32, part: &str) {
    match result {
        Err(rusqlite::Error::SqliteFailure(e, message)) => {
            let message = message.unwrap_or_default();
            assert!(message.contains(part), "{message:?} does not contain {part:?}");
            assert_eq!(e.extended_code, code, "{message}");
        }
        other => panic!("expected a failure containing {part:?}, got {other:?}"),
    }
}

/// The extended code of a failed call (panics on success).
pub fn error_code<T: std::fmt::Debug>(result: rusqlite::Result<T>) -> i32 {
    match result {
        Err(e) => common::error_code(&e),
        Ok(v) => panic!("expected an error, got {v:?}"),
    }
}

/// The message of a failed call (panics on success).
pub fn error_message<T: std::fmt::Debug>(result: rusqlite::Result<T>) -> String {
    match result {
        Err(rusqlite::Error::SqliteFailure(_, Some(msg))) => msg,
        Err(e) => e.to_string(),
        Ok(v) => panic!("expected an error, got {v:?}"),
    }
}

/// The test schema most Dart tests use: one table `items` with a text
/// column `col`.
pub fn test_schema() -> Value {
    json!({"tables": [{"name": "items", "columns": [{"name": "col", "type": "text"}]}]})
}

/// The three app schemas of the Dart `schema_test.dart` (the first is
/// also the performance test's): the second renames `weight`, the
/// third makes the index's second column descending.
pub fn app_schema(weight_column: &str, model_ascending: bool) -> Value {
    let table = |name: &str, view: Value, local: bool, insert: bool, columns: Value, indexes: Value| {
        json!({"name": name, "view_name": view, "local_only": local, "insert_only": insert,
               "columns": columns, "indexes": indexes})
    };
    let text = |name: &str| json!({"name": name, "type": "TEXT"});
    json!({"tables": [
        table("assets", Value::Null, false, false, json!([
            text("created_at"), text("make"), text("model"), text("serial_number"),
            {"name": "quantity", "type": "INTEGER"}, text("user_id"),
            {"name": weight_column, "type": "REAL"}, text("description"),
        ]), json!([{"name": "makemodel", "columns": [
            {"name": "make", "ascending": true, "type": "TEXT"},
            {"name": "model", "ascending": model_ascending, "type": "TEXT"},
        ]}])),
        table("customers", Value::Null, false, false, json!([text("name"), text("email")]), json!([])),
        table("logs", Value::Null, false, true, json!([text("level"), text("content")]), json!([])),
        table("credentials", Value::Null, true, false, json!([text("key"), text("value")]), json!([])),
        table("aliased", json!("test1"), false, false, json!([text("name")]), json!([])),
    ]})
}

/// `powersync_replace_schema(schema)` in a transaction.
pub fn replace_schema(db: &Connection, schema: &Value) {
    tx(db, "SELECT powersync_replace_schema(?)", &[&schema.to_string()]);
}

/// `powersync_init()` in a transaction.
pub fn init(db: &Connection) {
    tx(db, "SELECT powersync_init()", &[]);
}

/// Statements of `db` still running (stepped but not reset): the Dart
/// suite checks none is left behind by `powersync_control`.
pub fn busy_statements(db: &Connection) -> Vec<String> {
    use rusqlite::ffi;
    let mut out = Vec::new();
    unsafe {
        let handle = db.handle();
        let mut stmt = ffi::sqlite3_next_stmt(handle, std::ptr::null_mut());
        while !stmt.is_null() {
            if ffi::sqlite3_stmt_busy(stmt) != 0 {
                let sql = ffi::sqlite3_sql(stmt);
                out.push(if sql.is_null() {
                    String::new()
                } else {
                    std::ffi::CStr::from_ptr(sql).to_string_lossy().into_owned()
                });
            }
            stmt = ffi::sqlite3_next_stmt(handle, stmt);
        }
    }
    out
}
