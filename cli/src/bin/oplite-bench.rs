//! `oplite-bench`: the end-to-end benchmark of issue 6.
//!
//! For each stream size and line encoding it feeds the same generated lines
//! (the published sync_local benchmark shape: N ops over 10 buckets, lines
//! of 1000 ops) to
//!
//! - **oplite**: `powersync_control` of this build, registered on a bundled
//!   SQLite connection;
//! - **reference** (`reference`, also `reference-054`) and **reference
//!   0.5.3** (`reference-053`): the PowerSync cores 0.5.4 (the
//!   specification) and 0.5.3 (what the JS SDKs bundle), found through
//!   `$REFERENCE_CORE` / `$REFERENCE_CORE_053` or
//!   `scripts/reference-core.sh`, loaded into the same bundled SQLite with
//!   `load_extension`;
//! - **direct tables** (`oplite-direct`, `reference-direct`): oplite and
//!   core 0.5.4 with the shape's table declared `"direct": true`, so the
//!   rows land in a plain STRICT table named as the type instead of behind
//!   a view (core 0.5.3 has no direct tables). Their "vs 0.5.4" ratio is
//!   against `reference-direct`; run them beside `oplite` and `reference`
//!   to see the typed table, the direct table on both cores and 0.5.4's
//!   view in one table;
//! - **oplite host over HTTP**: the whole `oplite` sync loop, with the
//!   loopback test service streaming the lines over HTTP in the same
//!   process (time from the first line received to the applied checkpoint;
//!   its RSS includes the service);
//! - **plain SQLite** (the floor): the lines parsed and the rows inserted
//!   into a plain `(id TEXT PRIMARY KEY, data TEXT)` table in one
//!   transaction.
//! - **plain SQLite, ops then rows** (`plain-oplog`): what any engine that
//!   keeps the ops it downloaded must at least do. Each line's ops go into
//!   an `oplog` table with no index, one transaction per line as the cores
//!   get; then one `INSERT ... SELECT` puts the rows in the plain table.
//!   No checksums, no superseding, no index to find a row's ops: a lower
//!   bound for a sync core, not a design.
//! - **plain SQLite, ops with a row index** (`plain-oplog-indexed`): the
//!   same with the one index a core needs to find a row's ops without a
//!   sort, `(row_type, row_id, op_id)`, maintained as the ops arrive.
//!
//! and times from the first line to the rows being visible in the app's
//! table (the shape's schema is installed in every core and sent with
//! `start`, as SDKs send it; `--no-schema` leaves rows in `ps_untyped`):
//! storing the
//! lines (every call but the last) and applying (the `checkpoint_complete`
//! call). Each call runs in its own transaction on a WAL file database, as
//! the `oplite` host does. Generating the lines is not timed. Every run is a
//! child process on a fresh database, so its peak RSS is its own. The table
//! shows medians.
//!
//! ```text
//! cargo build --release -p oplite-cli --bin oplite-bench
//! target/release/oplite-bench [--runs 5] [--sizes 100000,1000000]
//!     [--encodings json,bson] [--engines oplite,oplite-http,reference,reference-053,plain] [--shape benchmark]
//! ```
//!
//! The engines named above are the default; the others are `oplite-json`,
//! `oplite-direct`, `reference-direct`, `plain-oplog` and
//! `plain-oplog-indexed`. Every run checks at the end that the app's table
//! (the direct table itself for the direct engines) holds every row.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use oplite_test_data::{Encoding, StreamSpec};
use rusqlite::Connection;
use serde::Deserialize;
use serde_json::{json, Value};

#[path = "../bench_shared.rs"]
mod bench_shared;
use bench_shared::{median, remove_db, with_direct_tables, Reference};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Engine {
    Oplite,
    /// oplite with the shape's table a direct table.
    OpliteDirect,
    /// oplite with every table of the schema in the JSON layout
    /// (`"oplite_json_storage": true`): what typed storage costs at apply.
    OpliteJson,
    /// oplite through the `oplite` host over HTTP from the loopback service.
    OpliteHttp,
    /// Core 0.5.4.
    Reference,
    /// Core 0.5.3.
    Reference053,
    /// Core 0.5.4 with the shape's table a direct table.
    ReferenceDirect,
    Plain,
    PlainOplog,
    PlainOplogIndexed,
}

