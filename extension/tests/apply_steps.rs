//! Applying a checkpoint in steps (`oplite_apply_prepare`,
//! `oplite_apply_step`), as the web adapter's Worker does to answer queries
//! during a long apply:
//!
//! - seeded sessions (REMOVE/MOVE/CLEAR, diffs, checksum failures, local
//!   writes and uploads, dropped streams; JSON and BSON) give the same
//!   database, call by call, whether each apply runs in one go or in steps
//!   of 1, 7 or 200 rows, under both strategies;
//! - partial checkpoints and the app's triggers on data tables likewise;
//! - a second connection reading between steps sees the checkpoint all at
//!   once, never part of it;
//! - misuse fails with SQLITE_MISUSE and writes nothing.
mod common;

use common::driver::{snapshot, Driver, Encoding, TempDir};
use common::error_code;
use oplite_test_data::{ServerModel, ServerOptions};
use rusqlite::{ffi, Connection};
use serde_json::{json, Value};

fn control(db: &Connection, op: &str, payload: &str) -> String {
    db.execute_batch("BEGIN").unwrap();
    let out = db.query_row("SELECT powersync_control(?1, ?2)", [op, payload], |r| r.get(0)).unwrap();
    db.execute_batch("COMMIT").unwrap();
    out
}

/// An answer without what differs between databases (the client id, sync times).
fn comparable(answer: &str) -> String {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("client_id");
                map.remove("last_synced_at");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut value: Value = serde_json::from_str(answer).unwrap();
    strip(&mut value);
    value.to_string()
}

/// What one `oplite_apply_step` did.
struct Step {
    /// What it returned: the stage the next step continues.
    stage: i64,
    /// Rows it inserted, updated or deleted (SQLite's `changes()`, the
    /// triggers' writes included).
    changed: u64,
}

/// `control` with the apply written first in steps of `budget` rows;
/// returns the answer and what each step returned (its stage after).
fn stepped(db: &Connection, op: &str, payload: &str, budget: i64) -> (String, Vec<i64>) {
    let (out, steps) = stepped_with_changes(db, op, payload, budget);
    (out, steps.iter().map(|step| step.stage).collect())
}

/// [`stepped`], with the rows each step changed.
fn stepped_with_changes(db: &Connection, op: &str, payload: &str, budget: i64) -> (String, Vec<Step>) {
    db.execute_batch("BEGIN").unwrap();
    let mut steps = Vec::new();
    if db.query_row("SELECT oplite_apply_prepare(?1, ?2)", [op, payload], |r| r.get::<_, bool>(0)).unwrap() {
        loop {
            let before = db.total_changes();
            let stage = db.query_row("SELECT oplite_apply_step(?1)", [budget], |r| r.get::<_, i64>(0)).unwrap();
            steps.push(Step { stage, changed: db.total_changes() - before });
            if stage == 0 {
                break;
            }
        }
    }
    let out = db.query_row("SELECT powersync_control(?1, ?2)", [op, payload], |r| r.get(0)).unwrap();
    db.execute_batch("COMMIT").unwrap();
    (out, steps)
}

/// The stages of an apply in steps, runs merged: `[1, 1, 2, 2, 1, 0]` -> `[1, 2, 1, 0]`.
fn stage_runs(stages: &[i64]) -> Vec<i64> {
    let mut runs = stages.to_vec();
    runs.dedup();
    runs
}

fn session(seed: u64, encoding: Encoding, strategy: &str, steps: Option<u64>) -> Driver {
    let db = common::oplite_initialised();
    db.query_row("SELECT oplite_sync_local_strategy(?1)", [strategy], |_| Ok(())).unwrap();
    let mut driver = Driver::new(db, ServerModel::new(seed, ServerOptions::default()), encoding);
    driver.apply_steps = steps;
    driver.check_each_step = true;
    driver
}

