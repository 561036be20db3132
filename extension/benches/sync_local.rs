//! The sync_local benchmark: apply time of every workload of issue 4's
//! matrix, for oplite with the strategy forced each way and chosen
//! automatically, and for the reference cores 0.5.4 (the specification)
//! and 0.5.3 (what the JS SDKs bundle), on the same data in one run. No
//! schema is installed: the rows land in `ps_untyped`.
//!
//!     cargo bench -p oplite --no-default-features --features bundled --bench sync_local
//!         [-- --runs 5] [--ops 1000000] [--only NAME] [--reuse] [--direct]
//!
//! `--direct` runs the matrix on a schema instead, the row type's table
//! declared `"direct": true` (core 0.5.4's direct tables; 0.5.3 has none):
//! oplite's typed table (auto strategy), oplite's direct table with each
//! strategy, and 0.5.4's direct table, side by side.
//!
//! Each workload is prepared once per core and table (lines stored through
//! `powersync_control`, everything but the final completion), the database
//! file is copied for every run, and each run happens in a child process
//! that opens the copy, replays the checkpoint line and times the completing
//! line alone. The child reports time, temp-file bytes written (through a
//! counting VFS) and its peak RSS, then the rows it left (their count and
//! the sum of `n`), which must be the same for every column of a workload.
//! The table shows medians. The reference cores are `$REFERENCE_CORE` and
//! `$REFERENCE_CORE_053`, or what `scripts/reference-core.sh` prints.

#[path = "common/mod.rs"]
mod common;
#[path = "../tests/common/counting_vfs.rs"]
mod counting_vfs;
#[path = "../tests/common/wrapping_vfs.rs"]
mod wrapping_vfs;

use common::{with_direct_tables, Core, Reference};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rusqlite::{Connection, OpenFlags};
use serde_json::{json, Value};

const LINE_OPS: usize = 1000;
/// The row type of every op.
const ROW_TYPE: &str = "thisisatable";

/// What the schema makes of the row type `thisisatable`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Table {
    /// No schema: rows in `ps_untyped`.
    Untyped,
    /// A table of the schema (oplite: typed columns behind a view).
    Typed,
    /// A direct table (`"direct": true`).
    Direct,
}

impl Table {
    fn name(self) -> &'static str {
        match self {
            Table::Untyped => "untyped",
            Table::Typed => "typed",
            Table::Direct => "direct",
        }
    }

    fn parse(name: &str) -> Table {
        [Table::Untyped, Table::Typed, Table::Direct]
            .into_iter()
            .find(|t| t.name() == name)
            .unwrap_or_else(|| panic!("unknown table {name:?}"))
    }

    /// The schema to install and send with `start`, if any.
    fn schema(self) -> Option<Value> {
        let schema = json!({"tables": [{"name": ROW_TYPE, "columns": [{"name": "n", "type": "integer"}]}]});
        match self {
            Table::Untyped => None,
            Table::Typed => Some(schema),
            Table::Direct => Some(with_direct_tables(schema)),
        }
    }

    /// `start`'s payload: the schema, as SDKs send it (core 0.5.4 applies
    /// into a direct table only when `start`'s schema lists it).
    fn start_payload(self) -> Option<String> {
        self.schema().map(|schema| json!({ "schema": schema }).to_string())
    }

    /// SQL: the rows a run left, as (count, sum of `n`).
    fn rows_sql(self) -> String {
        match self {
            Table::Untyped => format!(
                "SELECT count(*), total(json_extract(data, '$.n')) FROM ps_untyped WHERE type = '{ROW_TYPE}'"
            ),
            Table::Typed | Table::Direct => format!("SELECT count(*), total(n) FROM {ROW_TYPE}"),
        }
    }
}

/// One column of the table: a core, its table, oplite's strategy.
struct Variant {
    label: &'static str,
    core: Core,
    table: Table,
    strategy: &'static str,
}

