//! The app side of the scenario: the database, its connector (an uploader
//! that posts each local transaction to the service and can be held back),
//! the sync options of each kind of connection, and small SQL helpers.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use powersync::error::PowerSyncError;
use powersync::{
    CheckpointMode, CrudEntry, MutationUploader, PowerSyncDatabase, SyncOptions, UpdateType,
};
use serde_json::{json, Value};
use tokio::sync::watch;

use crate::service::{Credentials, Service};
use crate::AnyError;

/// The database and what connects it.
pub struct App {
    pub db: PowerSyncDatabase,
    pub service: Arc<Service>,
    pub mode: CheckpointMode,
    /// Open: uploads go ahead; closed: the uploader waits.
    gate: watch::Sender<bool>,
    /// Every batch the uploader posted, as posted.
    pub batches: Arc<Mutex<Vec<Value>>>,
}

/// A ps_crud entry as the app's backend receives it.
fn entry_json(entry: &CrudEntry) -> Value {
    let op = match entry.update_type {
        UpdateType::Put => "PUT",
        UpdateType::Patch => "PATCH",
        UpdateType::Delete => "DELETE",
    };
    json!({"op": op, "type": entry.table, "id": entry.id, "data": entry.data})
}

impl App {
    pub fn new(db: PowerSyncDatabase, service: Arc<Service>, mode: CheckpointMode) -> Self {
        App {
            db,
            service,
            mode,
            gate: watch::channel(true).0,
            batches: Arc::default(),
        }
    }

    /// Holds uploads back (until [`Self::open_gate`]), so that several
    /// local transactions are queued before the first is uploaded.
    pub fn close_gate(&self) {
        self.gate.send_replace(false);
    }

    pub fn open_gate(&self) {
        self.gate.send_replace(true);
    }

    fn uploader(&self) -> impl MutationUploader + 'static {
        let (db, service, gate, batches) = (
            self.db.clone(),
            self.service.clone(),
            self.gate.subscribe(),
            self.batches.clone(),
        );
        move || {
            let (db, service, mut gate, batches) =
                (db.clone(), service.clone(), gate.clone(), batches.clone());
            async move {
                let _ = gate.wait_for(|open| *open).await;
                while let Some(tx) = db.next_crud_transaction().await? {
                    let batch = Value::Array(tx.crud.iter().map(entry_json).collect());
                    service.upload(&batch).await?;
                    batches.lock().unwrap().push(batch);
                    tx.complete().await?;
                }
                Ok::<(), PowerSyncError>(())
            }
        }
    }

    fn tuned(&self, mut options: SyncOptions) -> SyncOptions {
        options.with_retry_delay(Duration::from_millis(200));
        options.with_checkpoint_mode(self.mode.clone());
        options
    }

    /// Downloads and uploads.
    pub fn full(&self) -> SyncOptions {
        self.tuned(SyncOptions::new(
            &self.service.url,
            Credentials(self.service.clone()),
            self.uploader(),
        ))
    }

    pub fn download_only(&self) -> SyncOptions {
        self.tuned(SyncOptions::download_only(
            &self.service.url,
            Credentials(self.service.clone()),
        ))
    }

    pub fn upload_only(&self) -> SyncOptions {
        self.tuned(SyncOptions::upload_only(self.uploader()))
    }

    /// One integer from a query.
    pub async fn count(&self, sql: &str) -> Result<i64, AnyError> {
        let reader = self.db.reader().await?;
        Ok(reader.query_row(sql, [], |row| row.get(0))?)
    }

    /// Rows of a query as JSON arrays of their columns (text, integers, null).
    pub async fn rows(&self, sql: &str) -> Result<Value, AnyError> {
        let reader = self.db.reader().await?;
        let mut stmt = reader.prepare(sql)?;
        let columns = stmt.column_count();
        let rows = stmt.query_map([], |row| {
            (0..columns)
                .map(|i| {
                    Ok(match row.get_ref(i)? {
                        rusqlite::types::ValueRef::Null => Value::Null,
                        rusqlite::types::ValueRef::Integer(n) => json!(n),
                        rusqlite::types::ValueRef::Real(f) => json!(f),
                        rusqlite::types::ValueRef::Text(t) => json!(String::from_utf8_lossy(t)),
                        rusqlite::types::ValueRef::Blob(b) => {
                            json!(format!("blob of {} bytes", b.len()))
                        }
                    })
                })
                .collect::<rusqlite::Result<Vec<Value>>>()
                .map(Value::Array)
        })?;
        Ok(Value::Array(rows.collect::<rusqlite::Result<Vec<_>>>()?))
    }

    /// Runs `statements` in one write transaction; after each, the
    /// ps_crud count if `count_after` says so.
    pub async fn write(&self, statements: &[(&str, bool)]) -> Result<Vec<i64>, AnyError> {
        let mut writer = self.db.writer().await?;
        let tx = writer.transaction()?;
        let mut counts = Vec::new();
        for (sql, count_after) in statements {
            tx.execute_batch(sql)?;
            if *count_after {
                counts.push(tx.query_row("SELECT count(*) FROM ps_crud", [], |row| row.get(0))?);
            }
        }
        tx.commit()?;
        Ok(counts)
    }

    /// Polls `done` every 20 ms until it holds, for at most `seconds`.
    pub async fn wait<F, Fut>(&self, what: &str, seconds: u64, done: F) -> Result<(), AnyError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<bool, AnyError>>,
    {
        for _ in 0..seconds * 50 {
            if done().await? {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let s = self.db.status();
        Err(format!(
            "timed out after {seconds} s waiting for {what} (status: connected {}, downloading {}, uploading {}, error {:?})",
            s.is_connected(),
            s.is_downloading(),
            s.is_uploading(),
            s.any_error().map(|e| e.to_string())
        )
        .into())
    }

    /// Waits until the status has shown a download error and `also` holds;
    /// returns the first error it showed (the SDK may clear it again once
    /// it reconnects, so it is caught as it is polled).
    pub async fn first_download_error<F, Fut>(&self, what: &str, seconds: u64, also: F) -> Result<String, AnyError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<bool, AnyError>>,
    {
        let error = Mutex::new(None::<String>);
        self.wait(what, seconds, || async {
            if let Some(e) = self.db.status().download_error() {
                error.lock().unwrap().get_or_insert(e.to_string());
            }
            Ok(error.lock().unwrap().is_some() && also().await?)
        })
        .await?;
        Ok(error.into_inner().unwrap().unwrap_or_default())
    }

    /// Connected, and neither downloading nor uploading.
    pub fn idle(&self) -> bool {
        let s = self.db.status();
        s.is_connected() && !s.is_downloading() && !s.is_uploading()
    }
}
