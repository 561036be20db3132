//! The Rust SDK drop-in scenario: one run of the official `powersync` 0.2.0
//! SDK against the loopback service (`--streams`, two-tables), on whichever
//! core this program was built with (oplite through the `[patch]` crate, or
//! the reference 0.5.4: see Cargo.toml and reference/Cargo.toml). It
//! writes what an app or the service could see to `--out` as JSON, for
//! run.mjs to compare between the two cores.
//!
//! Usage: rust-drop-in --endpoint URL --db FILE --out FILE
//!                     [--mode legacy|requests] [--schema direct|raw|views]
//!                     [--first-sync | --bad-input]
//!
//! `--first-sync` runs the benchmark's step alone (bench.rs) instead;
//! `--bad-input` the refused inputs of bad_input.rs, in files named after --db.

use std::error::Error;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use powersync::env::PowerSyncEnvironment;
use powersync::{CheckpointMode, ConnectionPool, PowerSyncDatabase, RequestsCheckpointMode};
use serde_json::{json, Value};

mod app;
mod bad_input;
mod bench;
mod connections;
mod scenario;
mod schema;
mod service;
mod status;

pub type AnyError = Box<dyn Error + Send + Sync>;

/// What the run is doing, named in the result when it fails.
#[derive(Default)]
pub struct Step(Mutex<String>);

impl Step {
    pub fn set(&self, what: &str) {
        *self.0.lock().unwrap() = what.to_owned();
    }
}

struct Args {
    endpoint: String,
    db: String,
    out: String,
    mode: String,
    schema: schema::Kind,
    first_sync_only: bool,
    bad_input: bool,
}

const USAGE: &str =
    "usage: rust-drop-in --endpoint URL --db FILE --out FILE [--mode legacy|requests] [--schema direct|raw|views] [--first-sync | --bad-input]";

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut endpoint, mut db, mut out) = (None, None, None);
    let (mut mode, mut schema) = ("legacy".to_owned(), schema::Kind::Direct);
    let (mut first_sync_only, mut bad_input) = (false, false);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--endpoint" => endpoint = Some(value()?),
            "--db" => db = Some(value()?),
            "--out" => out = Some(value()?),
            "--mode" => mode = value()?,
            "--first-sync" => first_sync_only = true,
            "--bad-input" => bad_input = true,
            "--schema" => {
                let name = value()?;
                schema = schema::Kind::parse(&name)
                    .ok_or_else(|| format!("--schema direct|raw|views, not {name}"))?;
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if mode != "legacy" && mode != "requests" {
        return Err(format!("--mode legacy|requests, not {mode}"));
    }
    let missing = |name: &str| format!("{name} is required\n{USAGE}");
    Ok(Args {
        endpoint: endpoint.ok_or_else(|| missing("--endpoint"))?,
        db: db.ok_or_else(|| missing("--db"))?,
        out: out.ok_or_else(|| missing("--out"))?,
        mode,
        schema,
        first_sync_only,
        bad_input,
    })
}

/// Opens the database and, for raw tables, creates the app's tables and
/// the triggers that queue their writes (powersync_create_raw_table_crud_trigger
/// with each raw table's JSON, as the SDK docs say).
async fn open(args: &Args) -> Result<PowerSyncDatabase, AnyError> {
    PowerSyncEnvironment::powersync_auto_extension()?;
    let pool = ConnectionPool::open(&args.db)?;
    let env =
        PowerSyncEnvironment::custom(reqwest::Client::new(), pool, PowerSyncEnvironment::tokio());
    let db = PowerSyncDatabase::new(env, schema::schema(args.schema));
    if args.schema == schema::Kind::Raw {
        let mut writer = db.writer().await?;
        let tx = writer.transaction()?;
        for ddl in schema::RAW_DDL {
            tx.execute_batch(ddl)?;
        }
        for table in schema::raw_tables() {
            let definition = serde_json::to_string(&table)?;
            for write in ["INSERT", "UPDATE", "DELETE"] {
                let name = format!("{}_{}", table.name, write.to_lowercase());
                tx.query_row(
                    "SELECT powersync_create_raw_table_crud_trigger(?, ?, ?)",
                    [&definition, &name, write],
                    |_| Ok(()),
                )?;
            }
        }
        tx.commit()?;
    }
    Ok(db)
}

