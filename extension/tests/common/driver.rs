//! A deterministic host: drives a seeded sync session (downloads, local
//! writes, uploads acknowledged through a write checkpoint, checkpoints)
//! against one database, one host transaction per step, and keeps a model
//! of what the database must hold after every step.
//!
//! The same seed gives the same steps whatever database it runs on, so a
//! crash test can run a session in a child process, kill it, and replay it
//! in the parent to learn what the database held after each step.
//!
//! Local writes come in two kinds. Without a schema they are simulated in
//! SQL: a write adds a `ps_crud` entry, sets the target write checkpoint to
//! i64::MAX, marks the row in `ps_updated_rows` and writes it to
//! `ps_untyped`. With [`NOTES_SCHEMA`] installed they go through the
//! `notes` view, whose triggers queue the entries (the upload queue buffers
//! them and writes them at commit): one to three inserts, updates or
//! deletes per transaction. An upload deletes the entries and sets the
//! target to a new write checkpoint that the server model then reports.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};

pub use oplite_test_data::session::{self, corrupt_checksum, requested_buckets};
use oplite_test_data::ServerModel;
use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;
use serde_json::Value;

use super::diff::rows;

/// How lines are encoded in a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// `line_text`.
    Json,
    /// `line_binary`.
    Bson,
}

/// Synced rows: (type, id) -> data.
pub type Rows = BTreeMap<(String, String), String>;

/// A schema with one synced table the server never sends rows of: local
/// writes go through its view.
pub const NOTES_SCHEMA: &str = r#"{"tables":[{"name":"notes","columns":[{"name":"body","type":"text"}]}]}"#;

/// A note's row as [`stored_rows`] reads it.
pub fn note_data(body: &str) -> String {
    serde_json::json!({ "body": body }).to_string()
}

/// The rows a client holds after applying the server's current state: per
/// row, the newest PUT across all buckets (none, or one without data: no
/// row).
pub fn server_rows(server: &ServerModel) -> Rows {
    let mut newest: HashMap<(String, String), (i64, Option<String>)> = HashMap::new();
    for bucket in &server.buckets {
        let mut current: HashMap<String, (i64, (String, String), Option<String>)> = HashMap::new();
        for op in &bucket.ops {
            let key = || {
                format!(
                    "{}/{}/{}",
                    op.object_type.as_deref().unwrap_or(""),
                    op.object_id.as_deref().unwrap_or(""),
                    op.subkey.as_deref().unwrap_or("null")
                )
            };
            match op.op {
                "PUT" => {
                    let row = (op.object_type.clone().unwrap(), op.object_id.clone().unwrap());
                    current.insert(key(), (op.op_id, row, op.data.clone()));
                }
                "REMOVE" => {
                    current.remove(&key());
                }
                "CLEAR" => current.clear(),
                _ => {}
            }
        }
        for (op_id, row, data) in current.into_values() {
            let entry = newest.entry(row).or_insert((0, None));
            if op_id > entry.0 {
                *entry = (op_id, data);
            }
        }
    }
    newest.into_iter().filter_map(|(row, (_, data))| data.map(|d| (row, d))).collect()
}

/// What the database must hold.
#[derive(Clone, Debug, Default)]
pub struct Model {
    /// Host transactions committed so far.
    pub steps: u64,
    /// `ps_untyped`: the last applied checkpoint plus local writes since.
    pub rows: Rows,
    /// `ps_crud`: id -> data.
    pub crud: BTreeMap<i64, String>,
    /// The rows of the checkpoint being downloaded.
    sent: Option<Rows>,
    /// Whether every bucket of that checkpoint has priority 0: such a
    /// checkpoint applies even while uploads are queued (core 0.5.4).
    sent_urgent: bool,
    /// The rows of the last validated checkpoint (applied when the host is
    /// told `DidCompleteSync`).
    validated: Option<Rows>,
}

/// Reported after a step commits (and once before an upload commits).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// Step `step` committed; it queued the upload entries `writes` (one
    /// transaction), or deleted the acknowledged entries up to `acked`.
    Committed { step: u64, writes: Vec<i64>, acked: Option<i64> },
    /// The next step will delete the entries up to this id.
    UploadIntent(i64),
}

