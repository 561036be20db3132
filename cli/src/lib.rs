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
//! - [`backoff`]: the delays between reconnects and failed uploads.
//! - [`summary`]: what a run did and how it ended, as printed and as the
//!   exit code.
//! - [`checkpoint`]: write checkpoints by checkpoint request
//!   (`--checkpoint-mode requests`).
//! - [`credentials`]: tokens from a flag, a command or a function.
//! - [`local`]: local writes as an app makes them, through the schema's
//!   views (for the demo and the tests).
//! - [`demo`]: `oplite demo`: the loopback service and a 1M-op sync.
//! - [`uninstall`]: `oplite uninstall`: the file back to the PowerSync
//!   core's layout.

pub mod backoff;
pub mod checkpoint;
pub mod credentials;
pub mod demo;
pub mod engine;
pub mod http;
pub mod local;
pub mod progress;
pub mod summary;
pub mod sync;
pub mod uninstall;

pub use credentials::TokenSource;
pub use engine::Database;
pub use summary::{print_summary, summary_text, Outcome, Summary};
pub use sync::{run, Backoff, StopWhen, SyncOptions};

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
