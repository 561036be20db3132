//! `oplite demo`: the README's main command.
//!
//! Starts the loopback test service (`oplite-test-server`, in process, on
//! 127.0.0.1 and a free port) with a generated stream of the published
//! sync_local benchmark shape, syncs it into a fresh file database with the
//! progress bar, prints the summary, then makes a local write and runs the
//! round trip: upload, write checkpoint, confirmed checkpoint.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use oplite_test_data::StreamSpec;
use oplite_test_server::{Dataset, ServiceOptions, TestService};
use serde_json::json;

use crate::engine::{Database, SchemaOutcome};
use crate::local::{self, LocalWrite};
use crate::progress::count_of;
use crate::summary::{Outcome, Summary};
use crate::sync::{self, StopWhen, SyncOptions};
use crate::{Error, TokenSource};

/// What the demo does.
#[derive(Clone, Debug)]
pub struct DemoOptions {
    /// The database file (replaced).
    pub db: PathBuf,
    /// The stream shape (see `StreamSpec::by_name`).
    pub shape: String,
    /// Ops in the stream.
    pub ops: u64,
    /// BSON lines instead of JSON.
    pub binary: bool,
    /// Show the progress bar.
    pub progress: bool,
    /// Also run the local write round trip.
    pub round_trip: bool,
    /// Print the engine's log lines.
    pub verbose: bool,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            db: PathBuf::from("oplite-demo.db"),
            shape: "benchmark".into(),
            ops: 1_000_000,
            binary: false,
            progress: true,
            round_trip: true,
            verbose: false,
        }
    }
}

/// Removes a database file and its WAL and shared-memory files.
pub fn remove_database(path: &Path) -> std::io::Result<()> {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        match std::fs::remove_file(PathBuf::from(p)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// Peak resident set size of this process in bytes (Linux; None elsewhere).
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Runs the demo.
/// The summary of a run that synced; any other end is an error.
fn synced(summary: Summary) -> Result<Summary, Error> {
    match summary.outcome {
        Outcome::Synced => Ok(summary),
        _ => Err(Error::NotSynced(Box::new(summary))),
    }
}

pub fn run(options: &DemoOptions) -> Result<(), Error> {
    let spec = StreamSpec::by_name(&options.shape, options.ops).ok_or_else(|| {
        Error::Usage(format!("unknown shape {:?} (one of {})", options.shape, StreamSpec::SHAPES.join(", ")))
    })?;
    let service = TestService::start(ServiceOptions::new(Dataset::Generated(spec.clone())))
        .map_err(|e| Error::Http(format!("starting the loopback service: {e}")))?;
    println!(
        "oplite demo: a loopback test service on {} serves {} ({} shape, {}, {} lines of up to {})",
        service.url(),
        count_of(spec.ops, "op", "ops"),
        options.shape,
        count_of(spec.buckets, "bucket", "buckets"),
        if options.binary { "BSON" } else { "JSON" },
        count_of(spec.ops_per_line as u64, "op", "ops")
    );
    remove_database(&options.db).map_err(|e| Error::Database(format!("{}: {e}", options.db.display())))?;
    let db = Database::open(&options.db)?;
    // Every column of the shape's rows, so the view shows them all.
    if db.replace_schema(&spec.schema().to_string())? == SchemaOutcome::Unsupported {
        println!("(this build has no powersync_replace_schema yet: synced rows are kept in ps_untyped)");
    }

    let mut sync_options = SyncOptions::new(service.url(), TokenSource::Fixed("dev".into()));
    sync_options.binary = options.binary;
    sync_options.stop_when = StopWhen::Synced;
    sync_options.progress = options.progress;
    sync_options.verbose = options.verbose;
    let summary = synced(sync::run(&db, &sync_options)?)?;
    crate::print_summary(&summary, &options.db);

    if options.round_trip {
        println!("\nround trip: a local write, uploaded, confirmed by a write checkpoint");
        let started = Instant::now();
        let conn = db.conn();
        let edited = format!("{}1", oplite_test_data::stream::ROW_ID_PREFIX);
        local::write(conn, oplite_test_data::stream::ROW_TYPE, &edited, &LocalWrite::Patch(local::columns(json!({"n": -1}))))
            .map_err(|e| Error::Database(format!("local write: {e}")))?;
        local::write(conn, "notes", "note-1", &LocalWrite::Put(local::columns(json!({"text": "written by oplite demo"}))))
            .map_err(|e| Error::Database(format!("local write: {e}")))?;
        let mut again = sync_options.clone();
        again.progress = false;
        again.timeout = Some(Duration::from_secs(60));
        let round = synced(sync::run(&db, &again)?)?;
        let stats = service.stats();
        // Through the schema's view when there is one, else ps_untyped.
        let edited_data: String = conn
            .query_row(
                &format!("SELECT json_object('n', n) FROM {} WHERE id = ?1", oplite_test_data::stream::ROW_TYPE),
                [&edited],
                |r| r.get(0),
            )
            .or_else(|_| {
                conn.query_row(
                    "SELECT data FROM ps_untyped WHERE type = ?1 AND id = ?2",
                    [oplite_test_data::stream::ROW_TYPE, &edited],
                    |r| r.get(0),
                )
            })
            .unwrap_or_else(|_| "(not found)".into());
        println!(
            "  uploaded {}, write checkpoint {} confirmed in {:.0} ms ({} downloaded back)",
            count_of(round.uploaded, "entry", "entries"),
            round.confirmed_write_checkpoint.map(|w| w.to_string()).unwrap_or_else(|| "?".into()),
            started.elapsed().as_secs_f64() * 1000.0,
            count_of(round.ops, "op", "ops")
        );
        println!(
            "  {edited} is now {edited_data} (server copy: {} applied)",
            count_of(stats.upload_batches, "upload batch", "upload batches")
        );
    }
    if let Some(rss) = peak_rss_bytes() {
        println!(
            "\npeak RSS {} (client and loopback service in one process)",
            crate::progress::format_bytes(rss)
        );
    }
    service.shutdown();
    Ok(())
}
