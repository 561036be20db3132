//! The `oplite` command-line host, as a library.
//!
//! oplite's engine does no I/O: a host opens the HTTP stream, feeds each
//! line to `powersync_control` and carries out the instructions it returns.
//! This crate is that host for the command line, and the code the
//! end-to-end tests drive.
//!
//! - [`engine`]: the database (oplite registered, `powersync_control` in
//!   transactions, the internal tables the host reads).
//! - [`http`]: the sync stream read line by line on its own thread; the
//!   connector's requests.
//! - [`sync`]: the loop: reconnects, credentials, uploads, progress.
//! - [`credentials`]: tokens from a flag, a command or a function.
//! - [`local`]: local writes as an app makes them, through the schema's
//!   views (for the demo and the tests).
//! - [`demo`]: `oplite demo`: the loopback service and a 1M-op sync.

pub mod credentials;
pub mod demo;
pub mod engine;
pub mod http;
pub mod local;
pub mod progress;
pub mod sync;

pub use credentials::TokenSource;
pub use engine::Database;
pub use sync::{run, Backoff, StopWhen, Summary, SyncOptions};

/// Why a command failed.
#[derive(Debug)]
pub enum Error {
    /// Opening or querying the database.
    Database(String),
    /// `powersync_control` failed or returned something unexpected.
    Engine(String),
    /// A request failed for good.
    Http(String),
    /// No token could be had.
    Credentials(String),
    /// `--timeout` passed before the sync completed; what was done so far.
    Timeout(Box<Summary>),
    /// Bad arguments or input files.
    Usage(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Database(m) => write!(f, "database: {m}"),
            Error::Engine(m) => write!(f, "sync engine: {m}"),
            Error::Http(m) => write!(f, "http: {m}"),
            Error::Credentials(m) => write!(f, "credentials: {m}"),
            Error::Timeout(s) => write!(f, "timed out after {:.1} s before a complete sync ({} lines received)", s.seconds, s.lines),
            Error::Usage(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for Error {}

/// Prints a summary the way `oplite sync` and `oplite demo` end.
pub fn print_summary(summary: &Summary, db_path: &std::path::Path) {
    use progress::{format_bytes, format_count};
    let rate = if summary.seconds > 0.0 { summary.ops as f64 / summary.seconds } else { 0.0 };
    println!("synced into {}", db_path.display());
    println!("  ops         {} downloaded into {} buckets", format_count(summary.ops), summary.buckets);
    let tables: Vec<String> =
        summary.rows.iter().map(|(t, n)| format!("{t}: {}", format_count(*n as u64))).collect();
    println!(
        "  rows        {}{}",
        format_count(summary.total_rows().max(0) as u64),
        if tables.is_empty() { String::new() } else { format!(" ({})", tables.join(", ")) }
    );
    println!(
        "  bytes       {} in {} {} lines",
        format_bytes(summary.bytes),
        format_count(summary.lines),
        if summary.binary { "BSON" } else { "JSON" }
    );
    match summary.first_sync_seconds {
        Some(first) => println!(
            "  seconds     {:.2} ({:.2} from the first line to the applied checkpoint; {} ops/s)",
            summary.seconds,
            first,
            format_count(rate as u64)
        ),
        None => println!("  seconds     {:.2}", summary.seconds),
    }
    if let Some(strategy) = &summary.strategy {
        println!("  strategy    {strategy}");
    }
    if summary.uploaded > 0 || summary.confirmed_write_checkpoint.is_some() {
        println!(
            "  uploads     {} entries{}",
            format_count(summary.uploaded),
            summary.confirmed_write_checkpoint.map(|w| format!(", write checkpoint {w} confirmed")).unwrap_or_default()
        );
    }
    if summary.connections > 1 || summary.failed_connections > 0 || summary.credential_refreshes > 0 {
        println!(
            "  connections {} ({} failed), {} credential refreshes",
            summary.connections, summary.failed_connections, summary.credential_refreshes
        );
    }
}
