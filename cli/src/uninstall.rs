//! `oplite uninstall --db FILE`: the way back to the PowerSync core.
//!
//! Runs `oplite_uninstall()` on an existing database file in one
//! transaction: the file gets the layout the PowerSync core 0.5.3 leaves,
//! keeping what was downloaded and what is still to upload, so an app can
//! open it with the core and sync on from where oplite stopped
//! (docs/architecture.md, "Switching back"). The file is opened without
//! `powersync_init()`, which would first adopt a file the core wrote.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;
use serde_json::Value;

use crate::engine::{check_path, database_error};
use crate::Error;

/// Uninstalls oplite from the database at `path`; returns the call's
/// report (JSON, as `oplite_uninstall()` gives it).
pub fn uninstall(path: &Path) -> Result<Value, Error> {
    check_path(path)?;
    if !path.exists() {
        return Err(Error::LocalDatabase(format!("{}: no such file", path.display())));
    }
    let context = |e: rusqlite::Error| database_error(path, "", e);
    let conn = Connection::open(path).map_err(context)?;
    oplite::register(&conn).map_err(|e| Error::Database(format!("registering oplite: {e}")))?;
    conn.busy_timeout(Duration::from_secs(10)).map_err(context)?;
    conn.execute_batch("BEGIN IMMEDIATE").map_err(context)?;
    let report = conn.query_row("SELECT oplite_uninstall()", [], |r| r.get::<_, String>(0));
    let report = match report {
        Ok(report) => report,
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(database_error(path, "", e));
        }
    };
    conn.execute_batch("COMMIT").map_err(|e| database_error(path, "committing: ", e))?;
    serde_json::from_str(&report).map_err(|e| Error::Engine(format!("oplite_uninstall's report: {e}")))
}

/// What the command prints: what changed, and what the app does next.
pub fn summary(path: &Path, report: &Value) -> String {
    let file = path.display();
    if report["changed"] != Value::Bool(true) {
        return format!("{file} already has the PowerSync core's layout: nothing to do");
    }
    let tables = report["data_tables"].as_array().map_or(&[][..], Vec::as_slice);
    let rows: i64 = tables.iter().filter_map(|t| t["rows"].as_i64()).sum();
    let server: i64 = tables.iter().filter_map(|t| t["server_text"].as_i64()).sum();
    format!(
        "uninstalled oplite from {file}: the PowerSync core's layout (internal version {})\n  \
         {} data tables back to JSON ({rows} rows, {server} with the server's text), {} views dropped\n  \
         {} uploads still queued\n  next: {}",
        report["core_version"],
        tables.len(),
        report["views_dropped"].as_array().map_or(0, Vec::len),
        report["uploads_queued"],
        report["next"].as_str().unwrap_or("")
    )
}
