//! Sync streams: the subscriptions an app asks for, what the sync request
//! says about them, and how each checkpoint's answer maps back onto them.
//! Streams touch every phase of a sync iteration (the `subscriptions` event
//! outside any iteration, `start`, checkpoints, applies, keep-alive lines,
//! `update_subscriptions`), but all of it is bookkeeping on one table,
//! `ps_stream_subscriptions`, plus the `streams` part of the status; keeping
//! it here leaves the state machine in `client.rs` with one call per phase.
//!
//! The rules, as observed on the reference core (0.5.3; the protocol side
//! is in docs/protocol.md):
//!
//! - A row is an *explicit* subscription while its `ttl` is set. Subscribing
//!   sets `ttl` (default one day) and `expires_at = now + ttl`, keeps the
//!   highest priority asked for (a row subscribed once without a priority
//!   keeps none), and unsubscribing clears `ttl` only.
//! - `start`, `update_subscriptions` and keep-alive lines push `expires_at`
//!   forward for the streams the app still uses (`active_streams`); the
//!   request lists explicit rows in id order after deleting expired rows and
//!   rows that are neither explicit nor active.
//! - A checkpoint lists the server's streams: rows of those names become
//!   active, default streams without a row get one (`is_default`), and rows
//!   that are neither explicit nor in the checkpoint are deleted. Bucket
//!   `subscriptions` (`{"default": i}` into the checkpoint's streams,
//!   `{"sub": i}` into the request's subscriptions) tie buckets to streams;
//!   a stream's priority is the lowest (largest number) of its buckets, and
//!   an apply at priority p marks streams whose priority is p or higher.
//! - Times are microseconds since the epoch, like `ps_sync_state`.
//!
//! Stream parameters stay the exact JSON text the app gave: the reference
//! stores and compares them as text, so `{"a":1}` and `{ "a": 1 }` are two
//! subscriptions.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use rusqlite::{params, Connection};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use super::line::{BucketChecksum, BucketSubscription, ErrorSource, StreamDescription};
use super::payload::invalid_argument;
use crate::sqlite::CachedSql;
use crate::error::{OpliteError, Result, SqliteResultExt};

/// TTL of an explicit subscription when the app names none: one day.
pub const DEFAULT_TTL_SECONDS: i64 = 60 * 60 * 24;

/// The largest TTL a subscription may ask for (about 146,000 years): `now +
/// ttl` in microseconds must fit `expires_at`, an INTEGER, for as long as
/// the subscription lives. The reference core takes any TTL and then fails
/// every later request listing the stream ("cannot store REAL value in
/// INTEGER column"); oplite rejects it when subscribing instead.
pub const MAX_TTL_SECONDS: u64 = (i64::MAX / 1_000_000 / 2) as u64;

/// SQL: the current time in microseconds (millisecond precision).
const SQL_NOW_MICROS: &str = "SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER) * 1000";

/// SQL: subscribe (?1 name, ?2 params, ?3 priority, ?4 ttl, ?5 expires_at).
/// A stored priority only ever rises (a smaller number), and a row without
/// one keeps none (`min` with NULL is NULL), as in the reference.
const SQL_SUBSCRIBE: &str = "INSERT INTO ps_stream_subscriptions
    (stream_name, local_params, local_priority, ttl, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)
  ON CONFLICT (stream_name, local_params) DO UPDATE SET
    local_priority = CASE WHEN ?3 IS NULL THEN local_priority ELSE min(?3, local_priority) END,
    ttl = ?4,
    expires_at = ?5";

/// SQL: unsubscribe (?1 name, ?2 params): the row stays until a checkpoint
/// without the stream, or the next request, drops it.
const SQL_UNSUBSCRIBE: &str =
    "UPDATE ps_stream_subscriptions SET ttl = NULL WHERE stream_name = ?1 AND local_params = ?2";

