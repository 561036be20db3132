//! Port of the reference core's `dart/test/sync_local_performance_test.dart`
//! without its timing limits (a benchmark is not a test here): ops written
//! straight into `ps_oplog` are applied by one checkpoint, fully or up to
//! priority 2, and the temporary files SQLite writes while doing so stay
//! under one write per 50 ops, the Dart suite's own bound. The sizes are
//! the Dart ones divided by 50 (the bound scales with them) to keep the run
//! short.
mod common;
mod upstream;

use std::cell::Cell;

use rusqlite::{ffi, Connection, OpenFlags};
use upstream::sync::{bucket, checkpoint, checkpoint_complete};
use upstream::{app_schema, exec, replace_schema, run, scalar, select, Core};

thread_local! {
    static TEMP_WRITES: Cell<u64> = const { Cell::new(0) };
}

/// Counts the writes to files SQLite deletes on close (its temporary
/// files), as the Dart tracking VFS does, on the writing thread.
static HOOKS: common::wrapping_vfs::Hooks = common::wrapping_vfs::Hooks {
    watch: |flags| flags & ffi::SQLITE_OPEN_DELETEONCLOSE != 0,
    before: |io| {
        if let common::wrapping_vfs::Io::Write(_) = io {
            TEMP_WRITES.with(|n| n.set(n.get() + 1));
        }
        None
    },
    mmap: false,
};

struct Case {
    unique: bool,
    count: i64,
    already_applied: i64,
    buckets: i64,
}

/// A database file with the schema test's app schema and `count` ops
/// spread over `buckets` buckets, `already_applied` of them applied.
fn prepare(core: Core, dir: &common::driver::TempDir, case: &Case) -> Connection {
    common::wrapping_vfs::register(c"upstream-temp-writes", &HOOKS, false);
    let db = Connection::open_with_flags_and_vfs(dir.join("test.db"), OpenFlags::default(), "upstream-temp-writes").unwrap();
    core.install(&db);
    replace_schema(&db, &app_schema("weight", true));
    let row_id = if case.unique { "uuid()" } else { "'duplicated_id'" };
    let Case { count, buckets, already_applied, .. } = case;
    db.execute_batch(&format!(
        "BEGIN;
         WITH RECURSIVE generate_rows(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM generate_rows WHERE n < {count})
         INSERT INTO ps_oplog (bucket, op_id, row_type, row_id, key, data, hash)
         SELECT (n % {buckets}), n, 'assets', {row_id}, uuid(),
           '{{\"description\": \"' || n || '\", \"make\": \"test\", \"model\": \"this is just filler data. this is just filler data. this is just filler data. this is just filler data. this is just filler data. this is just filler data. this is just filler data. \"}}',
           (n * 17) % 1000000000
         FROM generate_rows;
         WITH RECURSIVE generate_bucket_rows(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM generate_bucket_rows WHERE n < {buckets})
         INSERT INTO ps_buckets (id, name, last_applied_op) SELECT (n % {buckets}), 'bucket' || n, {already_applied}
         FROM generate_bucket_rows;
         COMMIT;"
    ))
    .unwrap();
    db
}

/// Applies everything with one checkpoint (complete up to `priority` when
/// given) and returns the temporary-file writes that took.
fn sync_local(db: &Connection, priority: Option<i64>) -> u64 {
    exec(db, "BEGIN", &[]);
    let control = |op: &str, payload: rusqlite::types::Value| {
        run(db, "SELECT powersync_control(?, ?)", &[&op, &payload]).unwrap_or_else(|e| panic!("{op}: {e}"))
    };
    control("start", rusqlite::types::Value::Null);
    control("seed_checkpoint_request_id", 1.into());
    let last_op_id = scalar(db, "SELECT max(op_id) FROM ps_oplog", &[]).as_i64().unwrap();
    let high = ["bucket0", "bucket3", "bucket4", "bucket5", "bucket6"];
    let buckets = select(db, "SELECT name FROM ps_buckets", &[])
        .iter()
        .map(|r| {
            let name = r["name"].as_str().unwrap();
            bucket(name, if high.contains(&name) { 2 } else { 3 })
        })
        .collect();
    control("line_text", checkpoint(last_op_id, buckets, None, vec![]).to_string().into());
    TEMP_WRITES.with(|n| n.set(0));
    control("line_text", checkpoint_complete(priority, "1").to_string().into());
    exec(db, "COMMIT", &[]);
    TEMP_WRITES.with(Cell::get)
}

fn check(core: Core, case: Case, priority: Option<i64>) {
    let dir = common::driver::TempDir::new("upstream-perf");
    let db = prepare(core, &dir, &case);
    let writes = sync_local(&db, priority);
    assert!((writes as i64) < case.count / 50, "{writes} temporary writes for {} ops", case.count);
    // Not in the Dart test: the checkpoint did apply rows.
    assert!(scalar(&db, "SELECT count(*) FROM assets", &[]).as_i64().unwrap() > 0);
}

/// The counter itself: a temporary table spilled to a file is counted.
#[test]
fn temp_writes_are_counted() {
    let dir = common::driver::TempDir::new("upstream-perf");
    let db = prepare(Core::Oplite, &dir, &Case { unique: true, count: 10, already_applied: 0, buckets: 1 });
    TEMP_WRITES.with(|n| n.set(0));
    db.execute_batch(
        "PRAGMA temp_store = FILE; PRAGMA cache_size = 2;
         CREATE TEMP TABLE filler AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 20000)
         SELECT n, randomblob(100) AS b FROM r;",
    )
    .unwrap();
    assert!(TEMP_WRITES.with(Cell::get) > 0);
}

macro_rules! cases {
    ($($full:ident, $partial:ident: $case:expr;)*) => {
        $(
            fn $full(core: Core) { check(core, $case, None) }
            fn $partial(core: Core) { check(core, $case, Some(2)) }
            per_core! { $full; $partial; }
        )*
    };
}

cases! {
    unique_ids_full, unique_ids_partial: Case { unique: true, count: 10_000, already_applied: 200, buckets: 10 };
    duplicate_ids_full, duplicate_ids_partial: Case { unique: false, count: 10_000, already_applied: 20, buckets: 10 };
    few_changes_full, few_changes_partial: Case { unique: true, count: 2_000, already_applied: 1_900, buckets: 10 };
    many_buckets_full, many_buckets_partial: Case { unique: true, count: 2_000, already_applied: 200, buckets: 1000 };
}
