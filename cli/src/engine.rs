//! The database side of the host: opening a file with oplite registered,
//! calling `powersync_control` in transactions, and reading the few
//! internal tables the host needs (the upload queue, counters for the
//! summary).
//!
//! Every `powersync_control` call runs in a `BEGIN IMMEDIATE`
//! transaction: the engine requires a transaction, and taking the write
//! lock up front means a concurrent writer (the app inserting into its
//! tables) makes the call wait on the busy timeout instead of failing
//! half-way with SQLITE_BUSY on a lock upgrade.
//!
//! Data lines that arrive back to back share one transaction
//! ([`Database::control_line`], [`Database::commit_lines`]): each runs in a
//! savepoint of its own, so a refused line is undone alone, and the sync
//! loop commits as soon as no further line is waiting, after
//! [`LINES_PER_COMMIT`] lines, or when a line did more than report
//! progress. Each commit writes every page the lines touched once more
//! (the oplog's row index is touched all over); committing per burst
//! instead of per line saves that. Any other call commits the open lines
//! first. Lines lost to a crash before their commit are downloaded again:
//! the bucket positions the next `start` sends are committed with them.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension};
use serde_json::Value;

use crate::Error;

/// One instruction of the sync engine (see PROTOCOL.md section 5).
#[derive(Clone, Debug, PartialEq)]
pub enum Instruction {
    /// A log line.
    LogLine {
        /// DEBUG, INFO or WARNING.
        severity: String,
        /// The message.
        line: String,
    },
    /// The sync status changed.
    UpdateSyncStatus(Value),
    /// Open the stream with this request body.
    EstablishSyncStream {
        /// The body of `POST /sync/stream`.
        request: Value,
        /// In checkpoint-request mode: `{client_id, checkpoint_request_id}`
        /// to post to `/sync/checkpoint-request` before allocating ids.
        checkpoint_request: Option<Value>,
    },
    /// Get new credentials; when `did_expire`, a CloseSyncStream follows.
    FetchCredentials {
        /// The current token is already invalid.
        did_expire: bool,
    },
    /// Close the stream; reconnect later.
    CloseSyncStream {
        /// Part of normal operation (a token refresh): reconnect at once.
        hide_disconnect: bool,
    },
    /// Flush the file system (nothing to do natively).
    FlushFileSystem,
    /// A checkpoint was applied.
    DidCompleteSync {
        /// The write checkpoint it carried.
        applied_checkpoint_request_id: Option<String>,
    },
    /// A complete checkpoint waits for local writes: ps_crud has entries,
    /// or the write checkpoint confirming an upload has not arrived yet.
    CheckpointDelayedDueToLocalData,
    /// An instruction this host does not know (logged, ignored).
    Unknown(String),
}

/// Parses the JSON array `powersync_control` returns.
pub fn parse_instructions(json: &str) -> Result<Vec<Instruction>, Error> {
    let items: Vec<Value> =
        serde_json::from_str(json).map_err(|e| Error::Engine(format!("instructions are not a JSON array: {e}: {json}")))?;
    Ok(items.into_iter().map(parse_instruction).collect())
}

fn parse_instruction(item: Value) -> Instruction {
    let Value::Object(map) = item else { return Instruction::Unknown(item.to_string()) };
    let Some((name, payload)) = map.into_iter().next() else { return Instruction::Unknown("{}".into()) };
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    match name.as_str() {
        "LogLine" => Instruction::LogLine { severity: text(&payload, "severity"), line: text(&payload, "line") },
        "UpdateSyncStatus" => Instruction::UpdateSyncStatus(payload.get("status").cloned().unwrap_or(Value::Null)),
        "EstablishSyncStream" => {
            Instruction::EstablishSyncStream {
                request: payload.get("request").cloned().unwrap_or(Value::Null),
                checkpoint_request: payload.get("checkpoint_request").filter(|v| !v.is_null()).cloned(),
            }
        }
        "FetchCredentials" => Instruction::FetchCredentials {
            did_expire: payload.get("did_expire").and_then(Value::as_bool).unwrap_or(true),
        },
        "CloseSyncStream" => Instruction::CloseSyncStream {
            hide_disconnect: payload.get("hide_disconnect").and_then(Value::as_bool).unwrap_or(false),
        },
        "FlushFileSystem" => Instruction::FlushFileSystem,
        "CheckpointDelayedDueToLocalData" => Instruction::CheckpointDelayedDueToLocalData,
        "DidCompleteSync" => Instruction::DidCompleteSync {
            applied_checkpoint_request_id: payload
                .get("applied_checkpoint_request_id")
                .and_then(Value::as_str)
                .map(str::to_owned),
        },
        other => Instruction::Unknown(other.to_owned()),
    }
}

