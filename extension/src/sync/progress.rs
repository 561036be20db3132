//! Download progress kept line by line, and the per-bucket counters it is
//! computed from.
//!
//! The status reports, per priority and per stream, sums over every bucket
//! of the checkpoint (see [`super::status`]). Summing on every data line
//! made a line cost time proportional to the checkpoint's bucket count
//! (2.2 ms per one-op line with 10,000 buckets, 5.7 ms with 20,000), while
//! a line changes one bucket. So [`Progress`] holds the sums and a data line
//! adds the difference its bucket's counters made; the sums are computed in
//! full only when a checkpoint (or diff) arrives and after a full apply
//! reloads the counters. [`Progress::compute`] is the one definition of the
//! sums: the unit tests check after every line of randomized sessions that
//! the kept sums equal it.
//!
//! The counters live in [`CounterMap`], which the sync client copies before
//! every call to put back if the call fails. A plain map made that copy
//! cost time proportional to the bucket count too; this one shares what
//! earlier calls wrote and copies only what the current call changed.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::line::BucketChecksum;
use super::status::{DownloadProgress, PriorityProgress, SyncStatus};
use super::storage::Counters;
use super::streams::{StreamProgress, StreamStatus};

/// Per-bucket progress counters of an iteration, cheap to copy.
///
/// Counters written by earlier calls are in `base`, behind an `Arc` that a
/// copy shares; the current call's changes go to `changes`. [`settle`]
/// (called before each copy, when no copy holds `base` any more) moves the
/// changes into `base` without copying it.
///
/// [`settle`]: CounterMap::settle
#[derive(Clone, Debug, Default)]
pub struct CounterMap {
    base: Arc<HashMap<Arc<str>, Counters>>,
    /// Changes since the last settle; `None` removes the bucket.
    changes: HashMap<Arc<str>, Option<Counters>>,
}

impl CounterMap {
    /// A map holding these counters.
    pub fn new(counters: HashMap<String, Counters>) -> Self {
        let base = counters.into_iter().map(|(name, c)| (Arc::from(name), c)).collect();
        CounterMap { base: Arc::new(base), changes: HashMap::new() }
    }

    /// A bucket's counters (zero for a bucket not stored).
    pub fn get(&self, bucket: &str) -> Counters {
        match self.changes.get(bucket) {
            Some(changed) => changed.unwrap_or_default(),
            None => self.base.get(bucket).copied().unwrap_or_default(),
        }
    }

    /// Sets a bucket's counters; returns those it had.
    pub fn insert(&mut self, bucket: &str, counters: Counters) -> Counters {
        let old = self.get(bucket);
        self.changes.insert(Arc::from(bucket), Some(counters));
        old
    }

    /// Forgets a bucket.
    pub fn remove(&mut self, bucket: &str) {
        self.changes.insert(Arc::from(bucket), None);
    }

    /// Moves the changes into the shared part. Copies that part only when
    /// a copy of this map still holds it.
    pub fn settle(&mut self) {
        if self.changes.is_empty() {
            return;
        }
        let base = Arc::make_mut(&mut self.base);
        for (name, change) in self.changes.drain() {
            match change {
                Some(counters) => base.insert(name, counters),
                None => base.remove(&name),
            };
        }
    }
}

/// What the sums need of one bucket name of the checkpoint.
#[derive(Debug, Default, PartialEq)]
struct BucketEntry {
    /// (priority, count) of every checkpoint entry with this name (a
    /// checkpoint naming a bucket twice counts it twice per priority).
    entries: Vec<(i32, Option<i64>)>,
    /// The count the streams see: that of the last entry with the name.
    stream_count: Option<i64>,
    /// Indexes of the status's streams that sync the bucket.
    streams: Vec<usize>,
}

/// Download progress of the current checkpoint, per priority and per
/// stream, kept up to date line by line.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// The checkpoint's buckets by name (shared with copies).
    buckets: Arc<HashMap<Arc<str>, BucketEntry>>,
    by_priority: BTreeMap<i32, PriorityProgress>,
    /// Per stream of the status, in its order.
    streams: Vec<StreamProgress>,
}

impl Progress {
    /// The sums over the checkpoint's buckets: per priority, downloads since
    /// the last full apply and the checkpoint's count minus the count held
    /// then (a bucket without a count adds 0 to the target); per stream, the
    /// same over the stream's buckets (with the count of the last entry
    /// naming the bucket, and 0 without one).
    pub fn compute(buckets: &[BucketChecksum<'_>], streams: &[StreamStatus], counters: &CounterMap) -> Self {
        let mut by_name: HashMap<Arc<str>, BucketEntry> = HashMap::with_capacity(buckets.len());
        let mut by_priority = BTreeMap::new();
        for bucket in buckets {
            let entry = by_name.entry(Arc::from(&*bucket.bucket)).or_default();
            entry.entries.push((bucket.priority(), bucket.count));
            entry.stream_count = bucket.count;
            by_priority.insert(bucket.priority(), PriorityProgress { priority: bucket.priority(), ..Default::default() });
        }
        for (i, stream) in streams.iter().enumerate() {
            for name in stream.buckets.iter() {
                if let Some(entry) = by_name.get_mut(name.as_str()) {
                    entry.streams.push(i);
                }
            }
        }
        let mut progress =
            Progress { buckets: Arc::new(by_name), by_priority, streams: vec![StreamProgress::default(); streams.len()] };
        progress.recompute(counters);
        progress
    }

    /// The sums again, over the same checkpoint, from every bucket's
    /// counters (after a full apply changed them all).
    pub fn recompute(&mut self, counters: &CounterMap) {
        for sums in self.by_priority.values_mut() {
            (sums.since_last, sums.target_count) = (0, 0);
        }
        self.streams.fill(StreamProgress::default());
        let buckets = Arc::clone(&self.buckets);
        for (name, entry) in buckets.iter() {
            self.add(entry, counters.get(name), false);
        }
    }

    /// A bucket's counters went from `old` to `new`.
    pub fn update(&mut self, bucket: &str, old: Counters, new: Counters) {
        let buckets = Arc::clone(&self.buckets);
        if let Some(entry) = buckets.get(bucket) {
            self.add(entry, old, true);
            self.add(entry, new, false);
        }
    }

    /// Adds (or takes away) one bucket's part of the sums.
    fn add(&mut self, entry: &BucketEntry, counters: Counters, take_away: bool) {
        let sign: i64 = if take_away { -1 } else { 1 };
        let since_last = counters.since_last.wrapping_mul(sign);
        for (priority, count) in &entry.entries {
            let sums = self.by_priority.get_mut(priority).expect("every priority of the checkpoint has sums");
            sums.since_last = sums.since_last.wrapping_add(since_last);
            if let Some(count) = count {
                sums.target_count = sums.target_count.wrapping_add(count.wrapping_sub(counters.at_last).wrapping_mul(sign));
            }
        }
        let total = entry.stream_count.map_or(0, |count| count.wrapping_sub(counters.at_last)).wrapping_mul(sign);
        for &i in &entry.streams {
            let sums = &mut self.streams[i];
            sums.total = sums.total.wrapping_add(total);
            sums.downloaded = sums.downloaded.wrapping_add(since_last);
        }
    }

    /// Writes the sums into the status (its streams must be those the sums
    /// were computed for).
    pub fn publish(&self, status: &mut SyncStatus) {
        status.downloading = Some(DownloadProgress { by_priority: self.by_priority.clone() });
        for (stream, sums) in status.streams.iter_mut().zip(&self.streams) {
            stream.progress = *sums;
        }
    }
}
