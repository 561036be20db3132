//! `--bad-input`: what the SDK shows of input the core must refuse, and
//! that nothing is lost to it. A file that is not a database (its bytes
//! must be left as they were); a schema whose view collides with the app's
//! own table (the file's tables must be left as they were); and a service
//! that slips an invalid line into the stream (a download error, then the
//! SDK reconnects and the sync completes with every row). Each in a new
//! file named after `--db`.

use powersync::env::PowerSyncEnvironment;
use powersync::{CheckpointMode, ConnectionPool, PowerSyncDatabase};
use serde_json::{json, Value};

use crate::app::App;
use crate::service::Service;
use crate::{schema, AnyError, Step};

fn database(path: &str, kind: schema::Kind) -> Result<PowerSyncDatabase, AnyError> {
    let pool = ConnectionPool::open(path)?;
    let env = PowerSyncEnvironment::custom(reqwest::Client::new(), pool, PowerSyncEnvironment::tokio());
    Ok(PowerSyncDatabase::new(env, schema::schema(kind)))
}

/// The first error the SDK gives on a new database at `path`.
async fn first_error(path: &str) -> Result<Value, AnyError> {
    let db = match database(path, schema::Kind::Views) {
        Ok(db) => db,
        Err(e) => return Ok(json!({"open": e.to_string()})),
    };
    Ok(match db.reader().await {
        Ok(reader) => match reader.query_row("SELECT count(*) FROM lists", [], |r| r.get::<_, i64>(0)) {
            Ok(n) => json!({"opened": n}),
            Err(e) => json!({"query": e.to_string()}),
        },
        Err(e) => json!({"reader": e.to_string()}),
    })
}

/// What the file's own schema holds, read without the SDK.
fn master(path: &str) -> Result<Vec<(String, String)>, AnyError> {
    let conn = rusqlite::Connection::open(path)?;
    let mut stmt = conn.prepare("SELECT type, name FROM sqlite_master ORDER BY name")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

pub async fn run(endpoint: &str, prefix: &str, step: &Step) -> Result<Value, AnyError> {
    step.set("a file that is not a database");
    let garbage_path = format!("{prefix}.not-a-database");
    let bytes: Vec<u8> = (0..8192u32).map(|i| (i.wrapping_mul(2654435761) >> 24) as u8).collect();
    std::fs::write(&garbage_path, &bytes)?;
    let not_a_database = first_error(&garbage_path).await?;
    let untouched = std::fs::read(&garbage_path)? == bytes;

    step.set("a schema whose view collides with the app's table");
    let collision_path = format!("{prefix}.collision");
    rusqlite::Connection::open(&collision_path)?.execute_batch("CREATE TABLE lists (id TEXT PRIMARY KEY, mine TEXT); INSERT INTO lists VALUES ('a', 'kept');")?;
    let before = master(&collision_path)?;
    let collision = first_error(&collision_path).await?;
    let kept: String = rusqlite::Connection::open(&collision_path)?.query_row("SELECT mine FROM lists", [], |r| r.get(0))?;
    let app_tables = |m: &[(String, String)]| m.iter().filter(|(_, n)| !n.starts_with("ps_")).cloned().collect::<Vec<_>>();
    let after = master(&collision_path)?;

    step.set("an invalid line in the stream");
    let db = database(&format!("{prefix}.invalid-line"), schema::Kind::Views)?;
    let app = App::new(db.clone(), Service::new(endpoint), CheckpointMode::Legacy);
    app.service.dev(true, "/dev/corrupt-next-stream?after=3").await?;
    db.connect(app.full()).await;
    let error = app.first_download_error("the download error of the invalid line", 60, || async { Ok(true) }).await?;
    app.wait("the sync to complete after the invalid line", 120, || async { Ok(db.status().has_synced() && app.idle()) }).await?;
    let rows = app.count("SELECT (SELECT count(*) FROM lists) + (SELECT count(*) FROM todos)").await?;
    let integrity = app.rows("PRAGMA integrity_check").await?;
    db.disconnect().await;
    Ok(json!({
        "notADatabase": {"error": not_a_database, "bytesUntouched": untouched},
        "viewCollision": {
            "error": collision,
            "appTablesBefore": app_tables(&before),
            "appTablesAfter": app_tables(&after),
            "psTablesLeft": after.iter().filter(|(_, n)| n.starts_with("ps_")).count(),
            "rowKept": kept,
        },
        "invalidLine": {"error": error, "rows": rows, "integrity": integrity, "streams": app.service.stat("streams").await?},
    }))
}