/// The host.
pub struct Driver {
    /// The database, with oplite registered and initialised.
    pub db: Connection,
    /// The service.
    pub server: ServerModel,
    /// How lines are sent.
    pub encoding: Encoding,
    /// What the database must hold.
    pub model: Model,
    /// Check the database against the model after every step.
    pub check_each_step: bool,
    /// Called after every committed step (and before uploads).
    pub on_event: Box<dyn FnMut(&Connection, &Model, &Event)>,
    /// The next write checkpoint an upload gets.
    pub next_write_checkpoint: i64,
    /// Apply checkpoints in steps of this many rows, as the web adapter's
    /// Worker does: `oplite_apply_prepare` before each call and, when it
    /// says the call applies, `oplite_apply_step` until done, in the call's
    /// transaction.
    pub apply_steps: Option<u64>,
    /// How many `oplite_apply_step` calls ran.
    pub steps_taken: u64,
    local_writes: u64,
    iteration_active: bool,
}

/// True when the instructions close the stream.
pub fn closes(instructions: &Value) -> bool {
    session::closes(Some(instructions))
}

fn completes(instructions: &Value) -> bool {
    instructions.as_array().is_some_and(|items| items.iter().any(|i| i.get("DidCompleteSync").is_some()))
}

/// The internal tables that define a sync state, as text rows (client id
/// and the sync-iteration owner, which are random, left out; sync times
/// reduced to their priorities).
pub fn snapshot(db: &Connection) -> Vec<Vec<String>> {
    [
        "SELECT * FROM ps_buckets ORDER BY id",
        "SELECT * FROM ps_oplog ORDER BY bucket, op_id, key",
        "SELECT * FROM ps_updated_rows ORDER BY 1, 2",
        "SELECT * FROM ps_untyped ORDER BY 1, 2",
        "SELECT * FROM ps_crud ORDER BY id",
        "SELECT * FROM ps_tx ORDER BY id",
        "SELECT key, CAST(value AS TEXT) FROM ps_kv WHERE key != 'client_id' ORDER BY 1",
        "SELECT priority FROM ps_sync_state ORDER BY 1",
        "SELECT name, seq FROM sqlite_sequence ORDER BY 1",
    ]
    .iter()
    .map(|sql| rows(db, sql))
    .chain(has_notes(db).then(|| rows(db, "SELECT * FROM ps_data__notes ORDER BY id")))
    .collect()
}

/// True when the `notes` view of [`NOTES_SCHEMA`] exists.
pub fn has_notes(db: &Connection) -> bool {
    db.query_row("SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'view' AND name = 'notes')", [], |r| r.get(0))
        .unwrap()
}

/// `ps_untyped`, and the `notes` view when there is one, as [`Rows`].
pub fn stored_rows(db: &Connection) -> Rows {
    let sql = if has_notes(db) {
        "SELECT type, id, data FROM ps_untyped UNION ALL SELECT 'notes', id, json_object('body', body) FROM notes"
    } else {
        "SELECT type, id, data FROM ps_untyped"
    };
    let mut stmt = db.prepare(sql).unwrap();
    stmt.query_map([], |r| Ok(((r.get(0)?, r.get(1)?), r.get(2)?))).unwrap().map(|r| r.unwrap()).collect()
}

/// What the partial apply of priority-0 buckets under queued uploads writes,
/// from the oplog it starts from: every row with an op downloaded since the
/// last apply takes the data of its newest op in any bucket (none: the row
/// goes). Rows only removed or written locally stay as they are.
fn urgent_apply(db: &Connection) -> Vec<((String, String), Option<String>)> {
    let mut stmt = db
        .prepare(
            "SELECT o.row_type, o.row_id, o.op_id, o.data, o.op_id > b.last_applied_op
             FROM ps_oplog o JOIN ps_buckets b ON b.id = o.bucket WHERE o.row_type IS NOT NULL",
        )
        .unwrap();
    let mut newest: BTreeMap<(String, String), (i64, Option<String>)> = BTreeMap::new();
    let mut touched = std::collections::BTreeSet::new();
    let ops = stmt.query_map([], |r| Ok(((r.get(0)?, r.get(1)?), r.get::<_, i64>(2)?, r.get(3)?, r.get::<_, bool>(4)?)));
    for (row, op_id, data, new) in ops.unwrap().map(Result::unwrap) {
        if new {
            touched.insert(row.clone());
        }
        if newest.get(&row).is_none_or(|(id, _)| *id < op_id) {
            newest.insert(row, (op_id, data));
        }
    }
    newest.into_iter().filter(|(row, _)| touched.contains(row)).map(|(row, (_, data))| (row, data)).collect()
}

