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
//! - [`checkpoint`]: write checkpoints by checkpoint request
//!   (`--checkpoint-mode requests`).
//! - [`credentials`]: tokens from a flag, a command or a function.
//! - [`local`]: local writes as an app makes them, through the schema's
//!   views (for the demo and the tests).
//! - [`demo`]: `oplite demo`: the loopback service and a 1M-op sync.

pub mod checkpoint;
pub mod credentials;
pub mod demo;
pub mod engine;
pub mod http;
pub mod local;
pub mod progress;
pub mod sync;

pub use credentials::TokenSource;
pub use engine::Database;
pub use sync::{run, Backoff, Outcome, StopWhen, Summary, SyncOptions};

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
    /// The database file is unusable (corrupt, not a database, read-only,
    /// missing its directory): retrying cannot help.
    LocalDatabase(String),
    /// A run that had to sync ended otherwise (see its outcome).
    NotSynced(Box<Summary>),
    /// Bad arguments or input files.
    Usage(String),
}

impl Error {
    /// The process exit code for this error (docs/cli.md, "Exit codes").
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => 2,
            Error::LocalDatabase(_) => 5,
            Error::NotSynced(summary) => summary.outcome.exit_code(),
            Error::Database(_) | Error::Engine(_) | Error::Http(_) | Error::Credentials(_) => 1,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Database(m) => write!(f, "database: {m}"),
            Error::Engine(m) => write!(f, "sync engine: {m}"),
            Error::Http(m) => write!(f, "http: {m}"),
            Error::Credentials(m) => write!(f, "credentials: {m}"),
            Error::LocalDatabase(m) => write!(f, "local database: {m}"),
            Error::NotSynced(s) => write!(f, "{}", s.outcome.headline()),
            Error::Usage(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for Error {}

/// Prints a summary the way `oplite sync` and `oplite demo` end.
pub fn print_summary(summary: &Summary, db_path: &std::path::Path) {
    print!("{}", summary_text(summary, db_path));
}

/// The summary [`print_summary`] prints.
pub fn summary_text(summary: &Summary, db_path: &std::path::Path) -> String {
    use progress::{count_of, format_bytes, format_count};
    use std::fmt::Write;
    let mut out = String::new();
    let rate = if summary.seconds > 0.0 { summary.ops as f64 / summary.seconds } else { 0.0 };
    let _ = match summary.outcome {
        Outcome::Synced | Outcome::Stopped => writeln!(out, "{} into {}", summary.outcome.headline(), db_path.display()),
        _ => writeln!(out, "{} ({} holds what was applied before)", summary.outcome.headline(), db_path.display()),
    };
    let _ = writeln!(
        out,
        "  ops         {} downloaded into {}",
        format_count(summary.ops),
        count_of(summary.buckets.max(0) as u64, "bucket", "buckets")
    );
    let tables: Vec<String> =
        summary.rows.iter().map(|(t, n)| format!("{t}: {}", format_count(*n as u64))).collect();
    let _ = writeln!(
        out,
        "  rows        {}{}",
        format_count(summary.total_rows().max(0) as u64),
        if tables.is_empty() { String::new() } else { format!(" ({})", tables.join(", ")) }
    );
    let kind = if summary.binary { "BSON" } else { "JSON" };
    let _ = writeln!(
        out,
        "  bytes       {} in {}",
        format_bytes(summary.bytes),
        count_of(summary.lines, &format!("{kind} line"), &format!("{kind} lines"))
    );
    match summary.first_sync_seconds {
        Some(first) => {
            let _ = writeln!(
                out,
                "  seconds     {:.2} ({:.2} from the first line to the applied checkpoint; {}/s)",
                summary.seconds,
                first,
                count_of(rate as u64, "op", "ops")
            );
        }
        None => {
            let _ = writeln!(out, "  seconds     {:.2}", summary.seconds);
        }
    }
    if let Some(strategy) = &summary.strategy {
        let _ = writeln!(out, "  strategy    {strategy}");
    }
    if summary.uploaded > 0 || summary.confirmed_write_checkpoint.is_some() {
        let _ = writeln!(
            out,
            "  uploads     {}{}",
            count_of(summary.uploaded, "entry", "entries"),
            summary.confirmed_write_checkpoint.map(|w| format!(", write checkpoint {w} confirmed")).unwrap_or_default()
        );
    }
    if summary.checkpoint_requests > 0 {
        let _ = writeln!(out, "  checkpoint  {} posted", count_of(summary.checkpoint_requests, "request", "requests"));
    }
    if summary.connections > 1 || summary.failed_connections > 0 || summary.credential_refreshes > 0 {
        let _ = writeln!(
            out,
            "  connections {} ({} failed), {}",
            summary.connections,
            summary.failed_connections,
            count_of(summary.credential_refreshes, "credential refresh", "credential refreshes")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_uses_the_singular_for_one() {
        let one = Summary {
            ops: 1,
            buckets: 1,
            lines: 1,
            uploaded: 1,
            connections: 2,
            failed_connections: 1,
            credential_refreshes: 1,
            seconds: 1.0,
            first_sync_seconds: Some(0.5),
            confirmed_write_checkpoint: Some(3),
            checkpoint_requests: 1,
            ..Summary::default()
        };
        let text = summary_text(&one, std::path::Path::new("a.db"));
        for expected in ["1 downloaded into 1 bucket\n", "in 1 JSON line\n", "; 1 op/s)", "uploads     1 entry,", "1 credential refresh\n", "checkpoint  1 request posted\n"] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
        let many = Summary { ops: 2, buckets: 3, lines: 4, uploaded: 5, credential_refreshes: 2, binary: true, checkpoint_requests: 3, ..one };
        let text = summary_text(&many, std::path::Path::new("a.db"));
        for expected in ["2 downloaded into 3 buckets\n", "in 4 BSON lines\n", "; 2 ops/s)", "uploads     5 entries,", "2 credential refreshes\n", "checkpoint  3 requests posted\n"] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
    }
}
