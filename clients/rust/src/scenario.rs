//! The scenario's online steps: the first sync through a dropped stream,
//! stream subscriptions with priorities, local writes confirmed by a write
//! checkpoint, a token refresh, and a malformed checkpoint line. Each step
//! returns what the comparison (run.mjs) looks at; nothing here depends on
//! which core is linked.

use std::time::{Duration, Instant, SystemTime};

use powersync::{CheckpointMode, StreamPriority, StreamSubscriptionOptions};
use serde_json::{json, Value};

use crate::app::App;
use crate::status::{priorities, streams};
use crate::{AnyError, Step};

/// Lines the service sends before it cuts the first stream.
const DROP_AFTER: usize = 8;

/// Step 1: the first sync, the `todos` stream subscribed before connecting
/// (`lists` is a default stream of priority 1, `todos` priority 3); the
/// service cuts the first stream, the SDK reconnects and resumes. Then
/// `lists` is subscribed explicitly at priority 0.
pub async fn first_sync(
    app: &App,
    step: &Step,
    timings: &mut Value,
) -> Result<(Value, Vec<powersync::StreamSubscription>), AnyError> {
    step.set("subscribing to the todos stream");
    let todos = app.db.sync_stream("todos", None).subscribe().await?;
    step.set("the first sync");
    app.service
        .dev(true, &format!("/dev/drop-next-stream?after={DROP_AFTER}"))
        .await?;
    let started = Instant::now();
    app.db.connect(app.full()).await;
    app.wait("the first complete sync", 300, || async {
        Ok(app.db.status().has_synced())
    })
    .await?;
    todos.wait_for_first_sync().await;
    timings["firstSyncMs"] = json!(started.elapsed().as_millis() as u64);
    let after_first = json!({
        "lists": app.count("SELECT count(*) FROM lists").await?,
        "todos": app.count("SELECT count(*) FROM todos").await?,
        "priorities": priorities(&app.db.status()),
        "streams": streams(&app.db.status()),
    });

    step.set("subscribing to lists at priority 0");
    let streams_before = app.service.stat("streams").await?;
    let mut options = StreamSubscriptionOptions::default();
    options.with_priority(StreamPriority::HIGHEST);
    let lists = app
        .db
        .sync_stream("lists", None)
        .subscribe_with(options)
        .await?;
    app.wait(
        "a new stream for the new subscription, synced",
        60,
        || async {
            let explicit = app.db.status().streams().any(|s| {
                let sub = &s.subscription;
                sub.description().name == "lists"
                    && sub.has_explicit_subscription()
                    && sub.is_active()
            });
            Ok(explicit && app.service.stat("streams").await? > streams_before && app.idle())
        },
    )
    .await?;
    lists.wait_for_first_sync().await;
    let status = app.db.status();
    let result = json!({
        "afterFirstSync": after_first,
        "afterSubscribingLists": {"priorities": priorities(&status), "streams": streams(&status)},
    });
    Ok((result, vec![todos, lists]))
}

/// The local writes of step 2, in three transactions.
const TX1: &[(&str, bool)] = &[
    ("INSERT INTO todos (id, list_id, description, done) VALUES ('local0', 'list1', 'local todo 0', 0), \
      ('local1', 'list1', 'local todo 1', 0), ('local2', 'list1', 'local todo 2', 0), \
      ('local3', 'list1', 'local todo 3', 0), ('local4', 'list1', 'local todo 4', 0)", true),
    ("INSERT INTO lists (id, name, created_at) VALUES ('locallist', 'local list', '2026-02-01T00:00:00Z')", true),
];
const TX2: &[(&str, bool)] = &[
    ("UPDATE todos SET done = 1, description = 'local edit ' || id WHERE id IN ('todo1', 'todo2', 'todo3')", false),
    ("UPDATE lists SET name = 'renamed' WHERE id = 'list2'", false),
];
const TX3: &[(&str, bool)] = &[(
    "DELETE FROM todos WHERE id IN ('todo4', 'todo5', 'local4')",
    false,
)];

/// How many uploaded rows are the service's versions (ps_oplog holds the
/// service's data of each; the app's row has the same values), and how
/// many deleted ones are left anywhere.
async fn server_versions(app: &App) -> Result<Value, AnyError> {
    let same = |table: &str, columns: &[&str], ids: &str| {
        let equal: Vec<String> = columns
            .iter()
            .map(|c| format!("t.{c} IS json_extract(o.data, '$.{c}')"))
            .collect();
        format!(
            "SELECT count(*) FROM {table} t JOIN ps_oplog o ON o.row_type = '{table}' AND o.row_id = t.id \
             WHERE t.id IN ({ids}) AND {}",
            equal.join(" AND ")
        )
    };
    Ok(json!({
        "todos": app.count(&same("todos", &["list_id", "description", "done"], "'local0', 'local1', 'local2', 'local3', 'todo1', 'todo2', 'todo3'")).await?,
        "lists": app.count(&same("lists", &["name", "created_at"], "'locallist', 'list2'")).await?,
        "deletedLeft": app.count("SELECT (SELECT count(*) FROM todos WHERE id IN ('todo4', 'todo5', 'local4')) + \
            (SELECT count(*) FROM ps_oplog WHERE row_type = 'todos' AND row_id IN ('todo4', 'todo5', 'local4'))").await?,
    }))
}

