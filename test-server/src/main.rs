//! `oplite-test-server`: the loopback stand-in for the PowerSync service,
//! as a program (see the library docs). Not a production server.
//!
//! ```text
//! oplite-test-server [--port P] [--shape NAME] [--ops N] [--recorded FILE]
//!                    [--token T]... [--keepalive-secs S] [--streams]
//! ```
//!
//! Serves a generated stream (`--shape`, default `benchmark`, `--ops`,
//! default 100000; `--shape two-tables` serves `lists` and `todos` rows,
//! see the library's `two_tables`) or the buckets of a recorded one (`--recorded
//! stream.ndjson`: its checkpoints and data lines are read into buckets,
//! which are served to any `after`, not replayed line by line) on
//! 127.0.0.1 until killed. Accepts the token `dev` unless `--token` is
//! given; `GET /dev/token` issues JWTs the service checks as the PowerSync
//! service does (see the library's `auth`).

use std::process::ExitCode;
use std::time::Duration;

use oplite_test_data::recorded;
use oplite_test_data::StreamSpec;
use oplite_test_server::{Dataset, ServiceOptions, TestService};

const USAGE: &str = "usage: oplite-test-server [--port P] [--shape NAME] [--ops N] [--recorded FILE] [--token T]... [--keepalive-secs S] [--streams]";

const HELP: &str = "\
The loopback stand-in for the PowerSync service, for tests and the demo (not a
production server). Listens on 127.0.0.1 until killed and prints its URL.

  --port P            port to listen on (default: any free port)
  --shape NAME        generated stream: benchmark (default), wide, duplicates,
                      many-buckets, single-bucket, or two-tables (lists, todos)
  --ops N             ops in the generated stream (default 100000)
  --recorded FILE     serve the buckets of a recorded NDJSON stream instead
  --token T           accept this static token (repeatable; default: dev)
  --keepalive-secs S  seconds between keep-alive lines (default 20)
  --streams           with two-tables: serve sync streams, `lists` (default,
                      priority 1) and `todos` (on subscription), not rules

Endpoints: POST /sync/stream (JSON or BSON lines), GET /write-checkpoint2.json,
POST /sync/checkpoint-request, POST /upload (the app backend's stand-in),
GET /dev/token (a signed JWT), GET /dev/log, and /dev/ faults for tests
(docs/cli.md, \"The loopback test service\").";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("oplite-test-server: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let (mut port, mut shape, mut ops, mut recorded_file) = (0u16, "benchmark".to_owned(), 100_000u64, None);
    let (mut tokens, mut keepalive, mut streams) = (Vec::new(), 20u64, false);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--port" => port = value("--port")?.parse().map_err(|e| format!("--port: {e}"))?,
            "--shape" => shape = value("--shape")?,
            "--ops" => ops = value("--ops")?.parse().map_err(|e| format!("--ops: {e}"))?,
            "--recorded" => recorded_file = Some(value("--recorded")?),
            "--token" => tokens.push(value("--token")?),
            "--streams" => streams = true,
            "--keepalive-secs" => keepalive = value("--keepalive-secs")?.parse().map_err(|e| format!("--keepalive-secs: {e}"))?,
            "-h" | "--help" => {
                println!("{USAGE}\n\n{HELP}");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if streams && (shape != "two-tables" || recorded_file.is_some()) {
        return Err("--streams needs --shape two-tables".into());
    }
    let dataset = match recorded_file {
        Some(path) => {
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
            let lines = recorded::parse_ndjson(&text).map_err(|e| format!("{path}: {e}"))?;
            Dataset::Buckets(recorded::buckets_from_lines(&lines))
        }
        None if shape == "two-tables" => Dataset::Buckets(oplite_test_server::two_tables::buckets(ops)),
        None => Dataset::Generated(StreamSpec::by_name(&shape, ops).ok_or_else(|| {
            format!("unknown shape {shape:?} (one of {}, two-tables)", StreamSpec::SHAPES.join(", "))
        })?),
    };
    let mut options = ServiceOptions::new(dataset);
    options.bind.set_port(port);
    options.keepalive = Duration::from_secs(keepalive.max(1));
    if !tokens.is_empty() {
        options.static_tokens = tokens;
    }
    if streams {
        options.streams = oplite_test_server::sync_streams::two_tables_streams();
    }
    let service = TestService::start(options).map_err(|e| format!("starting: {e}"))?;
    println!("oplite-test-server (test support, not a production server) listening on {}", service.url());
    loop {
        std::thread::park();
    }
}
