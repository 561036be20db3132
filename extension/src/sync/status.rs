//! The sync status reported to the host: connection state, last sync per
//! priority, and download progress.
//!
//! Progress follows the reference core: per priority, `since_last` is the
//! number of ops downloaded since the last full apply and `target_count` is
//! the checkpoint's op count minus the count held at that apply, summed over
//! the checkpoint's buckets of that priority. `at_last` is always 0.

use std::collections::BTreeMap;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::streams::{self, StreamStatus};

/// The priority recorded in `ps_sync_state` for a full sync.
pub const FULL_SYNC_PRIORITY: i32 = 2147483647;

/// The status as the host sees it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SyncStatus {
    /// The stream is open and a line has arrived.
    pub connected: bool,
    /// A stream was requested and has not produced a line yet.
    pub connecting: bool,
    /// Last sync per priority, ascending.
    pub priority_status: Vec<PriorityStatus>,
    /// Download progress while a checkpoint is being downloaded.
    pub downloading: Option<DownloadProgress>,
    /// Stream subscriptions, with their download progress.
    pub streams: Vec<StreamStatus>,
    /// The write checkpoint of the last applied checkpoint, when it had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub internal_last_applied_checkpoint_request_id: Option<String>,
}

impl SyncStatus {
    /// The stream is open and has answered.
    pub fn mark_connected(&mut self) {
        self.connected = true;
        self.connecting = false;
    }

    /// No checkpoint is being downloaded any more: no progress to report,
    /// for priorities or streams.
    pub fn stop_downloading(&mut self) {
        self.downloading = None;
        streams::set_progress(&mut self.streams, None);
    }
}

/// One row of `ps_sync_state`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PriorityStatus {
    /// The priority; [`FULL_SYNC_PRIORITY`] for a full sync.
    pub priority: i32,
    /// Microseconds since the epoch.
    pub last_synced_at: i64,
    /// Always true for a recorded sync.
    pub has_synced: bool,
}

/// Progress of one priority.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PriorityProgress {
    /// The priority.
    pub priority: i32,
    /// Always 0 (kept for the SDKs).
    pub at_last: i64,
    /// Ops downloaded since the last full apply.
    pub since_last: i64,
    /// Ops to download for this checkpoint.
    pub target_count: i64,
}

/// Progress per priority, serialised as `{"buckets": {"prio_3": ..., "prio_0": ...}}`
/// with the highest number first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DownloadProgress {
    /// Keyed by priority.
    pub by_priority: BTreeMap<i32, PriorityProgress>,
}

/// One bucket's contribution to progress. With [`DownloadProgress::from_buckets`]
/// the full per-bucket summation, which the sync client no longer runs (it
/// keeps the sums line by line, `sync/progress.rs`): the tests' oracle.
#[cfg(test)]
#[derive(Clone, Copy, Debug)]
pub struct BucketProgress {
    /// The bucket's priority.
    pub priority: i32,
    /// The op count in the checkpoint, when the server sent one.
    pub target: Option<i64>,
    /// `ps_buckets.count_at_last`.
    pub at_last: i64,
    /// `ps_buckets.count_since_last`.
    pub since_last: i64,
}

#[cfg(test)]
impl DownloadProgress {
    /// Sums bucket counters per priority.
    pub fn from_buckets(buckets: impl IntoIterator<Item = BucketProgress>) -> Self {
        let mut by_priority: BTreeMap<i32, PriorityProgress> = BTreeMap::new();
        for bucket in buckets {
            let entry = by_priority
                .entry(bucket.priority)
                .or_insert(PriorityProgress { priority: bucket.priority, ..Default::default() });
            entry.since_last += bucket.since_last;
            if let Some(target) = bucket.target {
                entry.target_count += target - bucket.at_last;
            }
        }
        DownloadProgress { by_priority }
    }
}

impl Serialize for DownloadProgress {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Buckets<'a>(&'a BTreeMap<i32, PriorityProgress>);
        impl Serialize for Buckets<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(self.0.len()))?;
                for (priority, progress) in self.0.iter().rev() {
                    map.serialize_entry(&format!("prio_{priority}"), progress)?;
                }
                map.end()
            }
        }
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("buckets", &Buckets(&self.by_priority))?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_sums_per_priority_highest_number_first() {
        let progress = DownloadProgress::from_buckets([
            BucketProgress { priority: 0, target: Some(4), at_last: 0, since_last: 2 },
            BucketProgress { priority: 3, target: Some(11), at_last: 6, since_last: 2 },
            BucketProgress { priority: 3, target: None, at_last: 0, since_last: 1 },
        ]);
        assert_eq!(
            serde_json::to_string(&progress).unwrap(),
            r#"{"buckets":{"prio_3":{"priority":3,"at_last":0,"since_last":3,"target_count":5},"prio_0":{"priority":0,"at_last":0,"since_last":2,"target_count":4}}}"#
        );
    }

    #[test]
    fn status_field_order() {
        let status = SyncStatus {
            connecting: true,
            priority_status: vec![PriorityStatus { priority: FULL_SYNC_PRIORITY, last_synced_at: 5, has_synced: true }],
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_string(&status).unwrap(),
            r#"{"connected":false,"connecting":true,"priority_status":[{"priority":2147483647,"last_synced_at":5,"has_synced":true}],"downloading":null,"streams":[]}"#
        );
    }
}