/// Every engine, in the order `--help` lists them.
const ENGINES: [Engine; 10] = [
    Engine::Oplite,
    Engine::OpliteDirect,
    Engine::OpliteJson,
    Engine::OpliteHttp,
    Engine::Reference,
    Engine::Reference053,
    Engine::ReferenceDirect,
    Engine::Plain,
    Engine::PlainOplog,
    Engine::PlainOplogIndexed,
];

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Oplite => "oplite",
            Engine::OpliteDirect => "oplite-direct",
            Engine::OpliteJson => "oplite-json",
            Engine::OpliteHttp => "oplite-http",
            Engine::Reference => "reference",
            Engine::Reference053 => "reference-053",
            Engine::ReferenceDirect => "reference-direct",
            Engine::Plain => "plain",
            Engine::PlainOplog => "plain-oplog",
            Engine::PlainOplogIndexed => "plain-oplog-indexed",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        if s == "reference-054" {
            return Some(Engine::Reference);
        }
        ENGINES.into_iter().find(|e| e.name() == s)
    }

    /// The table's name for it.
    fn label(self) -> &'static str {
        match self {
            Engine::Oplite => "oplite",
            Engine::OpliteDirect => "oplite, direct table",
            Engine::OpliteJson => "oplite, JSON layout",
            Engine::OpliteHttp => "oplite host over HTTP",
            Engine::Reference => "reference core 0.5.4",
            Engine::Reference053 => "reference core 0.5.3",
            Engine::ReferenceDirect => "reference core 0.5.4, direct table",
            Engine::Plain => "plain SQLite (floor)",
            Engine::PlainOplog => "plain SQLite, ops then rows",
            Engine::PlainOplogIndexed => "plain SQLite, ops with a row index, then rows",
        }
    }

    /// The reference core it loads, if any.
    fn reference(self) -> Option<Reference> {
        match self {
            Engine::Reference | Engine::ReferenceDirect => Some(Reference::V054),
            Engine::Reference053 => Some(Reference::V053),
            _ => None,
        }
    }

    /// Whether the shape's table is a direct table.
    fn direct(self) -> bool {
        matches!(self, Engine::OpliteDirect | Engine::ReferenceDirect)
    }

    /// The run of `core` its ratio compares with: the same kind of table
    /// (direct or not) on that core; none where that core has no such table.
    fn baseline(self, core: Reference) -> Option<Engine> {
        match (self.direct(), core) {
            (false, Reference::V054) => Some(Engine::Reference),
            (false, Reference::V053) => Some(Engine::Reference053),
            (true, Reference::V054) => Some(Engine::ReferenceDirect),
            (true, Reference::V053) => None,
        }
    }
}

fn encoding(s: &str) -> Option<Encoding> {
    match s {
        "json" => Some(Encoding::Json),
        "bson" => Some(Encoding::Bson),
        _ => None,
    }
}

fn encoding_name(e: Encoding) -> &'static str {
    match e {
        Encoding::Json => "json",
        Encoding::Bson => "bson",
    }
}

/// One run's measurements.
#[derive(Clone, Debug, Default)]
struct Run {
    store: f64,
    apply: f64,
    rss: u64,
    db_bytes: u64,
}

fn main() -> ExitCode {
    bench_shared::main("oplite-bench", parent, child)
}

fn list<T>(value: &str, parse: impl Fn(&str) -> Option<T>, flag: &str) -> Result<Vec<T>, String> {
    value.split(',').map(|v| parse(v.trim()).ok_or_else(|| format!("{flag}: unknown value {v:?}"))).collect()
}

