//! `oplite`: the command-line host for the oplite sync engine.
//!
//! - `oplite sync --db app.db --endpoint URL --token T`: syncs a database
//!   with a PowerSync-compatible service.
//! - `oplite demo`: the same against an embedded loopback test service with
//!   a generated 1M-op stream.
//! - `oplite uninstall --db app.db`: the file back to the PowerSync core's
//!   layout.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use oplite_cli::demo::{self, DemoOptions};
use oplite_cli::engine::SchemaOutcome;
use oplite_cli::{Database, Error, StopWhen, SyncOptions, TokenSource};

#[derive(Parser)]
#[command(name = "oplite", version, about = "oplite: an offline-first sync client for SQLite, compatible with the PowerSync protocol")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Sync a database file with a PowerSync-compatible service.
    Sync(SyncArgs),
    /// Sync a generated 1M-op stream from an embedded loopback service.
    Demo(DemoArgs),
    /// Give a database back to the PowerSync core: its layout, in place,
    /// keeping what was synced and what is queued for upload.
    Uninstall(UninstallArgs),
}

#[derive(Args)]
struct UninstallArgs {
    /// The database file.
    #[arg(long)]
    db: PathBuf,
}

#[derive(Args)]
struct SyncArgs {
    /// The database file (created if missing).
    #[arg(long)]
    db: PathBuf,
    /// The app schema (JSON, as for powersync_replace_schema).
    #[arg(long)]
    schema: Option<PathBuf>,
    /// The service URL, e.g. https://xyz.powersync.journeyapps.com
    #[arg(long, value_parser = endpoint_url)]
    endpoint: String,
    /// A token (JWT) for the service (or --token-command).
    #[arg(long, conflicts_with = "token_command")]
    token: Option<String>,
    /// A shell command printing a fresh token; run again whenever the
    /// service asks for new credentials.
    #[arg(long)]
    token_command: Option<String>,
    /// Where the connector posts {"batch": [ps_crud entries]} (default:
    /// ENDPOINT/upload, the loopback test service's).
    #[arg(long)]
    upload_url: Option<String>,
    /// Ask for BSON lines instead of JSON.
    #[arg(long)]
    bson: bool,
    /// Sync parameters (a JSON object; default {}).
    #[arg(long)]
    parameters: Option<String>,
    /// How write checkpoints are asked for after an upload: legacy (GET
    /// /write-checkpoint2.json) or requests (ids allocated by the engine,
    /// posted to POST /sync/checkpoint-request).
    #[arg(long, default_value = "legacy", value_parser = ["legacy", "requests"])]
    checkpoint_mode: String,
    /// Exit after the first complete sync with nothing left to upload
    /// (default: keep syncing until Ctrl-C).
    #[arg(long)]
    once: bool,
    /// End the run after this many seconds: exit 3 before a complete
    /// sync; in live mode after one, exit 0 with the last sync and what
    /// was in progress (docs/cli.md, "Exit codes").
    #[arg(long)]
    timeout: Option<f64>,
    /// With --once: give up after this many failed connection attempts in
    /// a row (live mode retries until Ctrl-C).
    #[arg(long, default_value_t = oplite_cli::sync::DEFAULT_MAX_ATTEMPTS)]
    max_attempts: u32,
    /// Longest silence on the stream, in seconds, before reconnecting.
    #[arg(long, default_value_t = 90.0)]
    read_timeout: f64,
    /// How sync_local applies checkpoints: auto, incremental or
    /// from_scratch (oplite_sync_local_strategy).
    #[arg(long, default_value = "auto")]
    strategy: String,
    /// No progress bar.
    #[arg(long)]
    no_progress: bool,
    /// Print the engine's log lines and the loop's events.
    #[arg(short, long)]
    verbose: bool,
}