/// SQL: push an explicit subscription's expiry forward (?1 name, ?2 params, ?3 now).
const SQL_EXTEND_TTL: &str = "UPDATE ps_stream_subscriptions SET expires_at = ?3 + ttl * 1000000
  WHERE stream_name = ?1 AND local_params = ?2 AND ttl IS NOT NULL";

/// SQL: whether a row is expired or neither explicit nor active (?1 now).
const SQL_ANY_OUTDATED: &str = "SELECT EXISTS(SELECT 1 FROM ps_stream_subscriptions
  WHERE expires_at < ?1 OR (ttl IS NULL AND NOT active))";

/// SQL: drop those rows (?1 now).
const SQL_DELETE_OUTDATED: &str =
    "DELETE FROM ps_stream_subscriptions WHERE expires_at < ?1 OR (ttl IS NULL AND NOT active)";

/// SQL: explicit subscriptions, in the order the request lists them.
const SQL_EXPLICIT: &str = "SELECT id, stream_name, local_params, local_priority
  FROM ps_stream_subscriptions WHERE ttl IS NOT NULL ORDER BY id";

/// SQL: every row.
const SQL_ALL: &str = "SELECT id, stream_name, active, is_default, local_priority, local_params,
    ttl, expires_at, last_synced_at
  FROM ps_stream_subscriptions ORDER BY id";

/// SQL: a row for a default stream the server included (?1 name).
const SQL_CREATE_DEFAULT: &str =
    "INSERT INTO ps_stream_subscriptions (stream_name, active, is_default) VALUES (?1, 1, 1) RETURNING id";

/// SQL: a row's state after a checkpoint (?1 id, ?2 active, ?3 is_default).
const SQL_SET_STATE: &str = "UPDATE ps_stream_subscriptions SET active = ?2, is_default = ?3 WHERE id = ?1";

/// SQL: drop a row (?1 id).
const SQL_DELETE: &str = "DELETE FROM ps_stream_subscriptions WHERE id = ?1";

/// SQL: a stream's data was applied (?1 id, ?2 time).
const SQL_MARK_SYNCED: &str = "UPDATE ps_stream_subscriptions SET last_synced_at = ?2 WHERE id = ?1";

/// The current time in microseconds since the epoch.
pub fn now_micros(db: &Connection) -> Result<i64> {
    db.query_row_cached(SQL_NOW_MICROS, [], |r| r.get(0)).context("reading the clock")
}

/// JSON text kept as it was written, serialised verbatim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawJson(String);

impl RawJson {
    /// JSON `null`: a subscription without parameters.
    pub fn null() -> Self {
        RawJson("null".to_owned())
    }

    /// Checks that `text` is JSON (stored parameters are written by the app).
    fn parse(text: String, what: &str) -> Result<Self> {
        match serde_json::from_str::<&RawValue>(&text) {
            Ok(_) => Ok(RawJson(text)),
            Err(e) => Err(OpliteError::Malformed { what: "stream parameters", message: format!("{what}: {e}") }),
        }
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn is_null(&self) -> bool {
        self.0 == "null"
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let raw: &RawValue = serde_json::from_str(&self.0).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

/// A stream and its parameters: what identifies a subscription.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamKey {
    /// The stream's name.
    pub name: String,
    /// The parameters as given (`null` when absent).
    pub params: RawJson,
}

impl<'de> Deserialize<'de> for StreamKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Given {
            name: String,
            #[serde(default)]
            params: Option<Box<RawValue>>,
        }
        let given = Given::deserialize(deserializer)?;
        let params = given.params.map_or_else(RawJson::null, |p| RawJson(p.get().to_owned()));
        Ok(StreamKey { name: given.name, params })
    }
}

