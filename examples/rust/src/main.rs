//! A todo list on the PowerSync Rust SDK, synced through oplite.
//!
//! Connects to a PowerSync service, prints the sync status as it changes
//! and the todo count from a watched query, then adds a todo, uploads it
//! through the connector and waits until the service's write checkpoint has
//! brought it back. Exits with 0 once that round trip is done, so that the
//! program is its own test (test.sh runs it against the loopback service).
//!
//! Usage: oplite-rust-todo --endpoint URL (--token JWT | --dev-token)
//!                         [--upload-url URL] [--db FILE] [--add TEXT]

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use futures_lite::StreamExt;
use powersync::env::PowerSyncEnvironment;
use powersync::error::PowerSyncError;
use powersync::schema::{Column, Schema, Table};
use powersync::{Authenticator, ConnectionPool, PowerSyncDatabase, SyncOptions, UpdateType};

mod args;

type AnyError = Box<dyn Error + Send + Sync>;

/// The app's tables: what the loopback service's `two-tables` data holds.
fn schema() -> Schema {
    let mut schema = Schema::default();
    schema.tables.push(Table::create("lists", vec![Column::text("name"), Column::text("created_at")], |_| {}));
    schema.tables.push(Table::create(
        "todos",
        vec![Column::text("list_id"), Column::text("description"), Column::integer("done")],
        |_| {},
    ));
    schema
}

/// Tokens for the SDK and the uploader: a fixed one, or a fresh one from
/// the loopback service's development endpoint each time one is asked for.
struct Tokens {
    http: reqwest::Client,
    endpoint: String,
    fixed: Option<String>,
}

impl Tokens {
    async fn token(&self) -> Result<Arc<String>, PowerSyncError> {
        if let Some(token) = &self.fixed {
            return Ok(Arc::new(token.clone()));
        }
        let url = format!("{}/dev/token?ttl=3600", self.endpoint);
        let response = self.http.get(url).send().await.map_err(PowerSyncError::upload_error)?;
        let token = response.error_for_status().map_err(PowerSyncError::upload_error)?;
        Ok(Arc::new(token.text().await.map_err(PowerSyncError::upload_error)?))
    }
}

/// The SDK's side of [`Tokens`], which the uploader shares.
struct SharedTokens(Arc<Tokens>);

#[async_trait::async_trait]
impl Authenticator for SharedTokens {
    async fn resolve_credentials(&self) -> Result<Arc<String>, PowerSyncError> {
        self.0.token().await
    }
}

/// Posts each local transaction to the backend as `{"batch": [...]}`, the
/// shape the loopback service's `/upload` applies, with the sync token as
/// its credentials, and marks it done.
async fn upload(db: PowerSyncDatabase, tokens: Arc<Tokens>, url: String) -> Result<(), PowerSyncError> {
    while let Some(tx) = db.next_crud_transaction().await? {
        let batch: Vec<serde_json::Value> = tx
            .crud
            .iter()
            .map(|entry| {
                let op = match entry.update_type {
                    UpdateType::Put => "PUT",
                    UpdateType::Patch => "PATCH",
                    UpdateType::Delete => "DELETE",
                };
                serde_json::json!({"op": op, "type": entry.table, "id": entry.id, "data": entry.data})
            })
            .collect();
        let token = tokens.token().await?;
        let response = tokens
            .http
            .post(&url)
            .header("authorization", format!("Token {token}"))
            .header("content-type", "application/json")
            .body(serde_json::json!({ "batch": batch }).to_string())
            .send()
            .await
            .map_err(PowerSyncError::upload_error)?;
        response.error_for_status().map_err(PowerSyncError::upload_error)?;
        println!("uploaded {} change(s)", batch.len());
        tx.complete().await?;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), AnyError> {
    let args = args::parse(std::env::args().skip(1))?;
    // Registers the core (oplite, through the patch) with SQLite.
    PowerSyncEnvironment::powersync_auto_extension()?;
    let http = reqwest::Client::new();
    let pool = ConnectionPool::open(&args.db)?;
    let env = PowerSyncEnvironment::custom(http.clone(), pool, PowerSyncEnvironment::tokio());
    let db = PowerSyncDatabase::new(env, schema());

    {
        let reader = db.reader().await?;
        let core: String = reader.query_row("SELECT powersync_rs_version()", [], |row| row.get(0))?;
        println!("core {core}, SQLite {}", rusqlite::version());
    }

    // The todo count, re-read whenever a write (synced or local) touches it.
    let mut todos = Box::pin(db.watch_statement("SELECT count(*) FROM todos".to_owned(), (), |stmt, params| {
        Ok(stmt.query_row(params, |row| row.get::<_, i64>(0))?)
    }));
    tokio::spawn(async move {
        while let Some(Ok(count)) = todos.next().await {
            println!("todos: {count}");
        }
    });
    let statuses = db.clone();
    tokio::spawn(async move {
        let mut status = Box::pin(statuses.watch_status());
        while let Some(s) = status.next().await {
            let progress: Vec<String> = s
                .streams()
                .filter_map(|stream| stream.progress.as_ref().map(|p| format!("{}/{}", p.downloaded, p.total)))
                .collect();
            println!(
                "status: connected {}, downloading {}, uploading {}, synced {}{}{}",
                s.is_connected(),
                s.is_downloading(),
                s.is_uploading(),
                s.has_synced(),
                if progress.is_empty() { String::new() } else { format!(", progress {}", progress.join(" ")) },
                s.any_error().map(|e| format!(", error: {e}")).unwrap_or_default(),
            );
        }
    });

    let tokens = Arc::new(Tokens { http: http.clone(), endpoint: args.endpoint.clone(), fixed: args.token.clone() });
    let uploader = {
        let (db, tokens, url) = (db.clone(), tokens.clone(), args.upload_url.clone());
        move || upload(db.clone(), tokens.clone(), url.clone())
    };
    db.connect(SyncOptions::new(&args.endpoint, SharedTokens(tokens), uploader)).await;
    wait(&db, "the first sync", |db| async move { Ok(db.status().has_synced()) }).await?;

    let id = format!("rust-{}", std::process::id());
    db.writer().await?.execute(
        "INSERT INTO todos (id, list_id, description, done) VALUES (?, 'list0', ?, 0)",
        rusqlite::params![id, args.add],
    )?;
    println!("added todo {id}: {}", args.add);
    // Uploaded, then synced back: the service's copy is in the oplog.
    wait(&db, "the upload and its write checkpoint", |db| {
        let id = id.clone();
        async move {
            let reader = db.reader().await?;
            let pending: i64 = reader.query_row("SELECT count(*) FROM ps_crud", [], |row| row.get(0))?;
            let echoed: i64 =
                reader.query_row("SELECT count(*) FROM ps_oplog WHERE row_id = ?", [&id], |row| row.get(0))?;
            Ok(pending == 0 && echoed == 1)
        }
    })
    .await?;
    println!("todo {id} is on the service and synced back");
    db.disconnect().await;
    Ok(())
}

/// Polls `done` every 20 ms, for at most two minutes.
async fn wait<F, Fut>(db: &PowerSyncDatabase, what: &str, done: F) -> Result<(), AnyError>
where
    F: Fn(PowerSyncDatabase) -> Fut,
    Fut: std::future::Future<Output = Result<bool, AnyError>>,
{
    for _ in 0..6000 {
        if done(db.clone()).await? {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(format!("timed out waiting for {what}").into())
}