#[derive(Args)]
struct DemoArgs {
    /// The database file (replaced on every run).
    #[arg(long, default_value = "oplite-demo.db")]
    db: PathBuf,
    /// Ops in the generated stream.
    #[arg(long, default_value_t = 1_000_000)]
    ops: u64,
    /// Stream shape: benchmark, wide, duplicates, many-buckets, single-bucket.
    #[arg(long, default_value = "benchmark")]
    shape: String,
    /// BSON lines instead of JSON.
    #[arg(long)]
    bson: bool,
    /// Skip the local-write round trip.
    #[arg(long)]
    no_round_trip: bool,
    /// No progress bar.
    #[arg(long)]
    no_progress: bool,
    /// Print the engine's log lines.
    #[arg(short, long)]
    verbose: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Sync(args) => sync(args),
        Command::Demo(args) => demo::run(&DemoOptions {
            db: args.db,
            shape: args.shape,
            ops: args.ops,
            binary: args.bson,
            progress: !args.no_progress,
            round_trip: !args.no_round_trip,
            verbose: args.verbose,
        })
        .map(|()| 0),
        Command::Uninstall(args) => oplite_cli::uninstall::uninstall(&args.db).map(|report| {
            println!("{}", oplite_cli::uninstall::summary(&args.db, &report));
            0
        }),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("oplite: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// `--endpoint`: an http(s) URL with a host, checked before anything runs
/// (a typo would otherwise be retried as a network error).
fn endpoint_url(text: &str) -> Result<String, String> {
    let uri: ureq::http::Uri = text.parse().map_err(|e| format!("not a URL ({e}); give e.g. https://xyz.powersync.journeyapps.com"))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("http" | "https"), Some(host)) if !host.is_empty() => Ok(text.to_owned()),
        (Some(scheme), _) if scheme != "http" && scheme != "https" => Err(format!("{scheme}: not http or https")),
        _ => Err("not an http(s) URL with a host, e.g. https://xyz.powersync.journeyapps.com".into()),
    }
}

fn seconds(value: f64, flag: &str) -> Result<Duration, Error> {
    Duration::try_from_secs_f64(value).map_err(|_| Error::Usage(format!("{flag}: not a number of seconds: {value}")))
}

/// `oplite sync`: the exit code of a run that ended without a fatal error
/// (docs/cli.md, "Exit codes").
fn sync(args: SyncArgs) -> Result<u8, Error> {
    let credentials = match (args.token, args.token_command) {
        (Some(token), None) => TokenSource::Fixed(token),
        (None, Some(command)) => TokenSource::Command(command),
        _ => {
            return Err(Error::Usage(
                "no token: give --token TOKEN, or --token-command COMMAND (a command that prints a fresh token, run again when it expires)".into(),
            ))
        }
    };
    let parameters = match &args.parameters {
        Some(text) => match serde_json::from_str(text).map_err(|e| Error::Usage(format!("--parameters: {e}")))? {
            serde_json::Value::Object(object) => object,
            _ => return Err(Error::Usage("--parameters: not a JSON object".into())),
        },
        None => serde_json::Map::new(),
    };
    let db = Database::open(&args.db)?;
    if let Some(path) = &args.schema {
        let schema = std::fs::read_to_string(path).map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
        serde_json::from_str::<serde_json::Value>(&schema)
            .map_err(|e| Error::Usage(format!("{}: not JSON: {e}", path.display())))?;
        if db.replace_schema(&schema)? == SchemaOutcome::Unsupported {
            eprintln!(
                "oplite: warning: this build has no powersync_replace_schema yet; --schema is ignored and synced rows are kept in ps_untyped"
            );
        }
    }
    if args.strategy != "auto" {
        db.conn()
            .query_row("SELECT oplite_sync_local_strategy(?1)", [&args.strategy], |_| Ok(()))
            .map_err(|e| Error::Usage(format!("--strategy: {e}")))?;
    }
    let mut options = SyncOptions::new(args.endpoint, credentials);
    options.upload_url = args.upload_url;
    options.binary = args.bson;
    options.parameters = parameters;
    options.checkpoint_mode = args.checkpoint_mode.parse()?;
    options.stop_when = if args.once { StopWhen::Synced } else { StopWhen::Cancelled };
    options.timeout = args.timeout.map(|t| seconds(t, "--timeout")).transpose()?;
    options.read_timeout = seconds(args.read_timeout, "--read-timeout")?;
    options.max_attempts = args.max_attempts;
    options.progress = !args.no_progress;
    options.verbose = args.verbose;
    let cancel = options.cancel.clone();
    ctrlc::set_handler(move || cancel.store(true, Ordering::SeqCst))
        .map_err(|e| Error::Usage(format!("installing the Ctrl-C handler: {e}")))?;
    let summary = oplite_cli::run(&db, &options)?;
    oplite_cli::print_summary(&summary, &args.db);
    Ok(summary.outcome.exit_code())
}