const fn variant(label: &'static str, core: Core, table: Table, strategy: &'static str) -> Variant {
    Variant { label, core, table, strategy }
}

/// The default columns: rows in ps_untyped.
const UNTYPED_VARIANTS: &[Variant] = &[
    variant("incremental", Core::Oplite, Table::Untyped, "incremental"),
    variant("from scratch", Core::Oplite, Table::Untyped, "from_scratch"),
    variant("auto (picked)", Core::Oplite, Table::Untyped, "auto"),
    variant("reference 0.5.4", Core::Reference(Reference::V054), Table::Untyped, ""),
    variant("reference 0.5.3", Core::Reference(Reference::V053), Table::Untyped, ""),
];

/// The ratio columns of the default table: (label, numerator column,
/// denominator columns, the fastest of which divides).
const UNTYPED_RATIOS: &[(&str, usize, &[usize])] =
    &[("auto / best forced", 2, &[0, 1]), ("auto / 0.5.4", 2, &[3]), ("auto / 0.5.3", 2, &[4])];

/// The `--direct` columns.
const DIRECT_VARIANTS: &[Variant] = &[
    variant("typed table, auto (picked)", Core::Oplite, Table::Typed, "auto"),
    variant("direct, incremental", Core::Oplite, Table::Direct, "incremental"),
    variant("direct, from scratch", Core::Oplite, Table::Direct, "from_scratch"),
    variant("direct, auto (picked)", Core::Oplite, Table::Direct, "auto"),
    variant("reference 0.5.4, direct", Core::Reference(Reference::V054), Table::Direct, ""),
];

const DIRECT_RATIOS: &[(&str, usize, &[usize])] = &[
    ("direct auto / best forced", 3, &[1, 2]),
    ("direct auto / typed auto", 3, &[0]),
    ("direct auto / 0.5.4 direct", 3, &[4]),
];

struct Workload {
    name: &'static str,
    description: &'static str,
    /// Lines stored before the measured completion (all but the last).
    prepare: fn(&mut Driver, usize),
    /// The measured line.
    complete: fn(usize) -> Value,
}

fn op(op_id: usize, row: usize, bucket: &str) -> Value {
    let _ = bucket;
    json!({
        "op_id": op_id.to_string(),
        "op": "PUT",
        "object_type": ROW_TYPE,
        "object_id": format!("thisismyrowid{row}"),
        "checksum": op_checksum(op_id),
        "data": json!({"n": row}).to_string(),
    })
}

/// The checksum of op `op_id`.
fn op_checksum(op_id: usize) -> u32 {
    ((op_id as u64 * 17) % 1_000_000_000) as u32
}

/// Sends a stream: a checkpoint over `buckets`, then `ops` (op id, row,
/// bucket index) as data lines of 1000 ops per bucket.
struct Stream {
    buckets: Vec<(String, i32)>,
    ops: Vec<(usize, usize, usize)>,
}

impl Stream {
    fn checkpoint(&self, last_op: usize, checksums: &[u32], counts: &[usize]) -> Value {
        json!({"checkpoint": {
            "last_op_id": last_op.to_string(),
            "write_checkpoint": null,
            "buckets": self.buckets.iter().enumerate().map(|(i, (name, priority))| json!({
                "bucket": name, "checksum": checksums[i], "priority": priority, "count": counts[i],
            })).collect::<Vec<_>>(),
        }})
    }
}

/// Feeds lines to one core's connection and tracks the checksums a server
/// would send.
struct Driver {
    db: Connection,
    buckets: Vec<(String, i32)>,
    checksums: Vec<u32>,
    counts: Vec<usize>,
    next_op: usize,
    last_checkpoint: Option<Value>,
}

impl Driver {
    fn control(&self, op: &str, payload: Option<&str>) -> String {
        self.db
            .query_row("SELECT powersync_control(?1, ?2)", (op, payload), |r| r.get::<_, String>(0))
            .unwrap_or_else(|e| panic!("powersync_control({op}): {e}"))
    }

