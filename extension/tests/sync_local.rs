//! sync_local: plans without temporary b-trees, zero temp-file writes, and
//! the strategy choice, through SQL on real SQLite.
mod common;

use common::counting_vfs;
use rusqlite::Connection;
use serde_json::{json, Value};

const QUERIES: &[(&str, &str)] = &[
    ("incremental", oplite::sync_local::INCREMENTAL),
    ("incremental_buckets", oplite::sync_local::INCREMENTAL_BUCKETS),
    ("from_scratch", oplite::sync_local::FROM_SCRATCH),
    ("from_scratch_buckets", oplite::sync_local::FROM_SCRATCH_BUCKETS),
    ("deleted_rows", oplite::sync_local::DELETED_ROWS),
    ("updated_rows", oplite::sync_local::UPDATED_ROWS),
    ("type_bounds", oplite::sync_local::TYPE_BOUNDS),
    ("chunk_end", oplite::sync_local::CHUNK_END),
    ("next_row", oplite::sync_local::NEXT_ROW),
];

fn plan(db: &Connection, sql: &str) -> Vec<String> {
    let mut stmt = db.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let params: Vec<String> = (0..stmt.parameter_count()).map(|_| "[1,2]".to_owned()).collect();
    stmt.query_map(rusqlite::params_from_iter(params), |r| r.get::<_, String>(3))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

#[test]
fn no_query_plan_uses_a_temporary_b_tree() {
    let db = common::oplite_initialised();
    // Plans with statistics as a large oplog would have them, and without.
    for analyzed in [false, true] {
        if analyzed {
            db.execute_batch(
                "INSERT INTO sqlite_stat1(tbl, idx, stat) VALUES
                   ('ps_oplog', 'ps_oplog_row', '1000000 100 1 1'),
                   ('ps_oplog', 'ps_oplog_opid', '1000000 100000 1'),
                   ('ps_buckets', 'ps_buckets_name', '10 1');",
            )
            .or_else(|_| db.execute_batch("ANALYZE; DELETE FROM sqlite_stat1;"))
            .unwrap();
            db.execute_batch("ANALYZE sqlite_schema").unwrap();
        }
        for (name, sql) in QUERIES {
            let plan = plan(&db, sql);
            assert!(!plan.is_empty());
            for step in &plan {
                assert!(!step.contains("TEMP B-TREE"), "{name} (analyzed: {analyzed}) builds a temp b-tree: {plan:#?}");
                assert!(!step.contains("AUTOMATIC"), "{name} builds an automatic index: {plan:#?}");
                assert!(
                    !step.starts_with("SCAN op") || step.contains("ps_oplog_deleted"),
                    "{name} scans the whole oplog: {plan:#?}"
                );
            }
        }
    }
}

/// Running bucket checksums of a test stream, as the server would send them
/// (10 buckets unless built with [`Checksums::buckets`]).
struct Checksums(Vec<u32>);

impl Default for Checksums {
    fn default() -> Self {
        Checksums::buckets(10)
    }
}

impl Checksums {
    fn buckets(n: usize) -> Self {
        Checksums(vec![0; n])
    }
}

/// Stores `n` ops (rows spread over 10 buckets), leaving the checkpoint
/// pending; returns the completing line.
fn stored(db: &Connection, sums: &mut Checksums, n: usize, first_op: usize, rows: usize) -> Value {
    let checksums = &mut sums.0;
    let ops: Vec<(usize, Value)> = (0..n)
        .map(|i| {
            let op_id = first_op + i;
            let row = i % rows;
            let bucket = row % checksums.len();
            checksums[bucket] = checksums[bucket].wrapping_add(op_id as u32);
            (bucket, json!({"op_id": op_id.to_string(), "op": "PUT", "object_type": "t",
                            "object_id": format!("row{row}"), "checksum": op_id as u32,
                            "data": json!({"n": op_id}).to_string()}))
        })
        .collect();
    let checkpoint = json!({"checkpoint": {"last_op_id": (first_op + n - 1).to_string(), "buckets":
        (0..sums.0.len()).map(|b| json!({"bucket": format!("b{b}"), "checksum": sums.0[b]})).collect::<Vec<_>>()}});
    control(db, "line_text", &checkpoint.to_string());
    for bucket in 0..sums.0.len() {
        let data: Vec<&Value> = ops.iter().filter(|(b, _)| *b == bucket).map(|(_, op)| op).collect();
        for chunk in data.chunks(1000) {
            let line = json!({"data": {"bucket": format!("b{bucket}"), "data": chunk}});
            control(db, "line_text", &line.to_string());
        }
    }
    json!({"checkpoint_complete": {"last_op_id": (first_op + n - 1).to_string()}})
}

fn control(db: &Connection, op: &str, payload: &str) -> String {
    db.execute_batch("BEGIN").unwrap();
    let out = db.query_row("SELECT powersync_control(?1, ?2)", [op, payload], |r| r.get(0)).unwrap();
    db.execute_batch("COMMIT").unwrap();
    out
}

fn last_apply(db: &Connection) -> Value {
    let text: String = db.query_row("SELECT oplite_last_apply()", [], |r| r.get(0)).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn from_scratch_writes_no_temp_pages_on_a_200k_op_apply() {
    counting_vfs::register_as_default();
    let dir = std::env::temp_dir().join(format!("oplite-temp-pages-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("apply.db");
    let db = Connection::open(&path).unwrap();
    // A small page cache, so a temp b-tree of this size would spill.
    db.execute_batch("PRAGMA cache_size = -2000; PRAGMA temp_store = FILE;").unwrap();
    oplite::register(&db).unwrap();
    common::init(&db);
    db.query_row("SELECT oplite_sync_local_strategy('from_scratch')", [], |_| Ok(())).unwrap();
    control(&db, "start", "{}");
    let mut sums = Checksums::default();
    let complete = stored(&db, &mut sums, 200_000, 1, 200_000);
    counting_vfs::reset();
    let out = control(&db, "line_text", &complete.to_string());
    assert!(out.contains("DidCompleteSync"), "{out}");
    assert_eq!(counting_vfs::temp_bytes_written(), 0, "from scratch wrote temp files");
    assert_eq!(last_apply(&db)["strategy"], "from_scratch");
    let rows: i64 = db.query_row("SELECT count(*) FROM ps_untyped", [], |r| r.get(0)).unwrap();
    assert_eq!(rows, 200_000);
    // The control: a sort of the same rows does spill, and is counted.
    let sorted: i64 =
        db.query_row("SELECT count(*) FROM (SELECT data FROM ps_untyped ORDER BY random())", [], |r| r.get(0)).unwrap();
    assert_eq!(sorted, 200_000);
    assert!(counting_vfs::temp_bytes_written() > 0, "a sorter spill was not counted");

    // 1000 buckets: the bookkeeping updates of every bucket row must not
    // spill a statement journal either.
    let mut wide = Checksums::buckets(1000);
    let db2_path = dir.join("wide.db");
    let db2 = Connection::open(&db2_path).unwrap();
    db2.execute_batch("PRAGMA cache_size = -2000; PRAGMA temp_store = FILE;").unwrap();
    oplite::register(&db2).unwrap();
    common::init(&db2);
    control(&db2, "start", "{}");
    let complete2 = stored(&db2, &mut wide, 50_000, 1, 50_000);
    counting_vfs::reset();
    let out = control(&db2, "line_text", &complete2.to_string());
    assert!(out.contains("DidCompleteSync"), "{out}");
    assert_eq!(counting_vfs::temp_bytes_written(), 0, "1000-bucket apply wrote temp files");
    drop(db2);

    // The incremental query over a second batch: no temp files either.
    db.query_row("SELECT oplite_sync_local_strategy('incremental')", [], |_| Ok(())).unwrap();
    let complete = stored(&db, &mut sums, 20_000, 200_001, 200_000);
    counting_vfs::reset();
    let out = control(&db, "line_text", &complete.to_string());
    assert!(out.contains("DidCompleteSync"), "{out}");
    assert_eq!(counting_vfs::temp_bytes_written(), 0, "incremental wrote temp files");
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_strategy_follows_the_share_of_new_ops() {
    let db = common::oplite_initialised();
    control(&db, "start", "{}");
    let mut sums = Checksums::default();
    let complete = stored(&db, &mut sums, 20_000, 1, 20_000);
    control(&db, "line_text", &complete.to_string());
    let report = last_apply(&db);
    assert_eq!(report["strategy"], "from_scratch", "{report}");
    assert_eq!(report["pending_ops"], 20_000);
    assert_eq!(report["rows_put"], 20_000);

    // 1% of the rows change: incremental, and only those rows are written.
    let complete = stored(&db, &mut sums, 200, 20_001, 20_000);
    control(&db, "line_text", &complete.to_string());
    let report = last_apply(&db);
    assert_eq!(report["strategy"], "incremental", "{report}");
    assert_eq!(report["pending_ops"], 200);
    assert_eq!(report["rows_put"], 200);
    let n: i64 = db
        .query_row("SELECT json_extract(data, '$.n') FROM ps_untyped WHERE id = 'row5'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 20_006);
}

#[test]
fn both_strategies_give_the_same_tables() {
    let mut tables = Vec::new();
    for strategy in ["incremental", "from_scratch"] {
        let db = common::oplite_initialised();
        db.query_row("SELECT oplite_sync_local_strategy(?1)", [strategy], |_| Ok(())).unwrap();
        control(&db, "start", "{}");
        let mut sums = Checksums::default();
        // Rows shared by ops (500 rows, 3000 ops), then an update batch.
        let complete = stored(&db, &mut sums, 3000, 1, 500);
        control(&db, "line_text", &complete.to_string());
        let complete = stored(&db, &mut sums, 700, 3001, 450);
        control(&db, "line_text", &complete.to_string());
        assert_eq!(last_apply(&db)["strategy"], strategy);
        tables.push(common::diff::rows(&db, "SELECT type, id, data FROM ps_untyped ORDER BY 1, 2"));
    }
    assert_eq!(tables[0].len(), 500);
    assert_eq!(tables[0], tables[1]);
}

#[test]
fn unknown_strategies_are_rejected() {
    let db = common::oplite_initialised();
    let err = db.query_row("SELECT oplite_sync_local_strategy('fastest')", [], |r| r.get::<_, String>(0)).unwrap_err();
    assert!(err.to_string().contains("unknown strategy \"fastest\""), "{err}");
}