/// The payload of a `powersync_control` call.
pub enum Payload<'a> {
    /// NULL.
    Null,
    /// Text (JSON lines, event names).
    Text(&'a str),
    /// A blob (BSON lines).
    Blob(&'a [u8]),
}

/// Runs `SELECT powersync_control(op, payload)`.
fn call_control(conn: &Connection, op: &str, payload: Payload<'_>) -> rusqlite::Result<Option<String>> {
    let mut stmt = conn.prepare_cached("SELECT powersync_control(?1, ?2)")?;
    match payload {
        Payload::Null => stmt.query_row(rusqlite::params![op, SqlValue::Null], |r| r.get(0)),
        Payload::Text(text) => stmt.query_row(rusqlite::params![op, text], |r| r.get(0)),
        Payload::Blob(bytes) => stmt.query_row(rusqlite::params![op, bytes], |r| r.get(0)),
    }
}

fn instructions_of(json: Option<String>) -> Result<Vec<Instruction>, Error> {
    match json {
        Some(json) => parse_instructions(&json),
        None => Ok(Vec::new()),
    }
}

/// What applying the schema did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaOutcome {
    /// `powersync_replace_schema` accepted it.
    Applied,
    /// This build of oplite has no `powersync_replace_schema`: synced rows
    /// stay in `ps_untyped`.
    Unsupported,
}

/// The most data lines one transaction holds.
pub const LINES_PER_COMMIT: usize = 32;

/// A database with oplite registered and initialised.
pub struct Database {
    conn: Connection,
    /// The file, for messages that name it.
    path: PathBuf,
    /// Data lines stored in the open transaction, not yet committed.
    open_lines: Cell<Option<usize>>,
}

impl Database {
    /// Opens (or creates) `path`, registers oplite, sets WAL mode and runs
    /// `powersync_init()`.
    /// A file that cannot be a database (a directory, a missing directory,
    /// not SQLite, read-only) is refused at once with
    /// [`Error::LocalDatabase`], naming the file and the cause.
    pub fn open(path: &Path) -> Result<Self, Error> {
        Self::open_with(path, |_| Ok(()))
    }