    fn tx<T>(&self, f: impl FnOnce(&Self) -> T) -> T {
        self.db.execute_batch("BEGIN").unwrap();
        let out = f(self);
        self.db.execute_batch("COMMIT").unwrap();
        out
    }

    fn set_buckets(&mut self, buckets: Vec<(String, i32)>) {
        self.checksums = vec![0; buckets.len()];
        self.counts = vec![0; buckets.len()];
        self.buckets = buckets;
    }

    /// Sends a checkpoint announcing `ops` (row, bucket) and the data
    /// lines carrying them; returns the checkpoint line.
    fn send(&mut self, ops: &[(usize, usize)]) -> Value {
        let assigned = self.assign(ops, Vec::with_capacity(ops.len()));
        let stream = Stream { buckets: self.buckets.clone(), ops: assigned };
        let checkpoint = stream.checkpoint(self.next_op - 1, &self.checksums, &self.counts);
        self.tx(|d| d.control("line_text", Some(&checkpoint.to_string())));
        self.send_data(&stream);
        self.last_checkpoint = Some(checkpoint.clone());
        checkpoint
    }

    /// Gives `ops` (row, bucket) the next op ids, after `assigned`.
    fn assign(&mut self, ops: &[(usize, usize)], mut assigned: Vec<(usize, usize, usize)>) -> Vec<(usize, usize, usize)> {
        for &(row, bucket) in ops {
            let op_id = self.next_op;
            self.next_op += 1;
            self.checksums[bucket] = self.checksums[bucket].wrapping_add(op_checksum(op_id));
            self.counts[bucket] += 1;
            assigned.push((op_id, row, bucket));
        }
        assigned
    }

    /// After `distinct_rows(n)` was applied: a checkpoint_diff, then every
    /// op of the buckets again (same op ids and checksums, which the client
    /// then holds twice) followed by `changed` ops changing rows.
    fn resend(&mut self, n: usize, changed: usize) {
        let buckets = self.buckets.len();
        let resent: Vec<(usize, usize, usize)> = (0..n).map(|i| (i + 1, i, i % buckets)).collect();
        for &(op_id, _, bucket) in &resent {
            self.checksums[bucket] = self.checksums[bucket].wrapping_add(op_checksum(op_id));
            self.counts[bucket] += 1;
        }
        let stride = (n / changed).max(1);
        let ops: Vec<(usize, usize)> = (0..changed).map(|k| (k * stride, (k * stride) % buckets)).collect();
        let stream = Stream { buckets: self.buckets.clone(), ops: self.assign(&ops, resent) };
        let checkpoint = stream.checkpoint(self.next_op - 1, &self.checksums, &self.counts);
        let diff = json!({"checkpoint_diff": {"last_op_id": (self.next_op - 1).to_string(), "write_checkpoint": null,
            "updated_buckets": checkpoint["checkpoint"]["buckets"], "removed_buckets": []}});
        self.tx(|d| d.control("line_text", Some(&diff.to_string())));
        self.send_data(&stream);
        self.last_checkpoint = Some(checkpoint);
    }

    /// The stream's ops as data lines of up to 1000 ops, bucket by bucket.
    fn send_data(&self, stream: &Stream) {
        for (b, (name, _)) in stream.buckets.iter().enumerate() {
            let ops: Vec<Value> =
                stream.ops.iter().filter(|o| o.2 == b).map(|&(id, row, _)| op(id, row, name)).collect();
            for chunk in ops.chunks(LINE_OPS) {
                let line = json!({"data": {"bucket": name, "has_more": false, "after": null,
                                           "next_after": null, "data": chunk}});
                self.tx(|d| d.control("line_text", Some(&line.to_string())));
            }
        }
    }

    fn complete(&self) {
        let line = json!({"checkpoint_complete": {"last_op_id": (self.next_op - 1).to_string()}});
        let out = self.tx(|d| d.control("line_text", Some(&line.to_string())));
        assert!(out.contains("DidCompleteSync"), "checkpoint not applied: {out}");
    }
}

