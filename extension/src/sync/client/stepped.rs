//! Applying a checkpoint in steps, ahead of the call that applies it.
//!
//! A host with one thread (the web adapter's Worker) cannot answer queries
//! while `powersync_control` applies a large checkpoint. So before it makes
//! a call it asks `oplite_apply_prepare(op, payload)` whether that call
//! would apply one; if so it writes the rows with `oplite_apply_step(budget)`
//! calls in the same transaction, turning its event loop between them (its
//! second connection reads the last committed state meanwhile), and then
//! makes the call, which finds the rows written and does the rest as usual:
//! the bookkeeping, the status, the instructions. The prediction reads what
//! the call will read and writes nothing; a prepared apply the call does not
//! use fails the call, so the host rolls the rows back.

use rusqlite::Connection;

use super::{CompletionKind, Iteration, SyncClient};
use crate::kv;
use crate::error::{OpliteError, Result};
use crate::schema::RawTable;
use crate::sync::line::{self, SyncLine};
use crate::sync::payload::Payload;
use crate::sync::storage;
use crate::sync_local::{self, Apply, ApplyReport, Scope, Setting, Stage};

fn misuse(function: &'static str, reason: impl Into<String>) -> OpliteError {
    OpliteError::Misuse { function, reason: reason.into() }
}

/// The error of a call that left a prepared apply unused.
pub(super) fn unused_apply() -> OpliteError {
    misuse("powersync_control", "the apply prepared by oplite_apply_prepare() was not the one this call made")
}

/// The apply of `scope` for a completing call: the prepared one once all its
/// steps ran (finished here if the host stopped early), or a new one.
pub(super) fn apply(
    db: &Connection,
    prepared: &mut Option<Apply>,
    scope: Scope,
    setting: Setting,
    raw_tables: Option<&[RawTable]>,
) -> Result<ApplyReport> {
    match prepared.take() {
        None => sync_local::apply(db, &scope, setting, raw_tables),
        Some(job) if *job.scope() != scope => Err(unused_apply()),
        Some(mut job) => {
            while !job.step(db, u64::MAX)? {}
            Ok(job.report())
        }
    }
}

/// The first key of a sync line, read without decoding the rest: a data
/// line is not parsed twice to learn that it applies nothing.
fn first_key<'a>(op: &str, payload: &Payload<'a>) -> Option<&'a [u8]> {
    match (op, payload) {
        ("line_text", Payload::Text(text)) => {
            let rest = &text.as_bytes()[text.find('"')? + 1..];
            Some(&rest[..rest.iter().position(|&b| b == b'"')?])
        }
        // A BSON document: its size (4 bytes), then the first element's
        // type byte and its NUL-terminated name.
        ("line_binary", Payload::Blob(bytes)) => {
            let rest = bytes.get(5..)?;
            Some(&rest[..rest.iter().position(|&b| b == 0)?])
        }
        _ => None,
    }
}

impl SyncClient {
    /// `oplite_apply_prepare(op, payload)`: if `powersync_control(op,
    /// payload)` would apply a checkpoint now, starts that apply (writing
    /// nothing yet) and returns true. Replaces an apply prepared before.
    pub fn prepare_apply(&mut self, db: &Connection, op: &str, payload: Payload<'_>) -> Result<bool> {
        self.prepared = None;
        let Some(scope) = self.predict(db, op, payload)? else { return Ok(false) };
        let raw_tables = self.iteration.as_ref().and_then(|i| i.raw_tables.as_deref());
        self.prepared = Some(Apply::start(db, scope, self.strategy, raw_tables)?);
        Ok(true)
    }

    /// `oplite_apply_step(budget)`: writes about `budget` rows of the
    /// prepared apply; returns the stage the next step continues
    /// ([`Stage::Done`], 0, once none are left). An error drops the apply
    /// (the host rolls its transaction back).
    pub fn apply_step(&mut self, db: &Connection, budget: u64) -> Result<Stage> {
        let job = self
            .prepared
            .as_mut()
            .ok_or_else(|| misuse("oplite_apply_step", "no apply is prepared (see oplite_apply_prepare)"))?;
        match job.step(db, budget) {
            Ok(_) => Ok(job.stage()),
            Err(e) => {
                self.prepared = None;
                Err(e)
            }
        }
    }

    /// The scope `control(op, payload)` would apply now, if any.
    fn predict(&self, db: &Connection, op: &str, payload: Payload<'_>) -> Result<Option<Scope>> {
        let Some(iteration) = &self.iteration else { return Ok(None) };
        if op == "completed_upload" {
            return match iteration.pending_apply {
                true => iteration.would_apply_full(db, CompletionKind::AfterUpload),
                false => Ok(None),
            };
        }
        if !matches!(first_key(op, &payload), Some(b"checkpoint_complete" | b"partial_checkpoint_complete")) {
            return Ok(None);
        }
        // A line that does not decode fails the call itself.
        let line = match payload {
            Payload::Text(text) => line::parse_text(text),
            Payload::Blob(bytes) => line::parse_binary(bytes),
            _ => return Ok(None),
        };
        match line {
            Ok(SyncLine::CheckpointComplete(_)) => iteration.would_apply_full(db, CompletionKind::Line),
            Ok(SyncLine::PartialCheckpointComplete(partial)) => iteration.would_apply_partial(db, partial.priority),
            _ => Ok(None),
        }
    }
}

impl Iteration {
    /// Whether [`Iteration::complete_full`] would apply: the same checks,
    /// read without writing.
    fn would_apply_full(&self, db: &Connection, kind: CompletionKind) -> Result<Option<Scope>> {
        let Some(checkpoint) = &self.checkpoint else { return Ok(None) };
        if kind == CompletionKind::Line && !self.checksum_failures(db, i32::MAX)?.0.is_empty() {
            return Ok(None);
        }
        if kind == CompletionKind::AfterUpload && checkpoint.write_checkpoint < kv::int(db, kv::TARGET)? {
            return Ok(None);
        }
        // complete_full records the checkpoint's write checkpoint as the
        // last seen one before it checks local data.
        let seen = match checkpoint.write_checkpoint {
            Some(wc) => Some(wc),
            None => kv::int(db, kv::LAST_SEEN)?,
        };
        if Self::local_data_allows_seen(db, seen)? {
            return Ok(Some(Scope::Full));
        }
        // Blocked: a checkpoint of priority-0 buckets only is applied as
        // their partial checkpoint (see complete_full).
        if !checkpoint.buckets.is_empty() && checkpoint.buckets.iter().all(|b| b.priority() == 0) {
            let names: Vec<&str> = checkpoint.buckets.iter().map(|b| &*b.bucket).collect();
            return Ok(Some(Scope::Buckets(storage::bucket_ids(db, &names)?)));
        }
        Ok(None)
    }

    /// Whether [`Iteration::complete_partial`] would apply, and which buckets.
    fn would_apply_partial(&self, db: &Connection, priority: i32) -> Result<Option<Scope>> {
        let Some(checkpoint) = &self.checkpoint else { return Ok(None) };
        if !self.checksum_failures(db, priority)?.0.is_empty() {
            return Ok(None);
        }
        if priority > 0 && !Self::local_data_allows(db)? {
            return Ok(None);
        }
        let names: Vec<&str> =
            checkpoint.buckets.iter().filter(|b| b.priority() <= priority).map(|b| &*b.bucket).collect();
        Ok(Some(Scope::Buckets(storage::bucket_ids(db, &names)?)))
    }
}