#[test]
fn stepped_sessions_match_sessions_applied_in_one_go() {
    let mut multi_step_applies = 0;
    for seed in 0..24u64 {
        let encoding = if seed % 2 == 0 { Encoding::Json } else { Encoding::Bson };
        let strategy = ["auto", "incremental", "from_scratch"][(seed % 3) as usize];
        let budget = [1, 7, 200][(seed / 3 % 3) as usize];
        let mut whole = session(seed, encoding, strategy, None);
        let mut parts = session(seed, encoding, strategy, Some(budget));
        for _ in 0..3 {
            whole.server.mutate(10);
            parts.server.mutate(10);
            whole.iteration();
            parts.iteration();
            assert_eq!(snapshot(&parts.db), snapshot(&whole.db), "seed {seed}, {strategy}, steps of {budget}");
        }
        whole.converge();
        parts.converge();
        assert_eq!(snapshot(&parts.db), snapshot(&whole.db), "seed {seed} after converging");
        if budget == 1 && parts.steps_taken > 2 {
            multi_step_applies += 1;
        }
    }
    assert!(multi_step_applies > 0, "no apply took more than one step");
}

/// Ops for `rows` rows of types `a` and `t` in buckets of priorities 0 to 3
/// (row i in bucket i % 4), the checkpoint naming them, and its data lines.
/// `sums` are the buckets' checksums so far.
fn priority_stream(rows: usize, first_op: usize, sums: &mut [u32; 4]) -> (Value, Vec<Value>) {
    let mut lines = Vec::new();
    for bucket in 0..4 {
        let ops: Vec<Value> = (0..rows)
            .filter(|i| i % 4 == bucket)
            .map(|i| {
                let op_id = first_op + i;
                sums[bucket] = sums[bucket].wrapping_add(op_id as u32);
                json!({"op_id": op_id.to_string(), "op": "PUT", "object_type": if i % 3 == 0 { "a" } else { "t" },
                       "object_id": format!("r{i}"), "checksum": op_id as u32, "data": json!({"n": op_id}).to_string()})
            })
            .collect();
        lines.push(json!({"data": {"bucket": format!("p{bucket}"), "data": ops}}));
    }
    let last = (first_op + rows - 1).to_string();
    let buckets: Vec<Value> =
        (0..4).map(|b| json!({"bucket": format!("p{b}"), "checksum": sums[b], "priority": b})).collect();
    (json!({"checkpoint": {"last_op_id": last, "buckets": buckets}}), lines)
}

#[test]
fn partial_checkpoints_in_steps_match() {
    let mut results = Vec::new();
    for budget in [None, Some(1), Some(13)] {
        let db = common::oplite_initialised();
        let mut answers = Vec::new();
        let call = |op: &str, payload: &str| {
            comparable(&match budget {
                None => control(&db, op, payload),
                Some(budget) => {
                    let (out, stages) = stepped(&db, op, payload, budget);
                    // Without the app's triggers rows are written as they are walked.
                    assert!(stages.iter().all(|&stage| stage <= 1) && stages.last().is_none_or(|&s| s == 0), "{stages:?}");
                    out
                }
            })
        };
        answers.push(call("start", "{}"));
        let (checkpoint, lines) = priority_stream(400, 1, &mut [0; 4]);
        answers.push(call("line_text", &checkpoint.to_string()));
        for line in &lines {
            answers.push(call("line_text", &line.to_string()));
        }
        for priority in [0, 2] {
            let partial = json!({"partial_checkpoint_complete": {"last_op_id": "400", "priority": priority}});
            answers.push(call("line_text", &partial.to_string()));
        }
        answers.push(call("line_text", &json!({"checkpoint_complete": {"last_op_id": "400"}}).to_string()));
        let mut out = snapshot(&db);
        out.push(answers);
        results.push(out);
    }
    assert_eq!(results[0][3].len(), 400, "ps_untyped");
    for (i, budget) in [(1, 1), (2, 13)] {
        // Compared table by table, so that a failure names one.
        for (table, (got, want)) in results[i].iter().zip(&results[0]).enumerate() {
            assert!(got == want, "steps of {budget}: snapshot part {table} differs:\n{got:?}\n{want:?}");
        }
    }
}