fn ten_buckets(n: usize) -> Vec<(String, i32)> {
    (0..n).map(|i| (format!("bucket{i}"), 3)).collect()
}

fn distinct_rows(d: &mut Driver, n: usize, buckets: usize) {
    d.set_buckets(ten_buckets(buckets));
    let ops: Vec<(usize, usize)> = (0..n).map(|i| (i, i % buckets)).collect();
    d.send(&ops);
}

fn changed_share(d: &mut Driver, n: usize, percent: usize) {
    distinct_rows(d, n, 10);
    d.complete();
    let changed = (n * percent / 100).max(1);
    let stride = (n / changed).max(1);
    let ops: Vec<(usize, usize)> = (0..changed).map(|k| (k * stride, (k * stride) % 10)).collect();
    d.send(&ops);
}

/// After an initial sync of `n` distinct rows, one checkpoint changing
/// `rows` (each in its own bucket, as first synced).
fn rows_changed(d: &mut Driver, n: usize, rows: &[usize]) {
    distinct_rows(d, n, 10);
    d.complete();
    let ops: Vec<(usize, usize)> = rows.iter().map(|&row| (row, row % 10)).collect();
    d.send(&ops);
}

fn full_complete(_: usize) -> Value {
    json!({"checkpoint_complete": {"last_op_id": "9223372036854775807"}})
}

fn workloads() -> Vec<Workload> {
    vec![
        Workload {
            name: "initial",
            description: "initial sync, N ops, 10 buckets, distinct rows",
            prepare: |d, n| distinct_rows(d, n, 10),
            complete: full_complete,
        },
        Workload {
            name: "duplicates",
            description: "initial sync, N ops over N/100 distinct rows",
            prepare: |d, n| {
                d.set_buckets(ten_buckets(10));
                let rows = (n / 100).max(10);
                let ops: Vec<(usize, usize)> = (0..n).map(|i| (i % rows, (i % rows) % 10)).collect();
                d.send(&ops);
            },
            complete: full_complete,
        },
        Workload {
            name: "resync",
            description: "resync: every bucket re-applied over full tables",
            prepare: |d, n| {
                distinct_rows(d, n, 10);
                d.complete();
                // What powersync_trigger_resync leaves behind: every bucket
                // to be applied again (oplite also resets its stats).
                d.tx(|d| {
                    d.db.execute_batch("UPDATE ps_buckets SET last_applied_op = 0").unwrap();
                    let _ = d.db.execute_batch("UPDATE ps_buckets SET oplite_pending_ops = oplite_op_count");
                });
                let checkpoint = d.last_checkpoint.clone().unwrap();
                d.tx(|d| d.control("line_text", Some(&checkpoint.to_string())));
            },
            complete: full_complete,
        },
        Workload {
            name: "changed_1pct",
            description: "1% of rows changed",
            prepare: |d, n| changed_share(d, n, 1),
            complete: full_complete,
        },
        Workload {
            name: "changed_50pct",
            description: "50% of rows changed",
            prepare: |d, n| changed_share(d, n, 50),
            complete: full_complete,
        },
        Workload {
            name: "resent_1pct",
            description: "every applied op re-sent (same op ids) plus 1% changed",
            prepare: |d, n| {
                distinct_rows(d, n, 10);
                d.complete();
                d.resend(n, (n / 100).max(1));
            },
            complete: full_complete,
        },
        Workload {
            name: "single_op",
            description: "one op on an N-row database",
            prepare: |d, n| rows_changed(d, n, &[n / 2]),
            complete: full_complete,
        },
        Workload {
            name: "ten_ops",
            description: "10 ops on an N-row database",
            // Ten changed rows spread over the table, in one checkpoint.
            prepare: |d, n| rows_changed(d, n, &(0..10).map(|k| (k * (n / 10) + n / 20) % n).collect::<Vec<_>>()),
            complete: full_complete,
        },
        Workload {
            name: "buckets_1000",
            description: "initial sync, N ops over 1000 buckets",
            prepare: |d, n| distinct_rows(d, n, 1000),
            complete: full_complete,
        },
        Workload {
            name: "partial_p0_5pct",
            description: "partial checkpoint, priority 0 holding 5% of rows",
            prepare: |d, n| {
                let mut buckets = ten_buckets(10);
                buckets.push(("priority0".into(), 0));
                d.set_buckets(buckets);
                let ops: Vec<(usize, usize)> =
                    (0..n).map(|i| (i, if i % 20 == 0 { 10 } else { i % 10 })).collect();
                d.send(&ops);
            },
            complete: |_| json!({"partial_checkpoint_complete": {"last_op_id": "9223372036854775807", "priority": 0}}),
        },
    ]
}