fn parent(args: &[String]) -> Result<(), String> {
    let mut runs = 5usize;
    let mut sizes = vec![100_000u64, 1_000_000];
    let mut encodings = vec![Encoding::Json, Encoding::Bson];
    let mut engines = vec![Engine::Oplite, Engine::OpliteHttp, Engine::Reference, Engine::Reference053, Engine::Plain];
    let mut shape = "benchmark".to_owned();
    let mut schema = true;
    let mut dir = std::env::temp_dir().join(format!("oplite-bench-{}", std::process::id()));
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--runs" => runs = value()?.parse().map_err(|e| format!("--runs: {e}"))?,
            "--sizes" => sizes = list(&value()?, |v| v.replace('_', "").parse().ok(), "--sizes")?,
            "--encodings" => encodings = list(&value()?, encoding, "--encodings")?,
            "--engines" => engines = list(&value()?, Engine::parse, "--engines")?,
            "--shape" => shape = value()?,
            "--no-schema" => schema = false,
            "--dir" => dir = PathBuf::from(value()?),
            "-h" | "--help" => {
                let all: Vec<&str> = ENGINES.iter().map(|e| e.name()).collect();
                println!("usage: oplite-bench [--runs 5] [--sizes 100000,1000000] [--encodings json,bson] [--engines oplite,oplite-http,reference,reference-053,plain] [--shape benchmark] [--no-schema] [--dir DIR]");
                println!("engines: {} (reference is core 0.5.4, also reference-054; the -direct ones declare the table \"direct\": true; core 0.5.3 has no direct tables)", all.join(", "));
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if StreamSpec::by_name(&shape, 1).is_none() {
        return Err(format!("unknown shape {shape:?}"));
    }
    if let Some(direct) = engines.iter().find(|e| e.direct() && !schema) {
        return Err(format!("--no-schema: {} needs the schema (its table is a direct table)", direct.name()));
    }
    let mut references: Vec<Reference> = engines.iter().filter_map(|e| e.reference()).collect();
    references.sort();
    references.dedup();
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;

    let mut results: Vec<(u64, Encoding, Engine, Run)> = Vec::new();
    for &size in &sizes {
        for &enc in &encodings {
            for &engine in &engines {
                let mut samples = Vec::new();
                for i in 0..runs {
                    let db = dir.join(format!("{}-{}-{size}-{i}.db", engine.name(), encoding_name(enc)));
                    let mut command = Command::new(&exe);
                    command
                        .args(["--child", engine.name(), encoding_name(enc), &size.to_string(), &shape])
                        .arg(&db)
                        .arg(if schema { "schema" } else { "untyped" });
                    for reference in &references {
                        reference.pass_to(&mut command)?;
                    }
                    let output = command.output().map_err(|e| e.to_string())?;
                    if !output.status.success() {
                        return Err(format!(
                            "{} {} {size}: {}",
                            engine.name(),
                            encoding_name(enc),
                            String::from_utf8_lossy(&output.stderr)
                        ));
                    }
                    let v: Value = serde_json::from_slice(&output.stdout).map_err(|e| e.to_string())?;
                    let run = Run {
                        store: v["store"].as_f64().unwrap_or(0.0),
                        apply: v["apply"].as_f64().unwrap_or(0.0),
                        rss: v["rss"].as_u64().unwrap_or(0),
                        db_bytes: v["db_bytes"].as_u64().unwrap_or(0),
                    };
                    eprintln!(
                        "{:>9} {:<4} {:<16} run {}: store {:.3} s, apply {:.3} s, RSS {} MiB",
                        size,
                        encoding_name(enc),
                        engine.name(),
                        i + 1,
                        run.store,
                        run.apply,
                        run.rss >> 20
                    );
                    remove_db(&db);
                    samples.push(run);
                }
                results.push((size, enc, engine, median_run(&samples)));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    print_table(&results, runs, &shape, schema);
    Ok(())
}

fn median_run(samples: &[Run]) -> Run {
    Run {
        store: median(samples.iter().map(|r| r.store).collect()),
        apply: median(samples.iter().map(|r| r.apply).collect()),
        rss: median(samples.iter().map(|r| r.rss as f64).collect()) as u64,
        db_bytes: median(samples.iter().map(|r| r.db_bytes as f64).collect()) as u64,
    }
}

fn print_table(results: &[(u64, Encoding, Engine, Run)], runs: usize, shape: &str, schema: bool) {
    println!("End to end, {shape} shape (10 buckets, lines of 1000 ops), file database in WAL mode, medians of {runs} runs.");
    println!(
        "Time is from the first line to the rows being visible {}; generating the lines is not included.\n",
        if schema { "in the app's table (the shape's schema installed in every core and sent with start)" } else { "(no schema: ps_untyped)" }
    );
    println!("| ops | lines | engine | store lines (s) | apply (s) | total (s) | vs 0.5.4 | vs 0.5.3 | vs plain SQLite | peak RSS | database |");
    println!("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let total = |r: &Run| r.store + r.apply;
    for (size, enc, engine, run) in results {
        let find = |e: Option<Engine>| {
            results.iter().find(|(s, x, en, _)| s == size && x == enc && Some(*en) == e).map(|(.., r)| total(r))
        };
        let ratio = |base: Option<f64>| match base {
            Some(b) if b > 0.0 => format!("{:.2}x", total(run) / b),
            _ => "-".into(),
        };
        let (store, apply) = if matches!(engine, Engine::Plain | Engine::OpliteHttp) {
            (format!("{:.2}", run.store), "-".to_owned())
        } else {
            (format!("{:.2}", run.store), format!("{:.2}", run.apply))
        };
        println!(
            "| {} | {} | {} | {store} | {apply} | {:.2} | {} | {} | {} | {} MiB | {} MiB |",
            oplite_cli::progress::format_count(*size),
            encoding_name(*enc).to_uppercase(),
            engine.label(),
            total(run),
            ratio(find(engine.baseline(Reference::V054))),
            ratio(find(engine.baseline(Reference::V053))),
            ratio(find(Some(Engine::Plain))),
            run.rss >> 20,
            run.db_bytes >> 20,
        );
    }
    println!(
        "\nratios: total time of the row's engine divided by that of the reference core 0.5.4 / 0.5.3 / the floor (lower is better); \
         a direct table's rows compare with 0.5.4's direct table (0.5.3 has none)."
    );
}



fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

fn child(args: &[String]) -> Result<(), String> {
    let [engine, enc, size, shape, db, layout] = args else {
        return Err("usage: --child ENGINE ENCODING OPS SHAPE DB schema|untyped".into());
    };
    let schema = layout == "schema";
    let engine = Engine::parse(engine).ok_or("bad engine")?;
    let enc = encoding(enc).ok_or("bad encoding")?;
    let size: u64 = size.parse().map_err(|e| format!("ops: {e}"))?;
    let spec = StreamSpec::by_name(shape, size).ok_or("bad shape")?;
    let db_path = PathBuf::from(db);
    remove_db(&db_path);
    let conn = Connection::open(&db_path).map_err(|e| e.to_string())?;
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())).map_err(|e| e.to_string())?;
    conn.execute_batch("PRAGMA synchronous = NORMAL").map_err(|e| e.to_string())?;
    let lines = spec.lines(enc, &HashMap::new());
    let (store, apply, rows) = match engine {
        Engine::Plain => plain(&conn, enc, lines)?,
        Engine::PlainOplog => plain_oplog(&conn, enc, lines, false)?,
        Engine::PlainOplogIndexed => plain_oplog(&conn, enc, lines, true)?,
        Engine::OpliteHttp => http(&db_path, enc, &spec, schema)?,
        Engine::Oplite
        | Engine::OpliteDirect
        | Engine::OpliteJson
        | Engine::Reference
        | Engine::Reference053
        | Engine::ReferenceDirect => {
            match engine.reference() {
                Some(reference) => reference.load(&conn)?,
                None => oplite::register(&conn).map_err(|e| e.to_string())?,
            }
            let mut app_schema = spec.schema();
            if engine.direct() {
                app_schema = with_direct_tables(app_schema);
            }
            if engine == Engine::OpliteJson {
                for table in app_schema["tables"].as_array_mut().into_iter().flatten() {
                    table["oplite_json_storage"] = json!(true);
                }
            }
            core(&conn, enc, lines, schema.then(|| app_schema.to_string()))?
        }
    };
    if rows != spec.row_count() {
        return Err(format!("{} rows visible, expected {}", rows, spec.row_count()));
    }
    if engine.direct() {
        let kind: String = conn
            .query_row("SELECT type FROM sqlite_master WHERE name = ?1", [oplite_test_data::stream::ROW_TYPE], |r| r.get(0))
            .map_err(|e| e.to_string())?;
        if kind != "table" {
            return Err(format!("the direct table is a {kind}"));
        }
    }
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).map_err(|e| e.to_string())?;
    let mut wal = db_path.as_os_str().to_owned();
    wal.push("-wal");
    let db_bytes = file_size(&db_path) + file_size(Path::new(&wal));
    let rss = oplite_cli::demo::peak_rss_bytes().unwrap_or(0);
    println!("{}", json!({"store": store, "apply": apply, "rss": rss, "db_bytes": db_bytes}));
    Ok(())
}

/// Feeds the lines through powersync_control, one transaction per call.
fn core(
    conn: &Connection,
    enc: Encoding,
    lines: impl Iterator<Item = Vec<u8>>,
    schema: Option<String>,
) -> Result<(f64, f64, u64), String> {
    let call = |op: &str, payload: rusqlite::types::Value| -> Result<Duration, String> {
        let started = Instant::now();
        conn.execute_batch("BEGIN IMMEDIATE").map_err(|e| e.to_string())?;
        let result: rusqlite::Result<Option<String>> =
            conn.query_row("SELECT powersync_control(?1, ?2)", rusqlite::params![op, payload], |r| r.get(0));
        match result {
            Ok(_) => conn.execute_batch("COMMIT").map_err(|e| e.to_string())?,
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(format!("powersync_control('{op}'): {e}"));
            }
        }
        Ok(started.elapsed())
    };
    conn.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").map_err(|e| e.to_string())?;
    if let Some(schema) = &schema {
        conn.execute_batch("BEGIN").map_err(|e| e.to_string())?;
        conn.query_row("SELECT powersync_replace_schema(?1)", [schema], |_| Ok(()))
            .map_err(|e| format!("powersync_replace_schema: {e}"))?;
        conn.execute_batch("COMMIT").map_err(|e| e.to_string())?;
    }
    // The schema goes with `start` too, as SDKs send it: core 0.5.4 applies
    // into a direct table only when `start`'s schema lists it.
    let start = match &schema {
        Some(schema) => rusqlite::types::Value::Text(format!("{{\"schema\":{schema}}}")),
        None => rusqlite::types::Value::Null,
    };
    call("start", start)?;
    let mut lines = lines.peekable();
    let (mut store, mut apply) = (Duration::ZERO, Duration::ZERO);
    while let Some(line) = lines.next() {
        let last = lines.peek().is_none();
        let (op, payload) = match enc {
            Encoding::Json => ("line_text", rusqlite::types::Value::Text(String::from_utf8(line).map_err(|e| e.to_string())?)),
            Encoding::Bson => ("line_binary", rusqlite::types::Value::Blob(line)),
        };
        let took = call(op, payload)?;
        if last {
            apply += took;
        } else {
            store += took;
        }
    }
    let rows: i64 = conn
        .query_row(
            if schema.is_some() { "SELECT count(*) FROM thisisatable" } else { "SELECT count(*) FROM ps_untyped" },
            [],
            |r| r.get(0),
        )
        .map_err(|e| e.to_string())?;
    Ok((store.as_secs_f64(), apply.as_secs_f64(), rows as u64))
}

/// The whole host: the loopback service serves the stream over HTTP, the
/// `oplite` sync loop stores and applies it. Timed from the first line
/// received to the applied checkpoint; the service runs in this process.
fn http(db_path: &Path, enc: Encoding, spec: &StreamSpec, schema: bool) -> Result<(f64, f64, u64), String> {
    use oplite_test_server::{Dataset, ServiceOptions, TestService};
    let service = TestService::start(ServiceOptions::new(Dataset::Generated(spec.clone()))).map_err(|e| e.to_string())?;
    let db = oplite_cli::Database::open(db_path).map_err(|e| e.to_string())?;
    if schema {
        db.replace_schema(&spec.schema().to_string()).map_err(|e| e.to_string())?;
    }
    let mut options = oplite_cli::SyncOptions::new(service.url(), oplite_cli::TokenSource::Fixed("dev".into()));
    options.binary = enc == Encoding::Bson;
    options.stop_when = oplite_cli::StopWhen::Synced;
    let summary = oplite_cli::run(&db, &options).map_err(|e| e.to_string())?;
    let table = if schema { "thisisatable" } else { "ps_untyped" };
    let rows: i64 =
        db.conn().query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0)).map_err(|e| e.to_string())?;
    Ok((summary.first_sync_seconds.unwrap_or(summary.seconds), 0.0, rows as u64))
}