#[test]
fn the_apps_triggers_see_the_same_events_in_steps() {
    let schema = json!({"tables": [{"name": "t", "columns": [{"name": "n", "type": "integer"}]},
                                   {"name": "a", "columns": [{"name": "n", "type": "integer"}]}]});
    let mut logs = Vec::new();
    for budget in [None, Some(1), Some(25)] {
        let db = common::oplite_initialised();
        db.execute_batch("BEGIN").unwrap();
        db.query_row("SELECT powersync_replace_schema(?1)", [schema.to_string()], |_| Ok(())).unwrap();
        db.execute_batch("COMMIT").unwrap();
        db.execute_batch(
            "CREATE TABLE log(seq INTEGER PRIMARY KEY, what TEXT);
             CREATE TRIGGER t_in AFTER INSERT ON ps_data__t BEGIN INSERT INTO log(what) VALUES ('+' || new.id); END;
             CREATE TRIGGER t_up AFTER UPDATE ON ps_data__t BEGIN INSERT INTO log(what) VALUES ('~' || new.id); END;",
        )
        .unwrap();
        let mut applies = Vec::new();
        let mut call = |op: &str, payload: &str| match budget {
            None => control(&db, op, payload),
            Some(budget) => {
                let (out, steps) = stepped_with_changes(&db, op, payload, budget);
                if !steps.is_empty() {
                    let stages: Vec<i64> = steps.iter().map(|step| step.stage).collect();
                    // The walk writes nothing with the app's triggers (it
                    // holds every row), and the step that ends it stops
                    // there: the rows of stage 2 cost far more, and a host
                    // that sizes its steps by time must not spend a walk's
                    // budget on them.
                    let walk = steps.iter().take_while(|step| step.stage == 1).count();
                    assert!(steps[..=walk].iter().all(|step| step.changed == 0), "{stages:?}");
                    applies.push(stage_runs(&stages));
                }
                out
            }
        };
        call("start", "{}");
        let mut sums = [0; 4];
        for first_op in [1, 401] {
            let (checkpoint, lines) = priority_stream(if first_op == 1 { 400 } else { 150 }, first_op, &mut sums);
            call("line_text", &checkpoint.to_string());
            for line in &lines {
                call("line_text", &line.to_string());
            }
            let last = checkpoint["checkpoint"]["last_op_id"].as_str().unwrap().to_owned();
            let out = call("line_text", &json!({"checkpoint_complete": {"last_op_id": last}}).to_string());
            assert!(out.contains("DidCompleteSync"), "{out}");
        }
        if budget.is_some() {
            // Each apply walks, then writes the held rows through the
            // triggers (stage 2), and says so.
            assert!(!applies.is_empty());
            for runs in &applies {
                // A step ends where its stage does: the last ordered
                // write leaves the finish (stage 1) to one more step.
                assert_eq!(runs, &[1, 2, 1, 0], "{applies:?}");
            }
        }
        logs.push(common::diff::rows(&db, "SELECT seq, what FROM log ORDER BY seq"));
    }
    assert!(logs[0].len() > 300, "{}", logs[0].len());
    assert_eq!(logs[1], logs[0]);
    assert_eq!(logs[2], logs[0]);
}

/// The point of it all: a second connection reading between steps sees
/// the last committed checkpoint, whole, while the writer's transaction
/// holds part of the next (the writer keeps its changes in its page cache,
/// `cache_spill` off, as the web adapter does for the apply).
#[test]
fn a_reader_between_steps_sees_the_checkpoint_all_at_once() {
    let dir = TempDir::new("apply-steps-reader");
    let path = dir.join("steps.db");
    let writer = Connection::open(&path).unwrap();
    oplite::register(&writer).unwrap();
    common::init(&writer);
    writer.execute_batch("PRAGMA cache_size = -256; PRAGMA cache_spill = OFF;").unwrap();
    let reader = Connection::open(&path).unwrap();
    oplite::register(&reader).unwrap();
    reader.execute_batch("PRAGMA query_only = 1").unwrap();
    let count = |db: &Connection| db.query_row("SELECT count(*) FROM ps_untyped", [], |r| r.get::<_, i64>(0)).unwrap();

    control(&writer, "start", "{}");
    let (checkpoint, lines) = priority_stream(8000, 1, &mut [0; 4]);
    control(&writer, "line_text", &checkpoint.to_string());
    for line in &lines {
        control(&writer, "line_text", &line.to_string());
    }
    let complete = json!({"checkpoint_complete": {"last_op_id": "8000"}}).to_string();
    writer.execute_batch("BEGIN").unwrap();
    assert!(writer.query_row("SELECT oplite_apply_prepare('line_text', ?1)", [&complete], |r| r.get::<_, bool>(0)).unwrap());
    let mut seen_by_writer = Vec::new();
    while writer.query_row("SELECT oplite_apply_step(500)", [], |r| r.get::<_, bool>(0)).unwrap() {
        seen_by_writer.push(count(&writer));
        assert_eq!(count(&reader), 0, "the reader saw part of the apply");
    }
    assert!(seen_by_writer.len() >= 10, "{seen_by_writer:?}");
    assert!(seen_by_writer[0] > 0 && seen_by_writer.windows(2).all(|w| w[0] <= w[1]), "{seen_by_writer:?}");
    assert!(seen_by_writer[seen_by_writer.len() / 2] < 8000, "{seen_by_writer:?}");
    let out: String = writer.query_row("SELECT powersync_control('line_text', ?1)", [&complete], |r| r.get(0)).unwrap();
    assert!(out.contains("DidCompleteSync"), "{out}");
    assert_eq!(count(&reader), 0);
    writer.execute_batch("COMMIT").unwrap();
    assert_eq!(count(&reader), 8000);
    let check: String = reader.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(check, "ok");
}