/// Step 2: local writes, uploaded once all three transactions are queued,
/// confirmed by the write checkpoint (legacy: the SDK asks
/// write-checkpoint2.json; requests: it posts a checkpoint request, and
/// `request_checkpoint()` is awaited after the upload too).
pub async fn local_writes(app: &App, step: &Step, timings: &mut Value) -> Result<Value, AnyError> {
    step.set("writing locally");
    let synced_before = app
        .db
        .status()
        .last_synced_at()
        .unwrap_or(SystemTime::UNIX_EPOCH);
    // last_synced_at counts whole seconds: start in the next one, so that
    // the write checkpoint's apply shows as a later time.
    let since = synced_before.duration_since(SystemTime::UNIX_EPOCH)?;
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH)?;
    if let Some(pause) = (since + Duration::from_secs(1)).checked_sub(now) {
        tokio::time::sleep(pause).await;
    }
    let started = Instant::now();
    app.close_gate();
    let pending = app.write(TX1).await?;
    app.write(TX2).await?;
    app.write(TX3).await?;
    app.open_gate();
    step.set("waiting for the upload and its write checkpoint");
    app.wait("the upload queue to drain", 60, || async {
        Ok(app.count("SELECT count(*) FROM ps_crud").await? == 0)
    })
    .await?;
    let asked = match app.mode {
        CheckpointMode::Legacy => "write_checkpoints",
        CheckpointMode::Requests(_) => "checkpoint_requests",
    };
    app.wait("the write checkpoint to be applied", 60, || async {
        let later = app
            .db
            .status()
            .last_synced_at()
            .is_some_and(|t| t > synced_before);
        Ok(later && app.idle() && app.service.stat(asked).await? >= 1)
    })
    .await?;
    app.wait("the local writes in the tables", 30, || async {
        Ok(app
            .count("SELECT count(*) FROM todos WHERE description LIKE 'local%'")
            .await?
            == 7)
    })
    .await?;
    timings["uploadRoundTripMs"] = json!(started.elapsed().as_millis() as u64);

    let mut request = Value::Null;
    if let CheckpointMode::Requests(_) = app.mode {
        step.set("awaiting request_checkpoint()");
        let started = Instant::now();
        let checkpoint = app.db.request_checkpoint().await?;
        tokio::time::timeout(Duration::from_secs(60), checkpoint.wait_for_sync()).await??;
        timings["requestCheckpointMs"] = json!(started.elapsed().as_millis() as u64);
        request = json!({"hasSynced": checkpoint.has_synced()});
    }
    Ok(json!({
        "pendingInTransaction": pending,
        "serverVersions": server_versions(app).await?,
        "requestCheckpoint": request,
        "localRows": app.rows("SELECT * FROM todos WHERE id IN ('local0', 'todo1', 'todo4', 'todo7') ORDER BY id").await?,
    }))
}

/// Step 3: the service expires the token; the SDK asks for new
/// credentials and reconnects, and a write on the new connection uploads.
pub async fn token_refresh(app: &App, step: &Step, timings: &mut Value) -> Result<Value, AnyError> {
    step.set("refreshing the expired token");
    let started = Instant::now();
    let fetches_before = app
        .service
        .credential_fetches
        .load(std::sync::atomic::Ordering::SeqCst);
    let streams_before = app.service.stat("streams").await?;
    let token = app.service.current_token().ok_or("no token held")?;
    app.service
        .dev(true, &format!("/dev/expire-token?token={token}"))
        .await?;
    app.wait("new credentials and a new stream", 60, || async {
        let fetched = app
            .service
            .credential_fetches
            .load(std::sync::atomic::Ordering::SeqCst)
            > fetches_before;
        Ok(fetched
            && app.service.stat("streams").await? > streams_before
            && app.db.status().is_connected())
    })
    .await?;
    app.write(&[("UPDATE todos SET done = 0 WHERE id = 'todo7'", false)])
        .await?;
    app.wait("the upload on the new connection", 60, || async {
        Ok(app.count("SELECT count(*) FROM ps_crud").await? == 0
            && app.batches.lock().unwrap().len() == 4
            && app.idle())
    })
    .await?;
    timings["tokenRefreshMs"] = json!(started.elapsed().as_millis() as u64);
    Ok(json!({"todo7": app.rows("SELECT done FROM todos WHERE id = 'todo7'").await?}))
}

/// Step 4: a checkpoint line whose `last_op_id` is not a number. The core
/// refuses it, the SDK shows a download error and reconnects.
pub async fn malformed_line(app: &App, step: &Step) -> Result<Value, AnyError> {
    step.set("a malformed checkpoint line");
    let streams_before = app.service.stat("streams").await?;
    app.service
        .dev(true, "/dev/bad-next-checkpoint?now=1")
        .await?;
    let error = app.first_download_error("the download error of the bad line", 60, || async { Ok(true) }).await?;
    app.wait("the SDK to sync again after the bad line", 60, || async {
        Ok(app.idle() && app.db.status().download_error().is_none())
    })
    .await?;
    eprintln!("the bad checkpoint line: {error}");
    Ok(json!({"error": error, "newStreams": app.service.stat("streams").await? - streams_before}))
}
