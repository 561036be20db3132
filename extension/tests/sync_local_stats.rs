//! sync_local's strategy stats are exact: after every call of randomized
//! sessions, each bucket's `oplite_pending_ops` equals the number of its
//! ops the incremental query visits (counted by a query with that query's
//! own join, taken from its SQL file) and `oplite_op_count` the ops it
//! holds. The sessions supersede, remove, move and clear; re-send ops the
//! client already applied (same op ids and checksums), with checksums that
//! then validate or fail (the failing buckets are deleted); complete
//! partially and fully; drop buckets; and soft-clear, which makes every
//! bucket new again.

mod common;

use std::collections::HashMap;

use oplite_test_data::server::{ServerModel, ServerOptions};
use rusqlite::Connection;
use serde_json::{json, Value};

const INCREMENTAL: &str = include_str!("../../sql/sync_local/incremental.sql");

/// Per bucket, the ops the incremental walk visits: incremental.sql's FROM
/// clause (buckets joined with their ops above `last_applied_op`), counted.
/// The walk's WHERE starts it at its cursor; from the start it keeps all.
fn visit_query() -> String {
    let from = INCREMENTAL.find("FROM ps_buckets").expect("incremental.sql walks ps_buckets");
    let filter = INCREMENTAL[from..].find("\n WHERE").expect("incremental.sql filters the walk") + from;
    // The walk from its start: the resume cursor at the smallest integer.
    let walk = INCREMENTAL[from..filter].replace(":bucket", &i64::MIN.to_string()).replace(":op", &i64::MIN.to_string());
    format!("SELECT bucket.id, count(*) {walk} GROUP BY bucket.id")
}

fn control(db: &Connection, op: &str, payload: Option<&str>) -> Value {
    db.execute_batch("BEGIN").unwrap();
    let out: Option<String> = db
        .query_row("SELECT powersync_control(?1, ?2)", (op, payload), |r| r.get(0))
        .unwrap_or_else(|e| panic!("powersync_control({op}): {e}"));
    db.execute_batch("COMMIT").unwrap();
    out.map_or(Value::Null, |text| serde_json::from_str(&text).unwrap())
}

fn has(instructions: &Value, name: &str) -> bool {
    instructions.as_array().is_some_and(|all| all.iter().any(|i| i.get(name).is_some()))
}

struct Checker {
    visits: String,
    checks: usize,
    /// Checks where some bucket held ops the walk would not visit.
    with_unvisited: usize,
}

impl Checker {
    fn check(&mut self, db: &Connection, what: &str) {
        let map = |sql: &str| -> HashMap<i64, i64> {
            let mut stmt = db.prepare(sql).unwrap();
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
        };
        let visits = map(&self.visits);
        let held = map("SELECT bucket, count(*) FROM ps_oplog GROUP BY bucket");
        let mut stmt = db.prepare("SELECT id, name, oplite_op_count, oplite_pending_ops FROM ps_buckets").unwrap();
        let rows: Vec<(i64, String, i64, i64)> =
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).unwrap().map(Result::unwrap).collect();
        for (id, name, op_count, pending) in rows {
            let visited = visits.get(&id).copied().unwrap_or(0);
            let holds = held.get(&id).copied().unwrap_or(0);
            assert_eq!(pending, visited, "{what}: bucket {name}: oplite_pending_ops {pending}, the walk visits {visited}");
            assert_eq!(op_count, holds, "{what}: bucket {name}: oplite_op_count {op_count}, ps_oplog holds {holds}");
            if holds > visited {
                self.with_unvisited += 1;
            }
        }
        self.checks += 1;
    }
}

