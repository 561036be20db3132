//! `oplite-steady`: the steady-state benchmark (issue 23).
//!
//! Apps spend most of their life on small syncs, not on the first one. This
//! benchmark builds a database of `--rows` synced rows (the published
//! benchmark shape: `thisisatable`, 10 buckets), then feeds it
//! `--checkpoints` checkpoints of 1 to `--max-ops` ops each, as a live
//! connection gets them: a `checkpoint_diff` naming the buckets that moved,
//! one data line per such bucket, and `checkpoint_complete`. The ops are
//! updates of existing rows (80%), new rows (10%) and removals (10%), drawn
//! from a fixed seed, so every engine gets the same stream. Each call runs
//! in its own `BEGIN IMMEDIATE` transaction on a WAL file database, as the
//! SDKs and the `oplite` host do.
//!
//! The latency of a checkpoint is the time from the start of its
//! `checkpoint_diff` call to the commit of its `checkpoint_complete`; the
//! table shows p50, p99 and the maximum of each run, medians over runs that
//! alternate the engines. Every run is a child process on a fresh database,
//! and checks at the end that the app's table holds exactly the rows the
//! stream left (so a checkpoint that failed its checksums, or applied
//! nothing, fails the run).
//!
//! The engines: `oplite`; `reference` (core 0.5.4, the specification) and
//! `reference-053` (core 0.5.3, what the JS SDKs bundle), found through
//! `$REFERENCE_CORE` / `$REFERENCE_CORE_053` or `scripts/reference-core.sh`;
//! and, on request, `oplite-direct` and `reference-direct`, the same with
//! the table declared `"direct": true` (core 0.5.3 has no direct tables).
//! Ratios compare with 0.5.4 and 0.5.3 on the same kind of table.
//!
//! ```text
//! cargo build --release -p oplite-cli --bin oplite-steady
//! target/release/oplite-steady [--rows 1000000] [--checkpoints 1000] [--max-ops 100] [--runs 3]
//!     [--engines oplite,reference,reference-053] (also oplite-direct,reference-direct)
//! ```

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Instant;

use oplite_test_data::lines::encode;
use oplite_test_data::stream::ROW_TYPE;
use oplite_test_data::{Encoding, StreamSpec};
use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;
use serde_json::{json, Value};

#[path = "../bench_shared.rs"]
mod bench_shared;
#[path = "../bench_stream.rs"]
#[allow(dead_code)] // the reconnect and the round trip's echo are oplite-small's
mod bench_stream;
use bench_shared::{median, remove_db, with_direct_tables, Reference};
use bench_stream::Stream;

/// Every engine, in table order.
const ENGINES: [&str; 5] = ["oplite", "oplite-direct", "reference", "reference-053", "reference-direct"];
/// The engines run unless `--engines` names others.
const DEFAULT_ENGINES: [&str; 3] = ["oplite", "reference", "reference-053"];

/// The reference core `engine` loads, if any.
fn reference_of(engine: &str) -> Option<Reference> {
    match engine {
        "reference" | "reference-direct" => Some(Reference::V054),
        "reference-053" => Some(Reference::V053),
        _ => None,
    }
}

/// The engine whose figures `engine`'s ratio against `core` divides by: the
/// same kind of table on that core (none: 0.5.3 has no direct tables).
fn baseline(engine: &str, core: Reference) -> Option<&'static str> {
    match (engine.ends_with("-direct"), core) {
        (false, Reference::V054) => Some("reference"),
        (false, Reference::V053) => Some("reference-053"),
        (true, Reference::V054) => Some("reference-direct"),
        (true, Reference::V053) => None,
    }
}

/// The table's name for an engine.
fn label(engine: &str) -> String {
    match engine {
        "oplite-direct" => "oplite, direct table".into(),
        "reference-direct" => format!("{}, direct table", Reference::V054.label()),
        other => reference_of(other).map_or_else(|| other.to_owned(), Reference::label),
    }
}

fn main() -> ExitCode {
    bench_shared::main("oplite-steady", parent, child)
}

/// What one run measures.
struct Run {
    initial_seconds: f64,
    latencies_ms: Vec<f64>,
}

impl Run {
    fn percentile(&self, p: f64) -> f64 {
        let mut sorted = self.latencies_ms.clone();
        sorted.sort_by(f64::total_cmp);
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1]
    }
}

