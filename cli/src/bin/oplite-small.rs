//! `oplite-small`: small syncs, one op at a time, at several database sizes.
//!
//! Apps spend most of their life on small syncs: one row changes on the
//! server and a checkpoint of one op arrives, or the app writes one row and
//! waits for the service to confirm it. This benchmark builds, for each
//! size and engine, a database of that many synced rows (the benchmark
//! stream, 10 buckets, on a WAL file with `synchronous=NORMAL`), then copies
//! it for each run and measures:
//!
//! - **one-op checkpoints**: a `checkpoint_diff`, the one data line and
//!   `checkpoint_complete`, each call in its own `BEGIN IMMEDIATE`
//!   transaction as the SDKs make them; the whole checkpoint, and
//!   `checkpoint_complete` (the apply) alone;
//! - **the local write's round trip**: the app inserts one row through the
//!   view (its own transaction), the upload reads the queue and clears it
//!   and records the write checkpoint the service gave it (one
//!   transaction), `completed_upload`, then the service's checkpoint that
//!   echoes the row and carries that write checkpoint, applied.
//!
//! The engines: `oplite`; `reference` (core 0.5.4) and `reference-053`
//! (core 0.5.3), found as `oplite-steady` finds them; and `sqlite`, the
//! floor: plain SQLite doing the writes a core cannot avoid, in the same
//! transactions: the op into an oplog keyed by bucket and row (replacing
//! the op it supersedes) and its bucket's row, then the app's row and the
//! bucket's applied mark; for the round trip also the queue entry written
//! and deleted. Runs alternate the engines; the table gives medians over
//! runs of each run's p50 and p99. Each run checks at the end that the
//! app's table holds the rows the stream left.
//!
//! ```text
//! cargo build --release -p oplite-cli --bin oplite-small
//! target/release/oplite-small [--sizes 10000,200000,1000000] [--checkpoints 300] [--round-trips 100] [--runs 3]
//!     [--engines oplite,reference,reference-053,sqlite]
//! ```

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

use oplite_test_data::lines::encode;
use oplite_test_data::stream::ROW_TYPE;
use oplite_test_data::{Encoding, StreamSpec};
use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection};
use serde_json::{json, Value};

#[path = "../bench_shared.rs"]
mod bench_shared;
#[path = "../bench_stream.rs"]
mod bench_stream;
#[path = "../bench_small/floor.rs"]
mod floor;
use bench_shared::{median, remove_db, Reference};
use bench_stream::{row_id, Stream};

/// Every engine, in table order.
const ENGINES: [&str; 4] = ["oplite", "reference", "reference-053", "sqlite"];
/// The seed of the ops after the first sync (as `oplite-steady`'s).
const SEED: u64 = 23;

fn reference_of(engine: &str) -> Option<Reference> {
    match engine {
        "reference" => Some(Reference::V054),
        "reference-053" => Some(Reference::V053),
        _ => None,
    }
}

fn label(engine: &str) -> String {
    match engine {
        "sqlite" => "plain SQLite (floor)".into(),
        other => reference_of(other).map_or_else(|| other.to_owned(), Reference::label),
    }
}

fn main() -> ExitCode {
    bench_shared::main("oplite-small", parent, child)
}

/// What one run measured, in milliseconds.
#[derive(Default)]
struct Run {
    checkpoint: Vec<f64>,
    complete: Vec<f64>,
    round_trip: Vec<f64>,
}

fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len().max(1)) - 1).copied().unwrap_or(f64::NAN)
}

struct Options {
    sizes: Vec<u64>,
    checkpoints: u64,
    round_trips: u64,
    runs: usize,
    engines: Vec<String>,
}

