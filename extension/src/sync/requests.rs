//! Checkpoint requests (`checkpoint_mode: "requests"`, docs/protocol.md
//! "Write checkpoints"): the client numbers its own write-checkpoint
//! requests. The counter lives in `ps_kv` ([`kv::LAST_REQUESTED`]); the
//! host seeds it with the id the service accepted for the `checkpoint_request`
//! of `EstablishSyncStream`, then allocates ids with
//! `next_checkpoint_request_id` and sets the upload gate
//! ([`crate::kv::TARGET`]) to the one the service accepted.

use rusqlite::Connection;
use serde::Serialize;

use super::payload::Payload;
use crate::sqlite::CachedSql;
use crate::error::{Result, SqliteResultExt};
use crate::kv;

/// The gate's value while local writes wait for an id (not an id itself).
const PENDING_WRITES: i64 = i64::MAX;

/// How the host gets write checkpoints (`start`'s `checkpoint_mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointMode {
    /// The host asks the service for one after an upload.
    #[default]
    Legacy,
    /// The host numbers its own requests, starting from `checkpoint_request`.
    Requests,
}

/// `EstablishSyncStream.checkpoint_request`: what the host posts to the
/// service before allocating ids (the id as a decimal string, so that
/// JavaScript hosts keep all 64 bits).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckpointRequest {
    /// This database's client id.
    pub client_id: String,
    /// The larger of the counter, a concrete gate and 1.
    pub checkpoint_request_id: String,
}

impl CheckpointRequest {
    /// The request for a new iteration: the counter, raised to a gate that
    /// holds a real id (one set before the counter existed), and at least 1
    /// (which also probes whether the service supports requests).
    pub fn initial(db: &Connection, client_id: String) -> Result<Self> {
        let counter = kv::int(db, kv::LAST_REQUESTED)?.unwrap_or(0);
        let gate = kv::int(db, kv::TARGET)?.filter(|t| *t > 0 && *t != PENDING_WRITES).unwrap_or(0);
        Ok(CheckpointRequest { client_id, checkpoint_request_id: counter.max(gate).max(1).to_string() })
    }
}

/// `seed_checkpoint_request_id`: stores the id the service accepted, as
/// given (no check that it grows), and returns it.
pub fn seed(db: &Connection, payload: Payload<'_>) -> Result<i64> {
    let id = payload
        .request_id("checkpoint request id", "checkpoint request id must be an integer or integer string")?;
    kv::set(db, kv::LAST_REQUESTED, id)?;
    Ok(id)
}

/// `next_checkpoint_request_id`: the counter plus one, stored; None when
/// the counter was never seeded.
pub fn next(db: &Connection) -> Result<Option<i64>> {
    if kv::int(db, kv::LAST_REQUESTED)?.is_none() {
        return Ok(None);
    }
    db.query_row_cached(
        "UPDATE ps_kv SET value = CAST(value AS INTEGER) + 1 WHERE key = ?1 RETURNING CAST(value AS INTEGER)",
        [kv::LAST_REQUESTED],
        |r| r.get(0),
    )
    .map(Some)
    .context("allocating a checkpoint request id")
}

/// `current_checkpoint_request_id`: the counter, or None.
pub fn current(db: &Connection) -> Result<Option<i64>> {
    kv::int(db, kv::LAST_REQUESTED)
}

/// `target_checkpoint_request_id`: NULL reads the gate, 0 clears it, a
/// positive id sets it, a negative one is refused. Returns the gate as it
/// was before.
pub fn probe_target(db: &Connection, payload: Payload<'_>) -> Result<Option<i64>> {
    let previous = kv::int(db, kv::TARGET)?;
    match payload.optional_request_id(
        "target checkpoint request id",
        "target checkpoint request id must be an integer, integer string, or null",
    )? {
        None => {}
        Some(0) => kv::delete(db, kv::TARGET)?,
        Some(target) => kv::set(db, kv::TARGET, target)?,
    }
    Ok(previous)
}