fn parent(args: &[String]) -> Result<(), String> {
    let (mut rows, mut checkpoints, mut max_ops, mut runs) = (1_000_000u64, 1_000u64, 100u64, 3usize);
    let mut engines: Vec<String> = DEFAULT_ENGINES.iter().map(|e| e.to_string()).collect();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("{arg} needs a value"));
        let number = |v: String| v.replace('_', "").parse::<u64>().map_err(|e| format!("{arg}: {e}"));
        match arg.as_str() {
            "--rows" => rows = number(value()?)?,
            "--checkpoints" => checkpoints = number(value()?)?,
            "--max-ops" => max_ops = number(value()?)?.max(1),
            "--runs" => runs = number(value()?)?.max(1) as usize,
            "--engines" => engines = value()?.split(',').map(|e| e.trim().to_owned()).collect(),
            "-h" | "--help" => {
                println!("usage: oplite-steady [--rows 1000000] [--checkpoints 1000] [--max-ops 100] [--runs 3] [--engines {}]", DEFAULT_ENGINES.join(","));
                println!("engines: {} (reference is core 0.5.4; the -direct ones declare the table \"direct\": true; core 0.5.3 has no direct tables)", ENGINES.join(", "));
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if let Some(unknown) = engines.iter().find(|e| !ENGINES.contains(&e.as_str())) {
        return Err(format!("--engines: unknown engine {unknown:?} (known: {})", ENGINES.join(", ")));
    }
    let mut references: Vec<Reference> = engines.iter().filter_map(|e| reference_of(e)).collect();
    references.sort();
    references.dedup();
    let dir = std::env::temp_dir().join(format!("oplite-steady-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut results: BTreeMap<&str, Vec<Run>> = BTreeMap::new();
    for i in 0..runs {
        for engine in &engines {
            let db = dir.join(format!("{engine}-{i}.db"));
            let mut command = Command::new(&exe);
            command.args(["--child", engine]).arg(&db).args([rows, checkpoints, max_ops].map(|n| n.to_string()));
            for reference in &references {
                reference.pass_to(&mut command)?;
            }
            let output = command.output().map_err(|e| e.to_string())?;
            remove_db(&db);
            if !output.status.success() {
                return Err(format!("{engine} run {}: {}", i + 1, String::from_utf8_lossy(&output.stderr).trim()));
            }
            let v: Value = serde_json::from_slice(&output.stdout).map_err(|e| e.to_string())?;
            let run = Run {
                initial_seconds: v["initial"].as_f64().unwrap_or(0.0),
                latencies_ms: v["latencies_ms"].as_array().into_iter().flatten().filter_map(Value::as_f64).collect(),
            };
            eprintln!(
                "{engine:<16} run {}: initial sync {:.2} s, p50 {:.2} ms, p99 {:.2} ms",
                i + 1,
                run.initial_seconds,
                run.percentile(50.0),
                run.percentile(99.0)
            );
            let key = ENGINES.iter().find(|e| **e == engine.as_str()).expect("checked above");
            results.entry(key).or_default().push(run);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    print_table(&results, rows, checkpoints, max_ops, runs);
    Ok(())
}

fn print_table(results: &BTreeMap<&str, Vec<Run>>, rows: u64, checkpoints: u64, max_ops: u64, runs: usize) {
    println!(
        "Steady state: {} synced rows, then {checkpoints} checkpoints of 1 to {max_ops} ops (80% updates, 10% new rows, \
         10% removals), each a checkpoint_diff, a data line per bucket and checkpoint_complete, one transaction per call, \
         WAL file database. Latency from the checkpoint_diff call to the applied checkpoint; medians of {runs} runs.\n",
        oplite_cli::progress::format_count(rows)
    );
    println!(
        "| engine | p50 (ms) | p99 (ms) | max (ms) | mean (ms) | p50 vs 0.5.4 | p99 vs 0.5.4 | p50 vs 0.5.3 | p99 vs 0.5.3 | initial sync (s) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let stat = |runs: &[Run], f: &dyn Fn(&Run) -> f64| median(runs.iter().map(f).collect());
    let mean = |r: &Run| r.latencies_ms.iter().sum::<f64>() / r.latencies_ms.len().max(1) as f64;
    let p50 = |r: &Run| r.percentile(50.0);
    let p99 = |r: &Run| r.percentile(99.0);
    for engine in ENGINES {
        let Some(runs) = results.get(engine) else { continue };
        let ratio = |core: Reference, f: &dyn Fn(&Run) -> f64| match baseline(engine, core).and_then(|b| results.get(b)) {
            Some(base) => format!("{:.2}x", stat(runs, f) / stat(base, f)),
            None => "-".into(),
        };
        println!(
            "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {} | {:.2} |",
            label(engine),
            stat(runs, &p50),
            stat(runs, &p99),
            stat(runs, &|r| r.percentile(100.0)),
            stat(runs, &mean),
            ratio(Reference::V054, &p50),
            ratio(Reference::V054, &p99),
            ratio(Reference::V053, &p50),
            ratio(Reference::V053, &p99),
            stat(runs, &|r| r.initial_seconds),
        );
    }
    println!("\nratios: the row's figure divided by the reference core's on the same kind of table (a direct table's by 0.5.4's direct table; 0.5.3 has none).");
}

fn child(args: &[String]) -> Result<(), String> {
    let [engine, db, rows, checkpoints, max_ops] = args else {
        return Err("usage: --child ENGINE DB ROWS CHECKPOINTS MAX_OPS".into());
    };
    let number = |v: &str| v.parse::<u64>().map_err(|e| format!("{v:?}: {e}"));
    let (rows, checkpoints, max_ops) = (number(rows)?, number(checkpoints)?, number(max_ops)?);
    let db_path = PathBuf::from(db);
    remove_db(&db_path);
    let err = |e: rusqlite::Error| e.to_string();
    let conn = Connection::open(&db_path).map_err(err)?;
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())).map_err(err)?;
    conn.execute_batch("PRAGMA synchronous = NORMAL").map_err(err)?;
    match reference_of(engine) {
        Some(reference) => reference.load(&conn)?,
        None => oplite::register(&conn).map_err(|e| e.to_string())?,
    }
    let direct = engine.ends_with("-direct");
    let spec = StreamSpec::benchmark(rows);
    let schema = if direct { with_direct_tables(spec.schema()) } else { spec.schema() };
    conn.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").map_err(err)?;
    conn.execute_batch("BEGIN").map_err(err)?;
    conn.query_row("SELECT powersync_replace_schema(?1)", [schema.to_string()], |_| Ok(())).map_err(err)?;
    conn.execute_batch("COMMIT").map_err(err)?;
    // The schema goes with `start` too, as SDKs send it: core 0.5.4 applies
    // into a direct table only when `start`'s schema lists it.
    control(&conn, "start", SqlValue::Text(json!({ "schema": schema }).to_string()))?;

    let started = Instant::now();
    for line in spec.lines(Encoding::Json, &HashMap::new()) {
        let text = String::from_utf8(line).map_err(|e| e.to_string())?;
        control(&conn, "line_text", SqlValue::Text(text))?;
    }
    let initial = started.elapsed().as_secs_f64();

    let mut stream = Stream::new(spec, 23);
    let mut latencies_ms = Vec::with_capacity(checkpoints as usize);
    for i in 0..checkpoints {
        let lines: Vec<String> = stream.checkpoint(max_ops).iter().map(|l| String::from_utf8(encode(Encoding::Json, l)).expect("JSON")).collect();
        let started = Instant::now();
        let mut last = Value::Null;
        for line in lines {
            last = control(&conn, "line_text", SqlValue::Text(line))?;
        }
        latencies_ms.push(started.elapsed().as_secs_f64() * 1e3);
        if last.to_string().contains("CloseSyncStream") {
            return Err(format!("checkpoint {} was not applied: {last}", i + 1));
        }
    }
    let kind: String =
        conn.query_row("SELECT type FROM sqlite_master WHERE name = ?1", [ROW_TYPE], |r| r.get(0)).map_err(err)?;
    if kind != if direct { "table" } else { "view" } {
        return Err(format!("{ROW_TYPE} is a {kind}"));
    }
    let visible: i64 = conn.query_row(&format!("SELECT count(*) FROM {ROW_TYPE}"), [], |r| r.get(0)).map_err(err)?;
    if visible as u64 != stream.live_rows() {
        return Err(format!("{visible} rows visible at the end, the stream left {}", stream.live_rows()));
    }
    println!("{}", json!({"initial": initial, "latencies_ms": latencies_ms}));
    Ok(())
}

/// One `powersync_control` call in its own transaction; its instructions.
fn control(conn: &Connection, op: &str, payload: SqlValue) -> Result<Value, String> {
    conn.execute_batch("BEGIN IMMEDIATE").map_err(|e| e.to_string())?;
    let result: rusqlite::Result<String> =
        conn.query_row("SELECT powersync_control(?1, ?2)", rusqlite::params![op, payload], |r| r.get(0));
    match result {
        Ok(text) => {
            conn.execute_batch("COMMIT").map_err(|e| e.to_string())?;
            serde_json::from_str(&text).map_err(|e| format!("powersync_control('{op}') answered {text:?}: {e}"))
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(format!("powersync_control('{op}'): {e}"))
        }
    }
}