#[derive(Deserialize)]
struct PlainLine<'a> {
    #[serde(borrow, default)]
    data: Option<PlainData<'a>>,
}

#[derive(Deserialize)]
struct PlainData<'a> {
    #[serde(borrow, default)]
    bucket: Cow<'a, str>,
    #[serde(borrow)]
    data: Vec<PlainOp<'a>>,
}

#[derive(Deserialize)]
struct PlainOp<'a> {
    #[serde(borrow, default)]
    op_id: Cow<'a, str>,
    #[serde(borrow, default)]
    object_type: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    object_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    data: Option<Cow<'a, str>>,
    #[serde(default)]
    checksum: i64,
}

fn parse_plain(enc: Encoding, line: &[u8]) -> Result<PlainLine<'_>, String> {
    match enc {
        Encoding::Json => serde_json::from_slice(line).map_err(|e| e.to_string()),
        Encoding::Bson => oplite::bson::from_slice(line).map_err(|e| e.to_string()),
    }
}

/// The lower bound of a sync core: each line's ops stored in an unindexed
/// table in a transaction of its own, then the rows derived in one
/// statement (the newest op of a row is the last one inserted). `indexed`
/// adds the row index, maintained as the ops arrive.
fn plain_oplog(
    conn: &Connection,
    enc: Encoding,
    lines: impl Iterator<Item = Vec<u8>>,
    indexed: bool,
) -> Result<(f64, f64, u64), String> {
    let err = |e: rusqlite::Error| e.to_string();
    conn.execute_batch(
        "CREATE TABLE oplog(bucket TEXT, op_id INTEGER, row_type TEXT, row_id TEXT, data TEXT, checksum INTEGER);
         CREATE TABLE rows(id TEXT PRIMARY KEY, data TEXT);",
    )
    .map_err(err)?;
    if indexed {
        conn.execute_batch("CREATE INDEX oplog_row ON oplog(row_type, row_id, op_id)").map_err(err)?;
    }
    let mut store = Duration::ZERO;
    {
        let mut insert = conn
            .prepare("INSERT INTO oplog(bucket, op_id, row_type, row_id, data, checksum) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
            .map_err(err)?;
        for line in lines {
            let started = Instant::now();
            let parsed = parse_plain(enc, &line)?;
            if let Some(data) = parsed.data {
                conn.execute_batch("BEGIN IMMEDIATE").map_err(err)?;
                for op in data.data {
                    let op_id: i64 = op.op_id.parse().map_err(|e| format!("op_id {:?}: {e}", op.op_id))?;
                    insert
                        .execute(rusqlite::params![
                            &*data.bucket,
                            op_id,
                            op.object_type.as_deref(),
                            op.object_id.as_deref(),
                            op.data.as_deref(),
                            op.checksum
                        ])
                        .map_err(err)?;
                }
                conn.execute_batch("COMMIT").map_err(err)?;
            }
            store += started.elapsed();
        }
    }
    let started = Instant::now();
    conn.execute_batch(
        "BEGIN IMMEDIATE;
         INSERT OR REPLACE INTO rows(id, data) SELECT row_id, data FROM oplog ORDER BY rowid;
         COMMIT;",
    )
    .map_err(err)?;
    let apply = started.elapsed();
    let rows: i64 = conn.query_row("SELECT count(*) FROM rows", [], |r| r.get(0)).map_err(err)?;
    Ok((store.as_secs_f64(), apply.as_secs_f64(), rows as u64))
}

/// The floor: parse the lines, insert the rows into a plain table in one
/// transaction.
fn plain(conn: &Connection, enc: Encoding, lines: impl Iterator<Item = Vec<u8>>) -> Result<(f64, f64, u64), String> {
    conn.execute_batch("CREATE TABLE rows(id TEXT PRIMARY KEY, data TEXT)").map_err(|e| e.to_string())?;
    let mut elapsed = Duration::ZERO;
    let started = Instant::now();
    conn.execute_batch("BEGIN").map_err(|e| e.to_string())?;
    elapsed += started.elapsed();
    {
        let mut insert = conn.prepare("INSERT OR REPLACE INTO rows(id, data) VALUES (?1, ?2)").map_err(|e| e.to_string())?;
        for line in lines {
            let started = Instant::now();
            let parsed = parse_plain(enc, &line)?;
            if let Some(data) = parsed.data {
                for op in data.data {
                    insert.execute(rusqlite::params![op.object_id.as_deref(), op.data.as_deref()]).map_err(|e| e.to_string())?;
                }
            }
            elapsed += started.elapsed();
        }
    }
    let started = Instant::now();
    conn.execute_batch("COMMIT").map_err(|e| e.to_string())?;
    elapsed += started.elapsed();
    let rows: i64 = conn.query_row("SELECT count(*) FROM rows", [], |r| r.get(0)).map_err(|e| e.to_string())?;
    Ok((elapsed.as_secs_f64(), 0.0, rows as u64))
}