fn open(core: Core, path: &Path) -> Connection {
    let db = Connection::open_with_flags(path, OpenFlags::default()).unwrap();
    db.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;").unwrap();
    core.install(&db).unwrap();
    db
}

/// The prepared database of `workload` for `core` and `table`.
fn prepared_path(workload: &Workload, core: Core, table: Table, dir: &Path) -> PathBuf {
    dir.join(format!("{}-{}-{}.db", workload.name, core.name(), table.name()))
}

fn prepare(workload: &Workload, core: Core, table: Table, n: usize, dir: &Path) -> PathBuf {
    let path = prepared_path(workload, core, table, dir);
    let _ = std::fs::remove_file(&path);
    let db = open(core, &path);
    db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
    if let Some(schema) = table.schema() {
        db.execute_batch("BEGIN").unwrap();
        db.query_row("SELECT powersync_replace_schema(?1)", [schema.to_string()], |_| Ok(())).unwrap();
        db.execute_batch("COMMIT").unwrap();
    }
    let mut driver = Driver {
        db,
        buckets: Vec::new(),
        checksums: Vec::new(),
        counts: Vec::new(),
        next_op: 1,
        last_checkpoint: None,
    };
    driver.tx(|d| d.control("start", table.start_payload().as_deref()));
    (workload.prepare)(&mut driver, n);
    // Remember the checkpoint to replay in the measured child.
    let checkpoint = driver.last_checkpoint.clone().unwrap();
    std::fs::write(path.with_extension("checkpoint.json"), checkpoint.to_string()).unwrap();
    driver.db.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);").unwrap();
    path
}