/// The payload of the `subscriptions` event.
#[derive(Debug, Deserialize)]
pub enum SubscriptionChange {
    /// `{"subscribe": {"stream": {name, params?}, "ttl"?: seconds, "priority"?: n}}`
    #[serde(rename = "subscribe")]
    Subscribe {
        /// The stream.
        stream: StreamKey,
        /// Seconds the subscription outlives its last use.
        #[serde(default)]
        ttl: Option<u64>,
        /// A priority overriding the stream's own.
        #[serde(default)]
        priority: Option<i32>,
    },
    /// `{"unsubscribe": {name, params?}}`: ends the explicit subscription.
    #[serde(rename = "unsubscribe")]
    Unsubscribe(StreamKey),
}

/// Decodes and applies a `subscriptions` event. A bad payload changes
/// nothing.
pub fn apply_change(db: &Connection, payload: &str) -> Result<()> {
    let change: SubscriptionChange =
        serde_json::from_str(payload).map_err(|e| invalid_argument(format!("subscriptions payload: {e}")))?;
    match change {
        SubscriptionChange::Subscribe { stream, ttl, priority } => {
            if let Some(p) = priority {
                if !(0..i32::MAX).contains(&p) {
                    return Err(invalid_argument(format!(
                        "subscriptions payload: priority {p} of stream {:?} is not a bucket priority (0 or more)",
                        stream.name
                    )));
                }
            }
            if let Some(t) = ttl.filter(|t| *t > MAX_TTL_SECONDS) {
                return Err(invalid_argument(format!(
                    "subscriptions payload: ttl {t} of stream {:?} is too large (at most {MAX_TTL_SECONDS} seconds)",
                    stream.name
                )));
            }
            let ttl = ttl.map_or(DEFAULT_TTL_SECONDS, |t| t as i64);
            let expires_at = now_micros(db)? + ttl * 1_000_000;
            db.execute_cached(SQL_SUBSCRIBE, params![stream.name, stream.params.as_str(), priority, ttl, expires_at])
                .context("subscribing to a stream")?;
        }
        SubscriptionChange::Unsubscribe(stream) => {
            db.execute_cached(SQL_UNSUBSCRIBE, params![stream.name, stream.params.as_str()])
                .context("unsubscribing from a stream")?;
        }
    }
    Ok(())
}

/// Decodes the `update_subscriptions` payload: the streams the app uses.
pub fn parse_active_streams(payload: &str) -> Result<Vec<StreamKey>> {
    serde_json::from_str(payload).map_err(|e| invalid_argument(format!("update_subscriptions payload: {e}")))
}

/// One explicit subscription in the sync request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RequestedSubscription {
    /// The stream's name.
    pub stream: String,
    /// Its parameters.
    pub parameters: RawJson,
    /// The priority the app asked for.
    pub override_priority: Option<i32>,
}

/// The `streams` part of the sync request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StreamsRequest {
    /// Whether the server should include default streams.
    pub include_defaults: bool,
    /// Explicit subscriptions, in id order.
    pub subscriptions: Vec<RequestedSubscription>,
}

impl StreamsRequest {
    /// Deletes outdated rows (expired, or neither explicit nor active), then
    /// lists explicit subscriptions with their row ids (bucket `{"sub": i}`
    /// and error indexes refer to that order). Runs on every keep-alive, so
    /// it writes only when a row is outdated: otherwise a read transaction
    /// stays one.
    pub fn prune_and_list(db: &Connection, include_defaults: bool) -> Result<(Self, Vec<i64>)> {
        const CONTEXT: &str = "listing stream subscriptions";
        let now = now_micros(db)?;
        if db.query_row_cached(SQL_ANY_OUTDATED, [now], |r| r.get::<_, bool>(0)).context(CONTEXT)? {
            db.execute_cached(SQL_DELETE_OUTDATED, [now]).context(CONTEXT)?;
        }
        let mut stmt = db.prepare_cached(SQL_EXPLICIT).context(CONTEXT)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, Option<i32>>(3)?))
            })
            .context(CONTEXT)?;
        let mut subscriptions = Vec::new();
        let mut ids = Vec::new();
        for row in rows {
            let (id, stream, params, override_priority) = row.context(CONTEXT)?;
            let parameters = RawJson::parse(params, &format!("subscription {id} to stream {stream:?}"))?;
            subscriptions.push(RequestedSubscription { stream, parameters, override_priority });
            ids.push(id);
        }
        Ok((StreamsRequest { include_defaults, subscriptions }, ids))
    }
}

