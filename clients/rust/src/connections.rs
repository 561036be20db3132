//! The scenario's steps with other kinds of connection: download-only
//! while a local write is pending (the checkpoint cannot be applied, and
//! the SDK says why), upload-only (the write goes up, no stream opens),
//! a full connection again, and `disconnect_and_clear` with and without
//! the local-only data.

use powersync::DisconnectAndClearFlags;
use serde_json::{json, Value};

use crate::app::App;
use crate::{AnyError, Step};

const LIST1_NAME: &str = "SELECT name FROM lists WHERE id = 'list1'";

/// Step 5: a download-only connection with a local write queued, while
/// another client changes `list1` on the service.
pub async fn download_only(app: &App, step: &Step) -> Result<Value, AnyError> {
    step.set("a download-only connection");
    app.db.disconnect().await;
    // Written before connecting: every checkpoint of the connection is
    // held back, its first one too (written after, it raced that one).
    app.write(&[(
        "UPDATE lists SET name = 'offline edit' WHERE id = 'list3'",
        false,
    )])
    .await?;
    app.db.connect(app.download_only()).await;
    app.wait("the download-only connection", 60, || async { Ok(app.db.status().is_connected()) }).await?;
    // Another client's write: a new checkpoint the core cannot apply
    // while the local write waits for an upload that never comes.
    app.service.upload(&json!([{"op": "PATCH", "type": "lists", "id": "list1", "data": {"name": "from another client"}}])).await?;
    // Both: the error may come first from the connection's own first
    // checkpoint, if the write beat it, before the other client's change
    // arrived; the change must be stored (not applied) before moving on.
    let stored = "SELECT count(*) FROM ps_oplog WHERE row_type = 'lists' AND row_id = 'list1' \
        AND json_extract(data, '$.name') = 'from another client'";
    let error = app
        .first_download_error("the download error of the delayed checkpoint, the other client's change stored", 60, || async {
            Ok(app.count(stored).await? == 1)
        })
        .await?;
    Ok(json!({
        "error": error,
        "pending": app.count("SELECT count(*) FROM ps_crud").await?,
        "list1": app.rows(LIST1_NAME).await?,
        "uploadBatches": app.batches.lock().unwrap().len(),
    }))
}

/// Step 6: upload-only: the queued write goes up; the service sees no new
/// stream. Then step 7: a full connection brings both writes back.
pub async fn upload_only_then_full(app: &App, step: &Step) -> Result<Value, AnyError> {
    step.set("an upload-only connection");
    app.db.disconnect().await;
    let streams_before = app.service.stat("streams").await?;
    app.db.connect(app.upload_only()).await;
    app.wait("the upload of the queued write", 60, || async {
        Ok(app.count("SELECT count(*) FROM ps_crud").await? == 0
            && app.batches.lock().unwrap().len() == 5)
    })
    .await?;
    // Long enough for a stream to have been opened, had the SDK opened one.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let upload_only = json!({
        "newStreams": app.service.stat("streams").await? - streams_before,
        "status": {"connected": app.db.status().is_connected(), "downloading": app.db.status().is_downloading()},
        "list1": app.rows(LIST1_NAME).await?,
    });

    step.set("a full connection again");
    app.db.disconnect().await;
    app.db.connect(app.full()).await;
    app.wait("both writes synced", 60, || async {
        let names = app
            .rows("SELECT name FROM lists WHERE id IN ('list1', 'list3') ORDER BY id")
            .await?;
        Ok(names == json!([["from another client"], ["offline edit"]]) && app.idle())
    })
    .await?;
    Ok(
        json!({"uploadOnly": upload_only, "full": app.rows("SELECT id, name FROM lists WHERE id IN ('list1', 'list3') ORDER BY id").await?}),
    )
}

async fn counts(app: &App) -> Result<Value, AnyError> {
    let mut out = json!({});
    for table in [
        "lists",
        "todos",
        "drafts",
        "ps_oplog",
        "ps_crud",
        "ps_buckets",
    ] {
        out[table] = json!(app.count(&format!("SELECT count(*) FROM {table}")).await?);
    }
    out["hasSynced"] = json!(app.db.status().has_synced());
    Ok(out)
}

/// Step 8: sign-out, keeping the local-only drafts, then clearing all.
pub async fn clear(app: &App, step: &Step) -> Result<Value, AnyError> {
    step.set("disconnect_and_clear");
    app.write(&[("INSERT INTO drafts (id, body) VALUES ('draft0', 'draft 0'), ('draft1', 'draft 1'), ('draft2', 'draft 2')", false)])
        .await?;
    let mut keep_local = DisconnectAndClearFlags::default();
    keep_local.clear_local = false;
    app.db.disconnect_and_clear(keep_local).await?;
    let keeping_local = counts(app).await?;
    app.db
        .disconnect_and_clear(DisconnectAndClearFlags::default())
        .await?;
    Ok(json!({"keepingLocal": keeping_local, "all": counts(app).await?}))
}