fn options(args: &[String]) -> Result<Option<Options>, String> {
    let mut o = Options {
        sizes: vec![10_000, 200_000, 1_000_000],
        checkpoints: 300,
        round_trips: 100,
        runs: 3,
        engines: ENGINES.iter().map(|e| e.to_string()).collect(),
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("{arg} needs a value"));
        let number = |v: &str| v.replace('_', "").parse::<u64>().map_err(|e| format!("{arg}: {v:?}: {e}"));
        match arg.as_str() {
            "--sizes" => o.sizes = value()?.split(',').map(|v| number(v.trim())).collect::<Result<_, _>>()?,
            "--checkpoints" => o.checkpoints = number(&value()?)?.max(1),
            "--round-trips" => o.round_trips = number(&value()?)?,
            "--runs" => o.runs = number(&value()?)?.max(1) as usize,
            "--engines" => o.engines = value()?.split(',').map(|e| e.trim().to_owned()).collect(),
            "-h" | "--help" => {
                println!("usage: oplite-small [--sizes 10000,200000,1000000] [--checkpoints 300] [--round-trips 100] [--runs 3] [--engines {}]", ENGINES.join(","));
                return Ok(None);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if let Some(unknown) = o.engines.iter().find(|e| !ENGINES.contains(&e.as_str())) {
        return Err(format!("--engines: unknown engine {unknown:?} (known: {})", ENGINES.join(", ")));
    }
    Ok(Some(o))
}

fn parent(args: &[String]) -> Result<(), String> {
    let Some(o) = options(args)? else { return Ok(()) };
    let mut references: Vec<Reference> = o.engines.iter().filter_map(|e| reference_of(e)).collect();
    references.sort();
    references.dedup();
    let dir = std::env::temp_dir().join(format!("oplite-small-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let run_child = |args: Vec<String>| -> Result<Value, String> {
        let mut command = Command::new(&exe);
        command.arg("--child").args(&args);
        for reference in &references {
            reference.pass_to(&mut command)?;
        }
        let output = command.output().map_err(|e| e.to_string())?;
        if !output.status.success() {
            return Err(format!("{}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()));
        }
        serde_json::from_slice(&output.stdout).map_err(|e| e.to_string())
    };
    println!(
        "Small syncs: one-op checkpoints ({} a run) and local writes' round trips ({} a run), WAL file database, \
         synchronous=NORMAL, one transaction per call; medians of {} runs of each run's p50 and p99 (ms).\n",
        o.checkpoints, o.round_trips, o.runs
    );
    for &rows in &o.sizes {
        let mut bases = BTreeMap::new();
        for engine in &o.engines {
            let base = dir.join(format!("{engine}-{rows}.db"));
            let built = run_child(vec!["build".into(), engine.clone(), path_arg(&base), rows.to_string()])?;
            eprintln!("{engine:<14} {rows} rows built in {:.1} s", built["seconds"].as_f64().unwrap_or(0.0));
            bases.insert(engine.as_str(), base);
        }
        let mut results: BTreeMap<&str, Vec<Run>> = BTreeMap::new();
        for i in 0..o.runs {
            for engine in &o.engines {
                let db = dir.join(format!("{engine}-run.db"));
                std::fs::copy(&bases[engine.as_str()], &db).map_err(|e| e.to_string())?;
                let v = run_child(vec![
                    "measure".into(),
                    engine.clone(),
                    path_arg(&db),
                    rows.to_string(),
                    o.checkpoints.to_string(),
                    o.round_trips.to_string(),
                ]);
                remove_db(&db);
                let v = v?;
                let list = |key: &str| v[key].as_array().into_iter().flatten().filter_map(Value::as_f64).collect::<Vec<f64>>();
                let run = Run { checkpoint: list("checkpoint"), complete: list("complete"), round_trip: list("round_trip") };
                eprintln!(
                    "{engine:<14} {rows} rows, run {}: checkpoint p50 {:.3} ms, complete p50 {:.3} ms, round trip p50 {:.3} ms",
                    i + 1,
                    percentile(&run.checkpoint, 50.0),
                    percentile(&run.complete, 50.0),
                    percentile(&run.round_trip, 50.0)
                );
                let key = ENGINES.iter().find(|e| **e == engine.as_str()).expect("checked above");
                results.entry(key).or_default().push(run);
            }
        }
        for base in bases.values() {
            remove_db(base);
        }
        print_table(rows, &results);
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn path_arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

fn print_table(rows: u64, results: &BTreeMap<&str, Vec<Run>>) {
    println!("{} synced rows:\n", oplite_cli::progress::format_count(rows));
    println!("| engine | checkpoint p50 | p99 | checkpoint_complete p50 | p99 | round trip p50 | p99 | checkpoint vs 0.5.4 | complete vs 0.5.4 | round trip vs 0.5.4 |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    type Pick = fn(&Run) -> &Vec<f64>;
    let picks: [Pick; 3] = [|r| &r.checkpoint, |r| &r.complete, |r| &r.round_trip];
    let stat = |runs: &[Run], pick: Pick, p: f64| median(runs.iter().map(|r| percentile(pick(r), p)).collect());
    for engine in ENGINES {
        let Some(runs) = results.get(engine) else { continue };
        let mut cells = Vec::new();
        for pick in picks {
            cells.push(format!("{:.3}", stat(runs, pick, 50.0)));
            cells.push(format!("{:.3}", stat(runs, pick, 99.0)));
        }
        for pick in picks {
            cells.push(match results.get("reference") {
                Some(base) => format!("{:.2}x", stat(runs, pick, 50.0) / stat(base, pick, 50.0)),
                None => "-".into(),
            });
        }
        println!("| {} | {} |", label(engine), cells.join(" | "));
    }
    println!("\nratios: p50 divided by core 0.5.4's.\n");
}

fn child(args: &[String]) -> Result<(), String> {
    let number = |v: &str| v.parse::<u64>().map_err(|e| format!("{v:?}: {e}"));
    match args {
        [mode, engine, db, rows] if mode == "build" => {
            let started = Instant::now();
            build(engine, Path::new(db), number(rows)?)?;
            println!("{}", json!({"seconds": started.elapsed().as_secs_f64()}));
            Ok(())
        }
        [mode, engine, db, rows, checkpoints, round_trips] if mode == "measure" => {
            let run = measure(engine, Path::new(db), number(rows)?, number(checkpoints)?, number(round_trips)?)?;
            println!("{}", json!({"checkpoint": run.checkpoint, "complete": run.complete, "round_trip": run.round_trip}));
            Ok(())
        }
        _ => Err("usage: --child build ENGINE DB ROWS | --child measure ENGINE DB ROWS CHECKPOINTS ROUND_TRIPS".into()),
    }
}

fn err(e: rusqlite::Error) -> String {
    e.to_string()
}

/// `db` opened as the SDKs open it, with `engine` loaded.
fn open(engine: &str, db: &Path) -> Result<Connection, String> {
    let conn = Connection::open(db).map_err(err)?;
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())).map_err(err)?;
    conn.execute_batch("PRAGMA synchronous = NORMAL").map_err(err)?;
    match reference_of(engine) {
        Some(reference) => reference.load(&conn)?,
        None if engine == "oplite" => oplite::register(&conn).map_err(|e| e.to_string())?,
        None => {}
    }
    Ok(conn)
}

/// A database of `rows` synced rows, its WAL checkpointed into the file.
fn build(engine: &str, db: &Path, rows: u64) -> Result<(), String> {
    remove_db(db);
    let conn = open(engine, db)?;
    let spec = StreamSpec::benchmark(rows);
    if engine == "sqlite" {
        floor::build(&conn, &spec).map_err(err)?;
    } else {
        let schema = spec.schema();
        conn.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").map_err(err)?;
        conn.execute_batch("BEGIN").map_err(err)?;
        conn.query_row("SELECT powersync_replace_schema(?1)", [schema.to_string()], |_| Ok(())).map_err(err)?;
        conn.execute_batch("COMMIT").map_err(err)?;
        let mut core = Core { conn: &conn };
        core.control("start", SqlValue::Text(json!({ "schema": schema }).to_string()))?;
        for line in spec.lines(Encoding::Json, &HashMap::new()) {
            core.control("line_text", SqlValue::Text(String::from_utf8(line).map_err(|e| e.to_string())?))?;
        }
        core.control("stop", SqlValue::Null)?;
    }
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).map_err(err)?;
    conn.close().map_err(|(_, e)| err(e))
}

/// A core on a connection: one call per transaction, as the SDKs call it.
struct Core<'c> {
    conn: &'c Connection,
}

impl Core<'_> {
    fn tx<T>(&self, body: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, String> {
        self.conn.prepare_cached("BEGIN IMMEDIATE").and_then(|mut s| s.execute([])).map_err(err)?;
        match body(self.conn) {
            Ok(value) => {
                self.conn.prepare_cached("COMMIT").and_then(|mut s| s.execute([])).map_err(err)?;
                Ok(value)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e.to_string())
            }
        }
    }

    /// `powersync_control(op, payload)`; its instructions.
    fn control(&mut self, op: &str, payload: SqlValue) -> Result<Value, String> {
        let text: String = self.tx(|c| {
            c.prepare_cached("SELECT powersync_control(?1, ?2)")?.query_row(params![op, payload], |r| r.get(0))
        })?;
        let instructions: Value = serde_json::from_str(&text).map_err(|e| format!("powersync_control('{op}'): {e}"))?;
        if op != "stop" && text.contains("CloseSyncStream") {
            return Err(format!("powersync_control('{op}') closed the stream: {text}"));
        }
        Ok(instructions)
    }

    /// Sends a checkpoint's lines; the time of the last call (the
    /// completion, which applies it).
    fn checkpoint(&mut self, lines: &[Value]) -> Result<f64, String> {
        let mut last = 0.0;
        for line in lines {
            let text = String::from_utf8(encode(Encoding::Json, line)).expect("JSON");
            let started = Instant::now();
            self.control("line_text", SqlValue::Text(text))?;
            last = started.elapsed().as_secs_f64() * 1e3;
        }
        Ok(last)
    }
}

fn measure(engine: &str, db: &Path, rows: u64, checkpoints: u64, round_trips: u64) -> Result<Run, String> {
    let conn = open(engine, db)?;
    let mut stream = Stream::new(StreamSpec::benchmark(rows), SEED);
    let mut run = Run::default();
    if engine == "sqlite" {
        floor::measure(&conn, &mut stream, checkpoints, round_trips, &mut run).map_err(err)?;
    } else {
        let mut core = Core { conn: &conn };
        core.control("start", SqlValue::Text(json!({ "schema": StreamSpec::benchmark(rows).schema() }).to_string()))?;
        core.checkpoint(&stream.reconnect())?;
        for _ in 0..checkpoints {
            let lines = stream.checkpoint(1);
            let started = Instant::now();
            run.complete.push(core.checkpoint(&lines)?);
            run.checkpoint.push(started.elapsed().as_secs_f64() * 1e3);
        }
        for i in 0..round_trips {
            let row = stream.new_row();
            let data = format!("{{\"n\":{i}}}");
            let write_checkpoint = i as i64 + 1;
            let started = Instant::now();
            core.tx(|c| c.prepare_cached(&format!("INSERT INTO {ROW_TYPE}(id, n) VALUES (?1, ?2)"))?.execute(params![row_id(row), i as i64]))?;
            core.tx(|c| {
                let queued: Vec<i64> = c.prepare_cached("SELECT id FROM ps_crud ORDER BY id LIMIT 100")?.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
                let last = *queued.last().expect("the write queued an entry");
                c.prepare_cached("DELETE FROM ps_crud WHERE id <= ?1")?.execute([last])?;
                // The write checkpoint the service gave the upload (both
                // reference cores take it this way).
                c.prepare_cached("SELECT powersync_control('target_checkpoint_request_id', ?1)")?
                    .query_row([write_checkpoint.to_string()], |_| Ok(()))
            })?;
            core.control("completed_upload", SqlValue::Null)?;
            core.checkpoint(&stream.echo(row, &data, write_checkpoint))?;
            run.round_trip.push(started.elapsed().as_secs_f64() * 1e3);
        }
        core.control("stop", SqlValue::Null)?;
        let queued: i64 = conn.query_row("SELECT count(*) FROM ps_crud", [], |r| r.get(0)).map_err(err)?;
        if queued != 0 {
            return Err(format!("{queued} uploads still queued at the end"));
        }
    }
    let visible: i64 = conn.query_row(&format!("SELECT count(*) FROM {ROW_TYPE}"), [], |r| r.get(0)).map_err(err)?;
    if visible as u64 != stream.live_rows() {
        return Err(format!("{visible} rows visible at the end, the stream left {}", stream.live_rows()));
    }
    Ok(run)
}