/// Pushes the expiry of the given explicit subscriptions to now + ttl.
pub fn extend_ttl(db: &Connection, streams: &[StreamKey]) -> Result<()> {
    if streams.is_empty() {
        return Ok(());
    }
    let now = now_micros(db)?;
    let mut stmt = db.prepare_cached(SQL_EXTEND_TTL).context("extending stream subscriptions")?;
    for key in streams {
        stmt.execute(params![key.name, key.params.as_str(), now]).context("extending stream subscriptions")?;
    }
    Ok(())
}

/// The streams of one sync iteration: fixed at `start` except for the
/// streams the app uses, which `update_subscriptions` may replace.
#[derive(Clone, Debug)]
pub struct IterationStreams {
    include_defaults: bool,
    active: Vec<StreamKey>,
    request: StreamsRequest,
    /// Row ids of `request.subscriptions`, in order.
    pub requested_ids: Vec<i64>,
}

impl IterationStreams {
    /// Extends the TTLs of the streams in use (`active`) and builds the
    /// request.
    pub fn start(db: &Connection, active: Vec<StreamKey>, include_defaults: bool) -> Result<Self> {
        extend_ttl(db, &active)?;
        let (request, requested_ids) = StreamsRequest::prune_and_list(db, include_defaults)?;
        Ok(IterationStreams { include_defaults, active, request, requested_ids })
    }

    /// The `streams` part of the sync request.
    pub fn request(&self) -> &StreamsRequest {
        &self.request
    }

    /// A keep-alive: extends the active streams' TTLs.
    pub fn keep_alive(&self, db: &Connection) -> Result<()> {
        extend_ttl(db, &self.active)
    }

    /// Whether the request built now (after dropping outdated rows) differs
    /// from the one this iteration was opened with.
    pub fn request_changed(&self, db: &Connection) -> Result<bool> {
        let (now, _) = StreamsRequest::prune_and_list(db, self.include_defaults)?;
        Ok(now != self.request)
    }

    /// `update_subscriptions`: extends the TTLs of `active`; returns true
    /// when the request changed (the host must reconnect), else keeps
    /// `active` for later keep-alives.
    pub fn update(&mut self, db: &Connection, active: Vec<StreamKey>) -> Result<bool> {
        extend_ttl(db, &active)?;
        if self.request_changed(db)? {
            return Ok(true);
        }
        self.active = active;
        Ok(false)
    }
}

/// Download progress of one stream, summed over its buckets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StreamProgress {
    /// Ops to download for the current checkpoint.
    pub total: i64,
    /// Ops downloaded so far.
    pub downloaded: i64,
}

/// One entry of the status's `streams`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StreamStatus {
    /// The row id in `ps_stream_subscriptions`.
    #[serde(skip)]
    pub id: i64,
    /// The stream's name.
    pub name: String,
    /// Its parameters.
    pub parameters: RawJson,
    /// The lowest priority (largest number) of its buckets in the
    /// checkpoint; none before a checkpoint or without buckets.
    pub priority: Option<i32>,
    /// Whether the last checkpoint included the stream.
    pub active: bool,
    /// Whether the server syncs it as a default stream.
    pub is_default: bool,
    /// Whether the app subscribed explicitly (`ttl` set).
    pub has_explicit_subscription: bool,
    /// When the explicit subscription expires (microseconds).
    pub expires_at: Option<i64>,
    /// When its data was last applied (microseconds).
    pub last_synced_at: Option<i64>,
    /// Download progress of the current checkpoint.
    pub progress: StreamProgress,
    /// Checkpoint buckets synced because of this stream (shared with the
    /// copy of the status the sync client keeps while a call runs).
    #[serde(skip)]
    pub buckets: Arc<BTreeSet<String>>,
}

