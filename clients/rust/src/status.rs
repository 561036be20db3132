//! What the app saw of the sync status: a task on `watch_status` that keeps
//! which kinds of status appeared, the largest download progress, and the
//! `lists` count when priority 1 was first reported synced. Only what does
//! not depend on timing is kept: `watch_status` hands out the newest
//! status when polled, so a short-lived one may be skipped.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use futures_lite::StreamExt;
use powersync::{PowerSyncDatabase, StreamPriority, SyncStatusData};
use serde_json::{json, Value};

#[derive(Default)]
struct Seen {
    kinds: BTreeSet<&'static str>,
    max_total: i64,
    lists_at_priority_1: Option<i64>,
}

/// The recorder; dropping it does not stop the task, which ends with the
/// database's status stream.
#[derive(Clone, Default)]
pub struct Recorder(Arc<Mutex<Seen>>);

/// Whether priority 1 (and everything above it) has synced.
pub fn priority_1_synced(s: &SyncStatusData) -> bool {
    s.priority_status_for(StreamPriority::ONE)
        .is_some_and(|p| p.has_synced())
}

impl Recorder {
    pub fn start(db: &PowerSyncDatabase) -> Self {
        let recorder = Recorder::default();
        let (seen, db) = (recorder.0.clone(), db.clone());
        tokio::spawn(async move {
            let mut statuses = Box::pin(db.watch_status());
            while let Some(s) = statuses.next().await {
                let first_priority_1 = {
                    let mut seen = seen.lock().unwrap();
                    for (kind, on) in [
                        ("connected", s.is_connected()),
                        ("downloading", s.is_downloading()),
                        ("uploading", s.is_uploading()),
                        ("has synced", s.has_synced()),
                        ("download error", s.download_error().is_some()),
                        ("upload error", s.upload_error().is_some()),
                        ("priority 1 synced", priority_1_synced(&s)),
                    ] {
                        if on {
                            seen.kinds.insert(kind);
                        }
                    }
                    for stream in s.streams() {
                        if let Some(p) = &stream.progress {
                            seen.kinds.insert("progress");
                            seen.max_total = seen.max_total.max(p.total);
                        }
                    }
                    priority_1_synced(&s) && seen.lists_at_priority_1.is_none()
                };
                if first_priority_1 {
                    // Priority 1's rows are all there once it is reported synced.
                    let count = match db.reader().await {
                        Ok(reader) => reader
                            .query_row("SELECT count(*) FROM lists", [], |r| r.get(0))
                            .unwrap_or(-1),
                        Err(_) => -1,
                    };
                    seen.lock().unwrap().lists_at_priority_1 = Some(count);
                }
            }
        });
        recorder
    }

    pub fn report(&self) -> Value {
        let seen = self.0.lock().unwrap();
        json!({
            "kinds": seen.kinds.iter().collect::<Vec<_>>(),
            "maxTotal": seen.max_total,
            "listsWhenPriority1Synced": seen.lists_at_priority_1,
        })
    }
}

/// The streams as the status lists them, sorted by name.
pub fn streams(s: &SyncStatusData) -> Value {
    let mut streams: Vec<Value> = s
        .streams()
        .map(|stream| {
            let sub = &stream.subscription;
            json!({
                "name": sub.description().name,
                "isDefault": sub.is_default(),
                "explicit": sub.has_explicit_subscription(),
                "active": sub.is_active(),
                "hasSynced": sub.has_synced(),
            })
        })
        .collect();
    streams.sort_by_key(|v| v["name"].to_string());
    Value::Array(streams)
}

/// The per-priority status, as (priority, has synced) pairs.
pub fn priorities(s: &SyncStatusData) -> Value {
    Value::Array(
        s.priority_status()
            .iter()
            .map(|p| json!([p.priority.priority_number(), p.has_synced()]))
            .collect(),
    )
}