    /// [`Database::open`], with `first` run on the new connection before
    /// any other statement: where SQLite is a SQLCipher or
    /// SQLite3MultipleCiphers build, `first` gives the key (`PRAGMA key`),
    /// which must come before anything reads the file.
    pub fn open_with(path: &Path, first: impl FnOnce(&Connection) -> rusqlite::Result<()>) -> Result<Self, Error> {
        check_path(path)?;
        let context = |e: rusqlite::Error| database_error(path, "", e);
        let conn = Connection::open(path).map_err(context)?;
        first(&conn).map_err(context)?;
        oplite::register(&conn).map_err(|e| Error::Database(format!("registering oplite: {e}")))?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(context)?;
        // WAL lets the app read while lines are stored; NORMAL syncs at
        // checkpoints of the WAL, which is what the SDKs use too.
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())).map_err(context)?;
        conn.execute_batch("PRAGMA synchronous = NORMAL").map_err(context)?;
        if conn.is_readonly(rusqlite::MAIN_DB).map_err(context)? {
            return Err(Error::LocalDatabase(format!(
                "{} is read-only: the sync writes what it downloads into it",
                path.display()
            )));
        }
        let db = Database { conn, path: path.to_owned(), open_lines: Cell::new(None) };
        db.in_transaction(|conn| conn.query_row("SELECT powersync_init()", [], |_| Ok(())))
            .map_err(|e| database_error(path, "powersync_init: ", e))?;
        Ok(db)
    }

    /// The connection, for queries of the host's own.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    fn in_transaction<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> rusqlite::Result<T> {
        self.commit_open_lines()?;
        // `Connection::transaction` needs `&mut`; the behaviour is the same.
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        match f(&self.conn) {
            Ok(v) => {
                self.conn.execute_batch("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Installs the app schema with `powersync_replace_schema`.
    pub fn replace_schema(&self, schema: &str) -> Result<SchemaOutcome, Error> {
        match self.in_transaction(|conn| conn.query_row("SELECT powersync_replace_schema(?1)", [schema], |_| Ok(()))) {
            Ok(()) => Ok(SchemaOutcome::Applied),
            Err(e) if e.to_string().contains("no such function") => Ok(SchemaOutcome::Unsupported),
            Err(e) => Err(Error::Database(format!("powersync_replace_schema: {e}"))),
        }
    }

    /// Calls `powersync_control(op, payload)` in a transaction and parses
    /// the instructions.
    pub fn control(&self, op: &str, payload: Payload<'_>) -> Result<Vec<Instruction>, Error> {
        let json = self
            .in_transaction(|conn| call_control(conn, op, payload))
            .map_err(|e| self.engine_error(&format!("powersync_control('{op}'): "), e))?;
        instructions_of(json)
    }

    /// Calls `powersync_control(op, payload)` for a data line in the open
    /// transaction (opening one if none is), in a savepoint of its own: a
    /// refused line is undone alone and the lines before it stay. The line
    /// is durable once [`Database::commit_lines`] (or any other call)
    /// commits.
    pub fn control_line(&self, op: &str, payload: Payload<'_>) -> Result<Vec<Instruction>, Error> {
        let fail = |e: rusqlite::Error| self.engine_error(&format!("powersync_control('{op}'): "), e);
        let lines = match self.open_lines.get() {
            Some(lines) => lines,
            None => {
                self.conn.execute_batch("BEGIN IMMEDIATE").map_err(fail)?;
                self.open_lines.set(Some(0));
                0
            }
        };
        self.conn.execute_batch("SAVEPOINT oplite_line").map_err(fail)?;
        match call_control(&self.conn, op, payload) {
            Ok(json) => {
                self.conn.execute_batch("RELEASE oplite_line").map_err(fail)?;
                self.open_lines.set(Some(lines + 1));
                instructions_of(json)
            }
            Err(e) => {
                let undone = self.conn.execute_batch("ROLLBACK TO oplite_line; RELEASE oplite_line");
                if undone.is_err() {
                    // The savepoint is gone with the transaction (SQLite
                    // rolled it back): nothing of it is left to commit.
                    self.open_lines.set(None);
                    let _ = self.conn.execute_batch("ROLLBACK");
                }
                Err(fail(e))
            }
        }
    }

    /// An error of the engine's call: [`Error::LocalDatabase`] when it says
    /// the file itself is unusable (retrying cannot help), else
    /// [`Error::Engine`].
    fn engine_error(&self, context: &str, e: rusqlite::Error) -> Error {
        match database_error(&self.path, context, e) {
            Error::Database(message) => Error::Engine(message),
            other => other,
        }
    }

    /// Data lines stored in the open transaction.
    pub fn open_lines(&self) -> usize {
        self.open_lines.get().unwrap_or(0)
    }

    /// Commits the data lines stored since the last commit, if any.
    pub fn commit_lines(&self) -> Result<(), Error> {
        self.commit_open_lines().map_err(|e| self.engine_error("committing data lines: ", e))
    }

    fn commit_open_lines(&self) -> rusqlite::Result<()> {
        if self.open_lines.take().is_some() {
            if let Err(e) = self.conn.execute_batch("COMMIT") {
                let _ = self.conn.execute_batch("ROLLBACK");
                return Err(e);
            }
        }
        Ok(())
    }

    /// Sets the write checkpoint the client waits for, unless local writes
    /// arrived since the upload (then the target must stay at its maximum
    /// until they are uploaded too). Returns whether it was set.
    pub fn set_target_checkpoint(&self, write_checkpoint: i64) -> Result<bool, Error> {
        self.in_transaction(|conn| {
            let pending: bool = conn.query_row("SELECT EXISTS (SELECT 1 FROM ps_crud)", [], |r| r.get(0))?;
            if pending {
                return Ok(false);
            }
            conn.query_row(
                "SELECT powersync_control('target_checkpoint_request_id', ?1)",
                [write_checkpoint],
                |_| Ok(()),
            )?;
            Ok(true)
        })
        .map_err(|e| Error::Engine(format!("powersync_control('target_checkpoint_request_id'): {e}")))
    }

    /// `powersync_control(op, id)` in a transaction, for the checkpoint
    /// request operations, which answer a SQLite integer (or NULL).
    fn control_integer(&self, op: &str, payload: Option<i64>) -> Result<Option<i64>, Error> {
        self.in_transaction(|conn| conn.query_row("SELECT powersync_control(?1, ?2)", rusqlite::params![op, payload], |r| r.get(0)))
            .map_err(|e| Error::Engine(format!("powersync_control('{op}'): {e}")))
    }

    /// `powersync_control('seed_checkpoint_request_id', id)`: the
    /// request counter starts from the id the service accepted.
    pub fn seed_checkpoint_request_id(&self, id: i64) -> Result<(), Error> {
        self.control_integer("seed_checkpoint_request_id", Some(id)).map(|_| ())
    }

    /// `powersync_control('next_checkpoint_request_id', NULL)`: a new id
    /// (needs an active iteration and a seeded counter).
    pub fn next_checkpoint_request_id(&self) -> Result<i64, Error> {
        self.control_integer("next_checkpoint_request_id", None)?
            .ok_or_else(|| Error::Engine("next_checkpoint_request_id returned NULL".into()))
    }

    /// After a checkpoint request was accepted: in one transaction, reads
    /// the gate (`powersync_control('target_checkpoint_request_id', NULL)`)
    /// and, if it is still the local-write sentinel and `ps_crud` is empty,
    /// sets it to `id`. Returns whether it did.
    pub fn confirm_checkpoint_request(&self, id: i64) -> Result<bool, Error> {
        self.in_transaction(|conn| {
            let previous: Option<i64> =
                conn.query_row("SELECT powersync_control('target_checkpoint_request_id', NULL)", [], |r| r.get(0))?;
            let pending: bool = conn.query_row("SELECT EXISTS (SELECT 1 FROM ps_crud)", [], |r| r.get(0))?;
            if previous != Some(i64::MAX) || pending {
                return Ok(false);
            }
            conn.query_row("SELECT powersync_control('target_checkpoint_request_id', ?1)", [id], |_| Ok(()))?;
            Ok(true)
        })
        .map_err(|e| Error::Engine(format!("powersync_control('target_checkpoint_request_id'): {e}")))
    }

    /// The write checkpoint the client waits for (`i64::MAX` after a local
    /// write until the host sets one), if any.
    pub fn target_checkpoint(&self) -> Result<Option<i64>, Error> {
        self.conn
            .query_row("SELECT CAST(value AS INTEGER) FROM ps_kv WHERE key = 'target_checkpoint_request_id'", [], |r| r.get(0))
            .optional()
            .map_err(|e| Error::Database(format!("reading ps_kv: {e}")))
    }

    /// How sync_local applied the connection's last checkpoint, as
    /// `<strategy> (<reason>)` (oplite's `oplite_last_apply()` report);
    /// None before the first apply.
    pub fn last_apply(&self) -> Result<Option<String>, Error> {
        let report: Option<String> = self
            .conn
            .query_row("SELECT oplite_last_apply()", [], |r| r.get(0))
            .map_err(|e| Error::Database(format!("oplite_last_apply: {e}")))?;
        let Some(report) = report else { return Ok(None) };
        let report: serde_json::Value =
            serde_json::from_str(&report).map_err(|e| Error::Engine(format!("oplite_last_apply answered {report:?}: {e}")))?;
        Ok(Some(format!("{} ({})", report["strategy"].as_str().unwrap_or("?"), report["reason"].as_str().unwrap_or(""))))
    }

    /// This database's client id.
    pub fn client_id(&self) -> Result<String, Error> {
        self.conn
            .query_row("SELECT powersync_client_id()", [], |r| r.get(0))
            .map_err(|e| Error::Database(format!("powersync_client_id: {e}")))
    }

    /// Whether the upload queue has entries.
    pub fn has_pending_uploads(&self) -> Result<bool, Error> {
        self.conn
            .query_row("SELECT EXISTS (SELECT 1 FROM ps_crud)", [], |r| r.get(0))
            .map_err(|e| Error::Database(format!("reading ps_crud: {e}")))
    }

    /// Entries in the upload queue.
    pub fn pending_upload_count(&self) -> Result<u64, Error> {
        self.conn
            .query_row("SELECT count(*) FROM ps_crud", [], |r| r.get::<_, i64>(0))
            .map(|n| n.max(0) as u64)
            .map_err(|e| Error::Database(format!("reading ps_crud: {e}")))
    }

    /// The first `limit` entries of the upload queue: (id, data).
    pub fn crud_batch(&self, limit: usize) -> Result<Vec<(i64, String)>, Error> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id, data FROM ps_crud ORDER BY id LIMIT ?1")
            .map_err(|e| Error::Database(format!("reading ps_crud: {e}")))?;
        let rows = stmt
            .query_map([limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| Error::Database(format!("reading ps_crud: {e}")))?;
        rows.collect::<rusqlite::Result<_>>().map_err(|e| Error::Database(format!("reading ps_crud: {e}")))
    }

    /// Removes uploaded entries (ids up to `last_id`) from the queue.
    pub fn complete_crud(&self, last_id: i64) -> Result<(), Error> {
        self.in_transaction(|conn| conn.execute("DELETE FROM ps_crud WHERE id <= ?1", [last_id]).map(|_| ()))
            .map_err(|e| Error::Database(format!("deleting from ps_crud: {e}")))
    }

    /// Ops held or downloaded, summed over buckets (the summary reports
    /// the difference between two readings).
    pub fn ops_held(&self) -> Result<i64, Error> {
        self.conn
            .query_row("SELECT CAST(total(count_at_last + count_since_last) AS INTEGER) FROM ps_buckets", [], |r| r.get(0))
            .map_err(|e| Error::Database(format!("reading ps_buckets: {e}")))
    }

    /// Buckets stored.
    pub fn bucket_count(&self) -> Result<i64, Error> {
        self.conn
            .query_row("SELECT count(*) FROM ps_buckets", [], |r| r.get(0))
            .map_err(|e| Error::Database(format!("reading ps_buckets: {e}")))
    }

    /// Synced rows visible to the app, per table: the schema's views (or
    /// their data tables, `ps_data__*` / `ps_data_local__*`, where there is
    /// no view of the same name) and, per type, the rows without a table
    /// (`ps_untyped`).
    pub fn row_counts(&self) -> Result<Vec<(String, i64)>, Error> {
        let err = |e: rusqlite::Error| Error::Database(format!("counting rows: {e}"));
        let names: Vec<String> = {
            let mut stmt = self
                .conn
                .prepare(
                    "SELECT name FROM sqlite_master
                      WHERE type = 'view' AND name NOT GLOB 'ps_*' AND name NOT GLOB 'sqlite_*'
                     UNION
                     SELECT 'ps_data__' || substr(name, 10) FROM sqlite_master
                      WHERE type = 'table' AND name GLOB 'ps_data__*'
                        AND substr(name, 10) NOT IN (SELECT name FROM sqlite_master WHERE type = 'view')
                     UNION
                     SELECT name FROM sqlite_master
                      WHERE type = 'table' AND name GLOB 'ps_data_local__*'
                        AND substr(name, 16) NOT IN (SELECT name FROM sqlite_master WHERE type = 'view')
                     ORDER BY 1",
                )
                .map_err(err)?;
            let names = stmt.query_map([], |r| r.get(0)).map_err(err)?;
            names.collect::<rusqlite::Result<_>>().map_err(err)?
        };
        let mut counts = Vec::new();
        for name in names {
            let n: i64 = self
                .conn
                .query_row(&format!("SELECT count(*) FROM \"{}\"", name.replace('"', "\"\"")), [], |r| r.get(0))
                .map_err(err)?;
            let label = name.trim_start_matches("ps_data_local__").trim_start_matches("ps_data__").to_owned();
            counts.push((label, n));
        }
        let mut stmt = self.conn.prepare("SELECT type, count(*) FROM ps_untyped GROUP BY type ORDER BY type").map_err(err)?;
        let untyped = stmt.query_map([], |r| Ok((format!("{} (untyped)", r.get::<_, String>(0)?), r.get(1)?))).map_err(err)?;
        for row in untyped {
            counts.push(row.map_err(err)?);
        }
        Ok(counts)
    }
}

impl Drop for Database {
    /// Lines stored but not committed are kept, as a commit would.
    fn drop(&mut self) {
        let _ = self.commit_open_lines();
    }
}

/// Refuses paths that cannot hold a database before SQLite tries them:
/// SQLite's own message for these is "unable to open database file".
pub(crate) fn check_path(path: &Path) -> Result<(), Error> {
    if path.is_dir() {
        return Err(Error::LocalDatabase(format!("{} is a directory, not a database file", path.display())));
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(Error::LocalDatabase(format!(
            "{}: the directory {} does not exist",
            path.display(),
            parent.display()
        )));
    }
    Ok(())
}

/// Whether an SQLite error says the file is unusable: corrupt, not a
/// database, read-only, unopenable, full, or failing I/O.
fn unusable_file(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::*;
    matches!(
        e.sqlite_error_code(),
        Some(DatabaseCorrupt | NotADatabase | ReadOnly | CannotOpen | DiskFull | SystemIoFailure)
    )
}

/// An error about the file at `path`: [`Error::LocalDatabase`] when the
/// file is unusable, else [`Error::Database`].
pub(crate) fn database_error(path: &Path, context: &str, e: rusqlite::Error) -> Error {
    let message = format!("{}: {context}{e}", path.display());
    if unusable_file(&e) {
        Error::LocalDatabase(message)
    } else {
        Error::Database(message)
    }
}

/// A fresh database `t.db` in a directory of its own, for tests; the
/// caller removes the directory.
#[cfg(test)]
pub(crate) fn scratch_database(tag: &str) -> (std::path::PathBuf, Database) {
    let dir = std::env::temp_dir().join(format!("oplite-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.db");
    let _ = std::fs::remove_file(&path);
    let db = Database::open(&path).unwrap();
    (dir, db)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_instruction_shape() {
        let json = r#"[{"LogLine":{"severity":"DEBUG","line":"x"}},
            {"UpdateSyncStatus":{"status":{"connected":true}}},
            {"EstablishSyncStream":{"request":{"buckets":[]}}},
            {"EstablishSyncStream":{"request":{},"checkpoint_request":{"client_id":"c","checkpoint_request_id":"1"}}},
            {"FetchCredentials":{"did_expire":false}},
            {"CloseSyncStream":{"hide_disconnect":true}},
            {"FlushFileSystem":{}},
            {"DidCompleteSync":{}},
            {"DidCompleteSync":{"applied_checkpoint_request_id":"7"}},
            {"HandleDiagnostics":{}}]"#;
        let parsed = parse_instructions(json).unwrap();
        assert_eq!(
            parsed,
            vec![
                Instruction::LogLine { severity: "DEBUG".into(), line: "x".into() },
                Instruction::UpdateSyncStatus(serde_json::json!({"connected": true})),
                Instruction::EstablishSyncStream { request: serde_json::json!({"buckets": []}), checkpoint_request: None },
                Instruction::EstablishSyncStream {
                    request: serde_json::json!({}),
                    checkpoint_request: Some(serde_json::json!({"client_id": "c", "checkpoint_request_id": "1"})),
                },
                Instruction::FetchCredentials { did_expire: false },
                Instruction::CloseSyncStream { hide_disconnect: true },
                Instruction::FlushFileSystem,
                Instruction::DidCompleteSync { applied_checkpoint_request_id: None },
                Instruction::DidCompleteSync { applied_checkpoint_request_id: Some("7".into()) },
                Instruction::Unknown("HandleDiagnostics".into()),
            ]
        );
        assert!(parse_instructions("nope").is_err());
    }

    #[test]
    fn data_lines_share_a_transaction_and_a_refused_one_is_undone_alone() {
        let (dir, db) = scratch_database("lines");
        let path = dir.join("t.db");
        let reader = Connection::open(&path).unwrap();
        let ops = || -> i64 { reader.query_row("SELECT count(*) FROM ps_oplog", [], |r| r.get(0)).unwrap() };
        db.control("start", Payload::Null).unwrap();
        let checkpoint = r#"{"checkpoint": {"last_op_id": "3", "buckets": [{"bucket": "b", "checksum": 0, "count": 3}]}}"#;
        let line = |op: u32| {
            format!(
                r#"{{"data": {{"bucket": "b", "data": [{{"op_id": "{op}", "op": "PUT", "object_type": "t", "object_id": "{op}", "data": "{{}}", "checksum": 0}}]}}}}"#
            )
        };
        db.control_line("line_text", Payload::Text(checkpoint)).unwrap();
        db.control_line("line_text", Payload::Text(&line(1))).unwrap();
        assert_eq!(db.open_lines(), 2);
        assert!(!db.conn().is_autocommit());
        assert_eq!(ops(), 0, "not visible before the commit");
        db.commit_lines().unwrap();
        assert!(db.conn().is_autocommit());
        assert_eq!(ops(), 1);

        db.control_line("line_text", Payload::Text(&line(2))).unwrap();
        let refused = db.control_line("line_text", Payload::Text("{\"data\": 7}"));
        assert!(matches!(refused, Err(Error::Engine(_))), "{refused:?}");
        assert_eq!(db.open_lines(), 1, "the refused line is not counted");
        // Any other call commits the lines before it.
        db.control("stop", Payload::Null).unwrap();
        assert_eq!(db.open_lines(), 0);
        assert_eq!(ops(), 2, "the line before the refused one is kept");

        // Lines still open when the database is closed are committed.
        db.control("start", Payload::Null).unwrap();
        db.control_line("line_text", Payload::Text(checkpoint)).unwrap();
        db.control_line("line_text", Payload::Text(&line(3))).unwrap();
        drop(db);
        assert_eq!(ops(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn control_runs_in_a_transaction_and_the_schema_applies() {
        let (dir, db) = scratch_database("engine");
        let start = db.control("start", Payload::Null).unwrap();
        assert!(start.iter().any(|i| matches!(i, Instruction::EstablishSyncStream { .. })));
        let stop = db.control("stop", Payload::Null).unwrap();
        assert!(stop.contains(&Instruction::CloseSyncStream { hide_disconnect: false }));
        assert!(db.conn().is_autocommit());
        // The host links oplite, which has powersync_replace_schema.
        assert!(matches!(db.replace_schema(r#"{"tables":[]}"#).unwrap(), SchemaOutcome::Applied));
        assert!(!db.has_pending_uploads().unwrap());
        assert_eq!(db.target_checkpoint().unwrap(), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