#[test]
fn misuse_fails_and_writes_nothing() {
    let db = common::oplite_initialised();
    // Outside a transaction, and without a prepared apply.
    let err = db.query_row("SELECT oplite_apply_prepare('stop', NULL)", [], |r| r.get::<_, i64>(0)).unwrap_err();
    assert_eq!(error_code(&err), ffi::SQLITE_MISUSE, "{err}");
    db.execute_batch("BEGIN").unwrap();
    let err = db.query_row("SELECT oplite_apply_step(10)", [], |r| r.get::<_, i64>(0)).unwrap_err();
    assert_eq!(error_code(&err), ffi::SQLITE_MISUSE, "{err}");
    assert!(err.to_string().contains("no apply is prepared"), "{err}");
    let err = db.query_row("SELECT oplite_apply_step(0)", [], |r| r.get::<_, i64>(0)).unwrap_err();
    assert!(err.to_string().contains("positive integer"), "{err}");
    db.execute_batch("COMMIT").unwrap();

    control(&db, "start", "{}");
    let (checkpoint, lines) = priority_stream(100, 1, &mut [0; 4]);
    control(&db, "line_text", &checkpoint.to_string());
    // A data line applies nothing, nor does a checkpoint with a checksum
    // that does not match yet.
    db.execute_batch("BEGIN").unwrap();
    let data = lines[0].to_string();
    let complete = json!({"checkpoint_complete": {"last_op_id": "100"}}).to_string();
    for payload in [&data, &complete] {
        let prepared: bool =
            db.query_row("SELECT oplite_apply_prepare('line_text', ?1)", [payload], |r| r.get(0)).unwrap();
        assert!(!prepared, "{payload}");
    }
    db.execute_batch("COMMIT").unwrap();
    for line in &lines {
        control(&db, "line_text", &line.to_string());
    }
    // Prepared and stepped, then a different call: it fails, the host
    // rolls back, and the apply in one go afterwards is whole.
    db.execute_batch("BEGIN").unwrap();
    assert!(db.query_row("SELECT oplite_apply_prepare('line_text', ?1)", [&complete], |r| r.get::<_, bool>(0)).unwrap());
    db.query_row("SELECT oplite_apply_step(10)", [], |r| r.get::<_, bool>(0)).unwrap();
    let err = db
        .query_row("SELECT powersync_control('line_text', ?1)", [&lines[0].to_string()], |r| r.get::<_, String>(0))
        .unwrap_err();
    assert_eq!(error_code(&err), ffi::SQLITE_MISUSE, "{err}");
    assert!(err.to_string().contains("oplite_apply_prepare"), "{err}");
    db.execute_batch("ROLLBACK").unwrap();
    let rows = |db: &Connection| db.query_row("SELECT count(*) FROM ps_untyped", [], |r| r.get::<_, i64>(0)).unwrap();
    assert_eq!(rows(&db), 0);
    let out = control(&db, "line_text", &complete);
    assert!(out.contains("DidCompleteSync"), "{out}");
    assert_eq!(rows(&db), 100);
}