/// Runs in the child: replay the checkpoint, time the completion, then
/// read the rows it left.
fn child(workload: &str, core: &str, table: &str, strategy: &str, path: &Path) {
    let workload = workloads().into_iter().find(|w| w.name == workload).unwrap();
    let core = Core::parse(core).unwrap_or_else(|| panic!("unknown core {core:?}"));
    let table = Table::parse(table);
    counting_vfs::register_as_default();
    let db = open(core, path);
    if core == Core::Oplite {
        db.query_row("SELECT oplite_sync_local_strategy(?1)", [strategy], |_| Ok(())).unwrap();
    }
    let checkpoint = std::fs::read_to_string(path.with_extension("checkpoint.json")).unwrap();
    let control = |op: &str, payload: Option<&str>| -> String {
        db.execute_batch("BEGIN").unwrap();
        let out = db
            .query_row("SELECT powersync_control(?1, ?2)", (op, payload), |r| r.get::<_, String>(0))
            .unwrap();
        db.execute_batch("COMMIT").unwrap();
        out
    };
    control("start", table.start_payload().as_deref());
    control("line_text", Some(&checkpoint));
    let line = (workload.complete)(0).to_string();
    counting_vfs::reset();
    let start = Instant::now();
    let out = control("line_text", Some(&line));
    let elapsed = start.elapsed().as_secs_f64() * 1000.0;
    let temp = counting_vfs::temp_bytes_written();
    let max_rss_kb = max_rss_kb();
    assert!(out.contains("UpdateSyncStatus") || out.contains("DidCompleteSync"), "not applied: {out}");
    let strategy_used = if core == Core::Oplite {
        db.query_row("SELECT oplite_last_apply()", [], |r| r.get::<_, Option<String>>(0)).unwrap()
    } else {
        None
    };
    let strategy_used = strategy_used
        .and_then(|s| serde_json::from_str::<Value>(&s).ok())
        .and_then(|v| v["strategy"].as_str().map(str::to_owned))
        .unwrap_or_default();
    if table == Table::Direct {
        let kind: String =
            db.query_row("SELECT type FROM sqlite_master WHERE name = ?1", [ROW_TYPE], |r| r.get(0)).unwrap();
        assert_eq!(kind, "table", "the direct table {ROW_TYPE} is a {kind}");
    }
    let (rows, sum): (i64, f64) = db.query_row(&table.rows_sql(), [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    println!(
        "{}",
        json!({"ms": elapsed, "temp_bytes": temp, "max_rss_kb": max_rss_kb, "strategy": strategy_used,
               "rows": rows, "sum_n": sum})
    );
}

fn max_rss_kb() -> i64 {
    // /proc/self/status VmHWM: peak resident set size.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    values[values.len() / 2]
}

/// One variant's runs of a workload.
#[derive(Clone, Default)]
struct Measured {
    times: Vec<f64>,
    temp: i64,
    rss: i64,
    picked: String,
    /// The rows the runs left: (count, sum of `n`).
    rows: Option<(i64, f64)>,
}

/// One run of `variant` on a copy of its prepared database, in a child.
fn run_child(exe: &Path, workload: &Workload, variant: &Variant, prepared: &Path, dir: &Path, into: &mut Measured) {
    let copy = dir.join("run.db");
    std::fs::copy(prepared, &copy).unwrap();
    std::fs::copy(prepared.with_extension("checkpoint.json"), copy.with_extension("checkpoint.json")).unwrap();
    let mut command = Command::new(exe);
    command.args(["--child", workload.name, variant.core.name(), variant.table.name(), variant.strategy]).arg(&copy);
    if let Core::Reference(reference) = variant.core {
        reference.pass_to(&mut command).unwrap();
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "{} {}: {}", workload.name, variant.label, String::from_utf8_lossy(&out.stderr));
    let report: Value =
        serde_json::from_slice(out.stdout.split(|b| *b == b'\n').find(|l| l.starts_with(b"{")).unwrap()).unwrap();
    into.times.push(report["ms"].as_f64().unwrap());
    into.temp = into.temp.max(report["temp_bytes"].as_i64().unwrap());
    into.rss = into.rss.max(report["max_rss_kb"].as_i64().unwrap());
    into.picked = report["strategy"].as_str().unwrap_or_default().to_owned();
    let rows = (report["rows"].as_i64().unwrap(), report["sum_n"].as_f64().unwrap());
    assert!(
        into.rows.is_none_or(|r| r == rows),
        "{} {}: runs left different rows: {:?} and {rows:?}",
        workload.name,
        variant.label,
        into.rows
    );
    into.rows = Some(rows);
    let _ = std::fs::remove_file(&copy);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(&args[i + 1], &args[i + 2], &args[i + 3], &args[i + 4], Path::new(&args[i + 5]));
        return;
    }
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("usage: sync_local [--runs 5] [--ops 1000000] [--only WORKLOAD] [--reuse] [--direct]");
        println!("  --direct: oplite's typed table, oplite's direct table (each strategy) and core 0.5.4's direct table");
        println!("  workloads: {}", workloads().iter().map(|w| w.name).collect::<Vec<_>>().join(", "));
        return;
    }
    let flag = |name: &str| args.iter().position(|a| a == name).map(|i| args[i + 1].clone());
    let runs: usize = flag("--runs").and_then(|v| v.parse().ok()).unwrap_or(5);
    let n: usize = flag("--ops").and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let only = flag("--only");
    let direct = args.iter().any(|a| a == "--direct");
    let (variants, ratios) = if direct { (DIRECT_VARIANTS, DIRECT_RATIOS) } else { (UNTYPED_VARIANTS, UNTYPED_RATIOS) };
    let dir = std::env::temp_dir().join("oplite-bench-sync-local");
    if !args.iter().any(|a| a == "--reuse") {
        // Prepared databases depend on the build: start afresh unless told.
        let _ = std::fs::remove_dir_all(&dir);
    }
    std::fs::create_dir_all(&dir).unwrap();
    let exe = std::env::current_exe().unwrap();

    let tables = if direct {
        format!("{ROW_TYPE} a table of the schema (typed) or a direct table; schema sent with start")
    } else {
        "no schema (rows in ps_untyped)".to_owned()
    };
    println!(
        "sync_local apply, N = {n} ops, {tables}, median of {runs} runs \
         (ms; temp = temp-file KiB written; RSS = child peak MiB)\n"
    );
    let labels: Vec<&str> = variants.iter().map(|v| v.label).chain(ratios.iter().map(|r| r.0)).collect();
    println!("| workload | {} |", labels.join(" | "));
    println!("|---|{}", "---|".repeat(labels.len()));
    for workload in workloads() {
        if only.as_deref().is_some_and(|o| o != workload.name) {
            continue;
        }
        let prepared: Vec<PathBuf> = variants.iter().map(|v| prepare_cached(&workload, v.core, v.table, n, &dir)).collect();
        let mut measured = vec![Measured::default(); variants.len()];
        // Runs go round-robin over the variants, so a change in the load of
        // the machine hits them all alike. Each round starts one variant
        // later, so no variant always runs right after the same other one
        // (a heavy run's writeback slows the next).
        for run in 0..runs {
            for v in (0..variants.len()).map(|i| (i + run) % variants.len()) {
                run_child(&exe, &workload, &variants[v], &prepared[v], &dir, &mut measured[v]);
            }
        }
        // Every column must leave the same rows.
        for (variant, m) in variants.iter().zip(&measured).skip(1) {
            assert_eq!(
                m.rows, measured[0].rows,
                "{}: {} left other rows (count, sum of n) than {}",
                workload.name, variant.label, variants[0].label
            );
        }
        let mut cells = Vec::new();
        let mut medians = Vec::new();
        for (variant, m) in variants.iter().zip(&mut measured) {
            let median = median(&mut m.times);
            medians.push(median);
            let picked = if variant.strategy == "auto" { format!(" ({})", m.picked) } else { String::new() };
            cells.push(format!("{median:.1}{picked}<br>temp {} KiB, RSS {} MiB", m.temp / 1024, m.rss / 1024));
        }
        for (_, numerator, denominators) in ratios {
            let fastest = denominators.iter().map(|&d| medians[d]).fold(f64::INFINITY, f64::min);
            cells.push(format!("{:.2}x", medians[*numerator] / fastest));
        }
        println!("| {} | {} |", workload.description.replace('N', &n.to_string()), cells.join(" | "));
    }
    println!(
        "\nEvery column of a row left the same rows (their count and the sum of n){}.",
        if direct { "; the direct tables were checked to be tables" } else { "" }
    );
}

/// Prepares each (workload, core, table) once per process.
fn prepare_cached(workload: &Workload, core: Core, table: Table, n: usize, dir: &Path) -> PathBuf {
    let path = prepared_path(workload, core, table, dir);
    let marker = path.with_extension(format!("ready-{n}"));
    if marker.exists() && path.exists() {
        return path;
    }
    let started = Instant::now();
    let path = prepare(workload, core, table, n, dir);
    std::fs::write(&marker, "").unwrap();
    eprintln!("prepared {} for {} ({}) in {:.1}s", workload.name, core.name(), table.name(), started.elapsed().as_secs_f64());
    path
}