impl StreamStatus {
    /// Whether an apply at `priority` (None: a full apply) covers the stream.
    fn covered_by(&self, priority: Option<i32>) -> bool {
        match priority {
            None => true,
            Some(p) => self.priority.is_some_and(|own| own <= p),
        }
    }
}

/// A row of `ps_stream_subscriptions`.
#[derive(Debug)]
struct Row {
    id: i64,
    name: String,
    active: bool,
    is_default: bool,
    params: RawJson,
    ttl: Option<i64>,
    expires_at: Option<i64>,
    last_synced_at: Option<i64>,
}

impl Row {
    fn status(&self) -> StreamStatus {
        StreamStatus {
            id: self.id,
            name: self.name.clone(),
            parameters: self.params.clone(),
            priority: None,
            active: self.active,
            is_default: self.is_default,
            has_explicit_subscription: self.ttl.is_some(),
            expires_at: self.expires_at,
            last_synced_at: self.last_synced_at,
            progress: StreamProgress::default(),
            buckets: Arc::default(),
        }
    }
}

fn rows(db: &Connection) -> Result<Vec<Row>> {
    const CONTEXT: &str = "reading stream subscriptions";
    let mut stmt = db.prepare_cached(SQL_ALL).context(CONTEXT)?;
    let raw = stmt
        .query_map([], |r| {
            Ok((
                Row {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    active: r.get(2)?,
                    is_default: r.get(3)?,
                    params: RawJson::null(),
                    ttl: r.get(6)?,
                    expires_at: r.get(7)?,
                    last_synced_at: r.get(8)?,
                },
                r.get::<_, String>(5)?,
            ))
        })
        .context(CONTEXT)?;
    let mut out = Vec::new();
    for row in raw {
        let (mut row, params) = row.context(CONTEXT)?;
        row.params = RawJson::parse(params, &format!("subscription {} to stream {:?}", row.id, row.name))?;
        out.push(row);
    }
    Ok(out)
}

/// Every subscription as the status reports it outside a checkpoint
/// (`powersync_offline_sync_status()`, `start`).
pub fn offline(db: &Connection) -> Result<Vec<StreamStatus>> {
    Ok(rows(db)?.iter().map(Row::status).collect())
}

/// A local row while a checkpoint is resolved.
struct Tracked {
    row: Row,
    /// Index of the checkpoint stream with the row's name.
    server: Option<usize>,
    stored: (bool, bool),
}