async fn run(args: &Args, step: &Step) -> Result<Value, AnyError> {
    let started = Instant::now();
    if args.bad_input {
        PowerSyncEnvironment::powersync_auto_extension()?;
        return bad_input::run(&args.endpoint, &args.db, step).await;
    }
    step.set("opening the database");
    let db = open(args).await?;
    let service = service::Service::new(&args.endpoint);
    let mode = match args.mode.as_str() {
        "requests" => CheckpointMode::Requests(RequestsCheckpointMode::default()),
        _ => CheckpointMode::Legacy,
    };
    let app = app::App::new(db.clone(), service.clone(), mode);
    if args.first_sync_only {
        return bench::first_sync(&app).await;
    }
    let core: String =
        db.reader()
            .await?
            .query_row("SELECT powersync_rs_version()", [], |row| row.get(0))?;
    let is_oplite = app
        .count(
            "SELECT count(*) FROM pragma_table_info('ps_buckets') WHERE name = 'oplite_op_count'",
        )
        .await?
        > 0;
    eprintln!(
        "core {core}{}, {} mode, {} schema",
        if is_oplite { " (oplite)" } else { "" },
        args.mode,
        args.schema.name()
    );
    let triggers = app.rows("SELECT name, tbl_name FROM sqlite_master WHERE type = 'trigger' AND tbl_name IN ('lists', 'todos') ORDER BY name").await?;
    let tables = app.rows("SELECT name, type FROM sqlite_master WHERE name IN ('lists', 'todos', 'drafts', 'ps_data__lists', 'ps_data__todos') ORDER BY name").await?;
    let recorder = status::Recorder::start(&db);

    let mut timings = json!({});
    let (first, _subscriptions) = scenario::first_sync(&app, step, &mut timings).await?;
    let writes = scenario::local_writes(&app, step, &mut timings).await?;
    let token = scenario::token_refresh(&app, step, &mut timings).await?;
    let bad_line = scenario::malformed_line(&app, step).await?;
    let download_only = connections::download_only(&app, step).await?;
    let upload_only = connections::upload_only_then_full(&app, step).await?;
    let digests = app.rows("SELECT (SELECT count(*) || ' ' || total(length(name)) FROM lists), (SELECT count(*) || ' ' || total(done) || ' ' || total(length(description)) FROM todos)").await?;
    let clear = connections::clear(&app, step).await?;
    let log = service.log().await?;
    timings["totalMs"] = json!(started.elapsed().as_millis() as u64);
    Ok(json!({
        "core": core,
        "coreIsOplite": is_oplite,
        "mode": args.mode,
        "schema": args.schema.name(),
        "tables": tables,
        "triggers": triggers,
        "firstSync": first,
        "localWrites": writes,
        "tokenRefresh": token,
        "badLine": bad_line,
        "downloadOnly": download_only,
        "uploadOnly": upload_only,
        "beforeClear": digests,
        "clear": clear,
        "status": recorder.report(),
        "clientBatches": *app.batches.lock().unwrap(),
        "credentialFetches": service.credential_fetches.load(std::sync::atomic::Ordering::SeqCst),
        "serviceUploads": log["uploads"],
        "serviceStreams": log["streams"],
        "serviceStats": log["stats"],
        "timings": timings,
    }))
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return std::process::ExitCode::from(2);
        }
    };
    let step = Arc::new(Step::default());
    let result = match run(&args, &step).await {
        Ok(result) => result,
        Err(e) => json!({"failed": e.to_string(), "step": *step.0.lock().unwrap()}),
    };
    let failed = result.get("failed").is_some();
    if let Err(e) = std::fs::write(
        &args.out,
        serde_json::to_string_pretty(&result).unwrap_or_default(),
    ) {
        eprintln!("{}: {e}", args.out);
        return std::process::ExitCode::FAILURE;
    }
    if failed {
        eprintln!("failed while {}: {}", result["step"], result["failed"]);
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