/// One connection: checkpoint, data lines (some buckets from an op id
/// below what they hold: a re-send), maybe checksums fixed up to what the
/// client holds, then a partial or full completion.
fn iteration(db: &Connection, server: &mut ServerModel, checker: &mut Checker, resent: &mut usize) {
    let mut after = common::driver::requested_buckets(&control(db, "start", None));
    for from in after.values_mut() {
        if *from > 0 && server.rng.chance(35) {
            *from = server.rng.below(*from as u64) as i64;
            *resent += 1;
        }
    }
    let checkpoint = server.checkpoint_line();
    let out = control(db, "line_text", Some(&checkpoint.to_string()));
    checker.check(db, "checkpoint");
    if has(&out, "CloseSyncStream") {
        return;
    }
    for (_, line) in server.data_lines(&after) {
        control(db, "line_text", Some(&line.to_string()));
        checker.check(db, "data line");
    }
    if server.rng.chance(70) {
        // The checksums the client holds (re-sent ops count twice there),
        // so that the completion validates.
        let mut stmt = db.prepare("SELECT name, (add_checksum + op_checksum) & 0xffffffff FROM ps_buckets").unwrap();
        let held: HashMap<String, i64> =
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect();
        let updated: Vec<Value> = server
            .checkpoint_entries()
            .into_values()
            .map(|mut entry| {
                let name = entry["bucket"].as_str().unwrap().to_owned();
                entry["checksum"] = json!(held.get(&name).copied().unwrap_or(0));
                entry
            })
            .collect();
        let diff = json!({"checkpoint_diff": {"last_op_id": server.last_op_id().to_string(),
            "write_checkpoint": null, "updated_buckets": updated, "removed_buckets": []}});
        control(db, "line_text", Some(&diff.to_string()));
        checker.check(db, "checkpoint_diff");
    }
    let last = server.last_op_id().to_string();
    let complete = if server.rng.chance(35) {
        json!({"partial_checkpoint_complete": {"last_op_id": last, "priority": server.rng.below(4)}})
    } else {
        json!({"checkpoint_complete": {"last_op_id": last}})
    };
    let out = control(db, "line_text", Some(&complete.to_string()));
    checker.check(db, "completion");
    if !has(&out, "CloseSyncStream") {
        control(db, "stop", None);
    }
}

#[test]
fn pending_ops_are_what_the_incremental_walk_visits() {
    let mut checker = Checker { visits: visit_query(), checks: 0, with_unvisited: 0 };
    let mut resent = 0;
    for seed in 0..12 {
        let db = common::oplite_initialised();
        let options = ServerOptions { buckets: 2 + (seed % 3) as usize, ..Default::default() };
        let mut server = ServerModel::new(seed, options);
        for _ in 0..12 {
            server.mutate(12);
            iteration(&db, &mut server, &mut checker, &mut resent);
            if server.rng.chance(10) {
                db.execute_batch("BEGIN; SELECT powersync_clear(2); COMMIT;").unwrap();
                checker.check(&db, "soft clear");
            }
        }
    }
    // The sessions did re-send, and held ops the walk would skip.
    assert!(resent > 20, "only {resent} re-sends");
    assert!(checker.with_unvisited > checker.checks / 4, "{} of {} checks", checker.with_unvisited, checker.checks);
}

#[test]
fn re_sent_ops_do_not_make_the_apply_start_from_scratch() {
    // 2,000 applied ops, then all of them again and 20 new ones.
    let db = common::oplite_initialised();
    let op = |id: usize| {
        json!({"op_id": id.to_string(), "op": "PUT", "object_type": "t", "object_id": format!("r{id}"),
               "checksum": id, "data": "{}"})
    };
    let line = |ids: std::ops::Range<usize>| json!({"data": {"bucket": "b", "data": ids.map(op).collect::<Vec<_>>()}});
    let sync = |checksum: usize, last: usize, lines: &[Value]| {
        control(&db, "start", None);
        let checkpoint = json!({"checkpoint": {"last_op_id": last.to_string(),
            "buckets": [{"bucket": "b", "checksum": checksum}]}});
        control(&db, "line_text", Some(&checkpoint.to_string()));
        for l in lines {
            control(&db, "line_text", Some(&l.to_string()));
        }
        let out = control(&db, "line_text", Some(&json!({"checkpoint_complete": {"last_op_id": last.to_string()}}).to_string()));
        assert!(has(&out, "DidCompleteSync"), "{out}");
        control(&db, "stop", None);
        let report: String = db.query_row("SELECT oplite_last_apply()", [], |r| r.get(0)).unwrap();
        serde_json::from_str::<Value>(&report).unwrap()
    };
    let sum = |ids: std::ops::Range<usize>| ids.sum::<usize>();
    let first = sync(sum(1..2001), 2000, &[line(1..1001), line(1001..2001)]);
    assert_eq!(first["strategy"], "from_scratch", "{first}");
    // The client holds each re-sent op's checksum twice (the superseded
    // copy's in add_checksum).
    let again = sync(2 * sum(1..2001) + sum(2001..2021), 2020, &[line(1..1001), line(1001..2021)]);
    assert_eq!(again["strategy"], "incremental", "{again}");
    assert_eq!(again["pending_ops"], 20, "{again}");
    assert_eq!(again["rows_put"], 20, "{again}");
}