/// Reconciles `ps_stream_subscriptions` with a checkpoint's `streams` and
/// bucket `subscriptions` (see the module docs); returns the status's
/// streams, and adds to `warnings` one line per stream error the checkpoint
/// reports (the caller logs them as WARNINGs).
pub fn resolve(
    db: &Connection,
    streams: &[StreamDescription],
    requested_ids: &[i64],
    buckets: &[BucketChecksum<'_>],
    warnings: &mut Vec<String>,
) -> Result<Vec<StreamStatus>> {
    const CONTEXT: &str = "recording the checkpoint's streams";
    let mut tracked: Vec<Tracked> = rows(db)?
        .into_iter()
        .map(|mut row| {
            let stored = (row.active, row.is_default);
            row.active = false;
            row.is_default = false;
            Tracked { row, server: None, stored }
        })
        .collect();

    for (index, stream) in streams.iter().enumerate() {
        let mut known = false;
        for local in tracked.iter_mut().filter(|t| t.row.name == stream.name) {
            local.server = Some(index);
            local.row.active = true;
            local.row.is_default = stream.is_default;
            known = true;
        }
        for error in &stream.errors {
            match error.subscription {
                ErrorSource::Default => {
                    warnings.push(format!("Default subscription {} has errors: {}", stream.name, error.message))
                }
                ErrorSource::Explicit(i) => {
                    let Some(id) = requested_ids.get(i) else {
                        continue;
                    };
                    for local in tracked.iter().filter(|t| t.row.id == *id) {
                        let params = if local.row.params.is_null() {
                            "(without parameters)".to_owned()
                        } else {
                            format!("(with parameters {})", local.row.params.as_str())
                        };
                        warnings.push(format!(
                            "Subscription to stream {} {params} could not be resolved: {}",
                            local.row.name, error.message
                        ));
                    }
                }
            }
        }
        if !known && stream.is_default {
            let id: i64 = db.query_row_cached(SQL_CREATE_DEFAULT, [&stream.name], |r| r.get(0)).context(CONTEXT)?;
            let row = Row {
                id,
                name: stream.name.clone(),
                active: true,
                is_default: true,
                params: RawJson::null(),
                ttl: None,
                expires_at: None,
                last_synced_at: None,
            };
            tracked.push(Tracked { row, server: Some(index), stored: (true, true) });
        }
    }

    let mut delete = db.prepare_cached(SQL_DELETE).context(CONTEXT)?;
    let mut update = db.prepare_cached(SQL_SET_STATE).context(CONTEXT)?;
    for local in &tracked {
        if local.row.ttl.is_none() && local.server.is_none() {
            delete.execute([local.row.id]).context(CONTEXT)?;
        } else if local.stored != (local.row.active, local.row.is_default) {
            update.execute(params![local.row.id, local.row.active, local.row.is_default]).context(CONTEXT)?;
        }
    }
    tracked.retain(|t| t.row.ttl.is_some() || t.server.is_some());

    let mut statuses: Vec<StreamStatus> = tracked.iter().map(|t| t.row.status()).collect();
    // Checkpoint stream index -> status index, for streams synced by default
    // (not explicitly subscribed); the first row of a name wins.
    let mut by_default: HashMap<usize, usize> = HashMap::new();
    for (i, local) in tracked.iter().enumerate() {
        if let Some(server) = local.server {
            if streams[server].is_default && local.row.ttl.is_none() {
                by_default.entry(server).or_insert(i);
            }
        }
    }
    for bucket in buckets {
        for reason in &bucket.subscriptions {
            let target = match *reason {
                BucketSubscription::Default(i) => by_default.get(&i).copied(),
                BucketSubscription::Explicit(i) => {
                    requested_ids.get(i).and_then(|id| tracked.iter().position(|t| t.row.id == *id))
                }
            };
            if let Some(status) = target.map(|i| &mut statuses[i]) {
                Arc::make_mut(&mut status.buckets).insert(bucket.bucket.to_string());
                let priority = bucket.priority();
                status.priority = Some(status.priority.map_or(priority, |own| own.max(priority)));
            }
        }
    }
    Ok(statuses)
}

/// After an apply at `priority` (None: full), records `at` as the sync time
/// of every stream it covers.
pub fn mark_synced(db: &Connection, streams: &mut [StreamStatus], priority: Option<i32>, at: i64) -> Result<()> {
    if streams.is_empty() {
        return Ok(());
    }
    let mut stmt = db.prepare_cached(SQL_MARK_SYNCED).context("recording stream sync times")?;
    for stream in streams.iter().filter(|s| s.covered_by(priority)) {
        stmt.execute(params![stream.id, at]).context("recording stream sync times")?;
    }
    for stream in streams.iter_mut().filter(|s| s.covered_by(priority)) {
        stream.last_synced_at = Some(at);
    }
    Ok(())
}

/// Sets every stream's progress from per-bucket progress (None: no
/// checkpoint is being downloaded).
pub fn set_progress(streams: &mut [StreamStatus], buckets: Option<&HashMap<&str, StreamProgress>>) {
    for stream in streams {
        let mut progress = StreamProgress::default();
        if let Some(buckets) = buckets {
            for bucket in stream.buckets.iter().filter_map(|b| buckets.get(b.as_str())) {
                progress.total += bucket.total;
                progress.downloaded += bucket.downloaded;
            }
        }
        stream.progress = progress;
    }
}

#[cfg(test)]
mod tests;
