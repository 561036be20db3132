//! `--first-sync`: the benchmark's run (clients/rust/bench.mjs). Connects
//! to a service with sync rules (no streams, no faults), times the first
//! complete sync from `connect` to `has_synced`, and checks that every row
//! arrived.

use std::time::Instant;

use serde_json::{json, Value};

use crate::app::App;
use crate::AnyError;

pub async fn first_sync(app: &App) -> Result<Value, AnyError> {
    let started = Instant::now();
    app.db.connect(app.full()).await;
    app.wait("the first complete sync", 1200, || async {
        Ok(app.db.status().has_synced())
    })
    .await?;
    let ms = started.elapsed().as_millis() as u64;
    let rows = app
        .count("SELECT (SELECT count(*) FROM lists) + (SELECT count(*) FROM todos)")
        .await?;
    app.db.disconnect().await;
    Ok(json!({"firstSyncMs": ms, "rows": rows}))
}