/// `ps_crud` as id -> data.
pub fn stored_crud(db: &Connection) -> BTreeMap<i64, String> {
    let mut stmt = db.prepare("SELECT id, data FROM ps_crud").unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(|r| r.unwrap()).collect()
}

/// Buckets as stored: name -> last_op.
pub fn stored_last_ops(db: &Connection) -> BTreeMap<String, i64> {
    let mut stmt = db.prepare("SELECT name, last_op FROM ps_buckets WHERE pending_delete = 0").unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(|r| r.unwrap()).collect()
}

impl Driver {
    /// A host for `server` on `db` (oplite registered and initialised).
    pub fn new(db: Connection, server: ServerModel, encoding: Encoding) -> Driver {
        Driver {
            db,
            server,
            encoding,
            model: Model::default(),
            check_each_step: false,
            on_event: Box::new(|_, _, _| {}),
            next_write_checkpoint: 1,
            apply_steps: None,
            steps_taken: 0,
            local_writes: 0,
            iteration_active: false,
        }
    }

    /// Runs `f` in one host transaction; rolls back and returns the error
    /// if it or the COMMIT fails.
    pub fn tx<T>(&mut self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> rusqlite::Result<T> {
        self.db.execute_batch("BEGIN")?;
        let result = f(&self.db).and_then(|v| self.db.execute_batch("COMMIT").map(|_| v));
        if result.is_err() && !self.db.is_autocommit() {
            let _ = self.db.execute_batch("ROLLBACK");
        }
        result
    }

    fn committed(&mut self, writes: Vec<i64>, acked: Option<i64>) {
        self.model.steps += 1;
        let event = Event::Committed { step: self.model.steps, writes, acked };
        (self.on_event)(&self.db, &self.model, &event);
        if self.check_each_step {
            self.check();
        }
    }

    /// Asserts the database holds what the model says.
    pub fn check(&self) {
        let rows = stored_rows(&self.db);
        if rows != self.model.rows {
            let missing: Vec<_> = self.model.rows.iter().filter(|(k, v)| rows.get(*k) != Some(v)).collect();
            let extra: Vec<_> = rows.iter().filter(|(k, v)| self.model.rows.get(*k) != Some(v)).collect();
            panic!("step {}: ps_untyped differs from the model\n missing or different: {missing:?}\n unexpected: {extra:?}", self.model.steps);
        }
        assert_eq!(stored_crud(&self.db), self.model.crud, "step {}: ps_crud differs from the model", self.model.steps);
    }

    /// One `powersync_control` call in its own transaction; panics on error.
    pub fn control(&mut self, op: &str, payload: SqlValue) -> Value {
        self.try_control(op, payload, false).unwrap_or_else(|e| panic!("powersync_control({op}) failed: {e}"))
    }

    /// `powersync_control(op, payload)` in its own transaction, without
    /// touching the model.
    pub fn raw_control(&mut self, op: &str, payload: &SqlValue) -> rusqlite::Result<Value> {
        let steps = self.apply_steps;
        let mut taken = 0;
        let out: Option<String> = self.tx(|db| {
            if let Some(budget) = steps {
                if db.query_row("SELECT oplite_apply_prepare(?1, ?2)", (op, payload), |r| r.get::<_, bool>(0))? {
                    taken += 1;
                    while db.query_row("SELECT oplite_apply_step(?1)", [budget as i64], |r| r.get::<_, bool>(0))? {
                        taken += 1;
                    }
                }
            }
            db.query_row("SELECT powersync_control(?1, ?2)", (op, payload), |r| r.get(0))
        })?;
        self.steps_taken += taken;
        Ok(match out {
            Some(text) if text.starts_with('[') => serde_json::from_str(&text).unwrap(),
            _ => Value::Null,
        })
    }

    /// One `powersync_control` call in its own transaction; the model
    /// follows what the answer says. `completion` is true for a
    /// `checkpoint_complete` line.
    pub fn try_control(&mut self, op: &str, payload: SqlValue, completion: bool) -> rusqlite::Result<Value> {
        let urgent = (completion && self.model.sent_urgent).then(|| urgent_apply(&self.db));
        let instructions = self.raw_control(op, &payload)?;
        if completion && !closes(&instructions) {
            self.model.validated = self.model.sent.clone();
        }
        if completes(&instructions) {
            self.model.rows = self.model.validated.clone().expect("applied without a validated checkpoint");
        } else if let Some(changes) = urgent.filter(|_| !closes(&instructions)) {
            // Held back by queued uploads, a checkpoint of priority-0
            // buckets only still applies what it downloaded.
            for (row, data) in changes {
                match data {
                    Some(data) => self.model.rows.insert(row, data),
                    None => self.model.rows.remove(&row),
                };
            }
        }
        match op {
            "start" => self.iteration_active = true,
            "stop" => self.iteration_active = false,
            _ if closes(&instructions) => self.iteration_active = false,
            _ => {}
        }
        self.committed(Vec::new(), None);
        Ok(instructions)
    }

    /// The model learns what the checkpoint line about to be sent holds.
    fn record_sent(&mut self) {
        self.model.sent = Some(server_rows(&self.server));
        self.model.sent_urgent = self.server.buckets.iter().all(|b| b.priority == 0);
    }

    /// The payload of a line in this session's encoding.
    pub fn encode(&self, line: &Value) -> (&'static str, SqlValue) {
        match self.encoding {
            Encoding::Json => ("line_text", SqlValue::Text(line.to_string())),
            Encoding::Bson => ("line_binary", SqlValue::Blob(bson::serialize_to_vec(line).unwrap())),
        }
    }

    /// Sends a sync line.
    pub fn send(&mut self, line: &Value) -> Value {
        let (op, payload) = self.encode(line);
        let completion = line.get("checkpoint_complete").is_some();
        self.try_control(op, payload, completion).unwrap_or_else(|e| panic!("sending a line failed: {e}"))
    }

    /// A local write, queued for upload: to a random row of `items` in SQL,
    /// or through the `notes` view when the schema is installed.
    pub fn local_write(&mut self) {
        if has_notes(&self.db) {
            return self.local_write_through_view();
        }
        self.local_writes += 1;
        let n = self.local_writes;
        let id = format!("row{}", self.server.rng.below(12));
        let data = format!("{{\"local\":{n}}}");
        let entry = format!("{{\"op\":\"PUT\",\"id\":\"{id}\",\"type\":\"items\",\"data\":{data}}}");
        let crud_id = self
            .tx(|db| {
                db.execute("INSERT INTO ps_crud(data, tx_id) VALUES(?1, ?2)", (&entry, n as i64))?;
                let crud_id = db.last_insert_rowid();
                db.execute_batch(
                    "INSERT OR REPLACE INTO ps_kv(key, value) VALUES('target_checkpoint_request_id', 9223372036854775807);
                     DELETE FROM ps_kv WHERE key IN ('last_seen_checkpoint_request_id', 'last_applied_checkpoint_request_id');",
                )?;
                db.execute("INSERT OR IGNORE INTO ps_updated_rows(row_type, row_id) VALUES('items', ?1)", [&id])?;
                db.execute("INSERT OR REPLACE INTO ps_untyped(type, id, data) VALUES('items', ?1, ?2)", (&id, &data))?;
                Ok(crud_id)
            })
            .unwrap_or_else(|e| panic!("local write failed: {e}"));
        self.model.crud.insert(crud_id, entry);
        self.model.rows.insert(("items".into(), id), data);
        self.committed(vec![crud_id], None);
    }

    /// One to three inserts, updates or deletes through the `notes` view in
    /// one transaction; the triggers queue the upload entries.
    fn local_write_through_view(&mut self) {
        self.local_writes += 1;
        let n = self.local_writes;
        let mut writes: Vec<(String, Option<String>)> = Vec::new();
        for i in 0..1 + self.server.rng.below(3) {
            let id = format!("note{}", self.server.rng.below(6));
            let delete = self.server.rng.chance(20);
            writes.push((id, (!delete).then(|| format!("note {n}.{i}"))));
        }
        let known = self.model.crud.keys().last().copied().unwrap_or(0);
        let new_entries = self
            .tx(|db| {
                for (id, body) in &writes {
                    let exists: bool = db.query_row("SELECT EXISTS(SELECT 1 FROM notes WHERE id = ?1)", [id], |r| r.get(0))?;
                    match (body, exists) {
                        (Some(body), false) => db.execute("INSERT INTO notes(id, body) VALUES (?1, ?2)", (id, body))?,
                        (Some(body), true) => db.execute("UPDATE notes SET body = ?2 WHERE id = ?1", (id, body))?,
                        (None, _) => db.execute("DELETE FROM notes WHERE id = ?1", [id])?,
                    };
                }
                Ok(())
            })
            .and_then(|()| {
                // The queue writes its entries at commit: read them back.
                let mut stmt = self.db.prepare("SELECT id, data FROM ps_crud WHERE id > ?1 ORDER BY id")?;
                let rows = stmt.query_map([known], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
                rows.collect::<rusqlite::Result<Vec<_>>>()
            })
            .unwrap_or_else(|e| panic!("local write through the view failed: {e}"));
        for (id, body) in writes {
            let key = ("notes".to_owned(), id);
            match body {
                Some(body) => self.model.rows.insert(key, note_data(&body)),
                None => self.model.rows.remove(&key),
            };
        }
        let ids: Vec<i64> = new_entries.iter().map(|(id, _)| *id).collect();
        self.model.crud.extend(new_entries);
        self.committed(ids, None);
    }

    /// Uploads every queued entry: deletes them and sets the target write
    /// checkpoint to a new one, which the server then reports; tells the
    /// engine with `completed_upload` when an iteration is active.
    pub fn upload(&mut self) {
        let Some(&max) = self.model.crud.keys().last() else { return };
        (self.on_event)(&self.db, &self.model, &Event::UploadIntent(max));
        let wc = self.next_write_checkpoint;
        self.next_write_checkpoint += 1;
        self.tx(|db| {
            db.execute("DELETE FROM ps_crud WHERE id <= ?1", [max])?;
            db.query_row("SELECT powersync_control('target_checkpoint_request_id', ?1)", [wc.to_string()], |_| Ok(()))
        })
        .unwrap_or_else(|e| panic!("upload failed: {e}"));
        self.server.write_checkpoint = Some(wc);
        self.model.crud.retain(|id, _| *id > max);
        self.committed(Vec::new(), Some(max));
        if self.iteration_active {
            self.control("completed_upload", SqlValue::Null);
        }
    }

    /// `start`: returns the requested buckets (name -> after).
    pub fn start(&mut self) -> HashMap<String, i64> {
        let out = self.control("start", SqlValue::Null);
        requested_buckets(&out)
    }

    /// One connection to the service: start, one or two checkpoints with
    /// local writes between lines, maybe an upload, then stop (or a dropped
    /// connection, or a checksum failure that closes the stream).
    pub fn iteration(&mut self) {
        let mut after = self.start();
        let mut sent: Option<BTreeMap<String, Value>> = None;
        let rounds = 1 + self.server.rng.below(2);
        for round in 0..rounds {
            if round > 0 {
                self.server.mutate(6);
            }
            let mut line = match &sent {
                Some(previous) if self.server.rng.chance(50) => self.server.checkpoint_diff_line(previous),
                _ => self.server.checkpoint_line(),
            };
            if self.server.rng.chance(5) {
                corrupt_checksum(&mut line, self.server.rng.below(1000));
            }
            sent = Some(self.server.checkpoint_entries());
            self.record_sent();
            for bucket in self.server.buckets.iter().map(|b| b.name.clone()).collect::<Vec<_>>() {
                after.entry(bucket).or_insert(0);
            }
            after.retain(|name, _| self.server.buckets.iter().any(|b| &b.name == name));
            if closes(&self.send(&line)) {
                return;
            }
            for (_, data) in self.server.data_lines(&after) {
                if self.server.rng.chance(3) {
                    // The connection drops mid-download.
                    self.control("stop", SqlValue::Null);
                    return;
                }
                if self.server.rng.chance(8) {
                    self.local_write();
                }
                let bucket = data["data"]["bucket"].as_str().unwrap().to_owned();
                let last = data["data"]["next_after"].as_str().unwrap().parse().unwrap();
                self.send(&data);
                after.insert(bucket, last);
            }
            if self.server.rng.chance(10) {
                self.local_write();
            }
            let complete = serde_json::json!({"checkpoint_complete": {"last_op_id": self.server.last_op_id().to_string()}});
            if closes(&self.send(&complete)) {
                return;
            }
            if !self.model.crud.is_empty() && self.server.rng.chance(50) {
                self.upload();
            }
        }
        self.control("stop", SqlValue::Null);
    }

    /// A short seeded session: `iterations` connections with server changes
    /// before each.
    pub fn session(&mut self, iterations: usize) {
        for _ in 0..iterations {
            self.server.mutate(10);
            self.iteration();
        }
    }

    /// Brings the database to the server's current state: uploads what is
    /// queued, downloads what is missing and applies it. Asserts that the
    /// stream request resumes from every bucket's stored last_op, that only
    /// ops above it are downloaded, and that the result equals the server.
    /// Returns how many ops were downloaded.
    pub fn converge(&mut self) -> usize {
        let stored = stored_last_ops(&self.db);
        let after = self.start();
        let requested: BTreeMap<String, i64> = after.iter().map(|(k, v)| (k.clone(), *v)).collect();
        assert_eq!(requested, stored, "the stream request does not resume from the stored last_op");
        self.upload();
        let line = self.server.checkpoint_line();
        self.record_sent();
        let mut downloaded = 0;
        assert!(!closes(&self.send(&line)));
        for (_, data) in self.server.data_lines(&after) {
            let ops = data["data"]["data"].as_array().unwrap();
            downloaded += ops.len();
            let bucket = data["data"]["bucket"].as_str().unwrap();
            let from = after.get(bucket).copied().unwrap_or(0);
            assert!(ops.iter().all(|op| op["op_id"].as_str().unwrap().parse::<i64>().unwrap() > from));
            self.send(&data);
        }
        let complete = serde_json::json!({"checkpoint_complete": {"last_op_id": self.server.last_op_id().to_string()}});
        let out = self.send(&complete);
        assert!(completes(&out), "the converging checkpoint was not applied: {out}");
        self.control("stop", SqlValue::Null);
        assert_eq!(stored_rows(&self.db), server_rows(&self.server), "rows differ from the server after converging");
        assert!(stored_crud(&self.db).is_empty(), "uploads left after converging");
        let last_op = self.server.last_op_id();
        for (name, op) in stored_last_ops(&self.db) {
            assert_eq!(op, last_op, "bucket {name} is not at the server's last op");
        }
        downloaded
    }
}

/// Opens `path` (WAL, synchronous=NORMAL as the SDKs do) with oplite
/// registered, through `vfs` when given.
pub fn open_file(path: &std::path::Path, vfs: Option<&str>) -> Connection {
    let db = match vfs {
        Some(vfs) => Connection::open_with_flags_and_vfs(path, rusqlite::OpenFlags::default(), vfs).unwrap(),
        None => Connection::open(path).unwrap(),
    };
    db.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;").unwrap();
    db.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
    oplite::register(&db).unwrap();
    db
}

/// Creates an initialised database at `path` with a fixed client id.
pub fn create_file(path: &std::path::Path) {
    create_file_with(path, None);
}

/// Creates an initialised database at `path` with a fixed client id and,
/// when given, a schema.
pub fn create_file_with(path: &std::path::Path, schema: Option<&str>) {
    let db = open_file(path, None);
    super::init_fixed_client_id(&db);
    if let Some(schema) = schema {
        db.execute_batch("BEGIN").unwrap();
        db.query_row("SELECT powersync_replace_schema(?1)", [schema], |_| Ok(())).unwrap();
        db.execute_batch("COMMIT").unwrap();
    }
}

/// A fresh directory under the system's temp dir, removed on drop.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    /// `$TMPDIR/oplite-<tag>-<pid>-<n>`.
    pub fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "oplite-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// A path inside.
    pub fn join(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
