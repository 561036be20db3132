//! The sync client: a state machine that turns `powersync_control` events
//! into storage operations and instructions for the host. State that lives
//! between calls (the current iteration, its checkpoint, the last status
//! sent) is held here, per connection, outside the database, as in the
//! reference core; rules not obvious from docs/protocol.md were observed on
//! the reference core and are noted where they apply. A call that fails
//! keeps the iteration, with memory put back as it was before the call, as
//! the reference's (0.5.4, core PR #218) prepares every change before it
//! applies one: the host rolls the call's transaction back and goes on
//! with the next event (`ends_iteration`). One thing
//! differs on purpose (see docs/differences.md and docs/reliability.md):
//! the iteration's memory must match the database, checked through
//! `OWNER_KEY`. The copy that restoring needs costs 2.3 µs with 1,000
//! buckets, against 250 µs for a call storing a one-op line (debug build,
//! `snapshot_cost` in `client/snapshot_tests.rs`), and neither grows with
//! the number of buckets (download progress is kept line by line, see
//! [`super::progress`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rusqlite::Connection;

use super::data_line::{store_data_line, KnownKeys};
use super::diagnostics::{Diagnostics, DiagnosticsEvent};
use super::instruction::{BucketRequest, CompletedSync, Instruction, Severity, StreamRequest};
use super::line::{BucketChecksum, DataLine, StreamDescription, SyncLine};
use super::payload::{invalid_argument, Payload};
use super::requests::{self, CheckpointMode, CheckpointRequest};
use super::progress::{CounterMap, Progress};
use super::status::{SyncStatus, FULL_SYNC_PRIORITY};
use super::storage;
use super::start::StartOptions;
use super::streams::{self, IterationStreams};
use crate::error::{OpliteError, Result};
use crate::kv;
use crate::sync_local::{self, ApplyReport, Scope, Setting};

/// Who owns sync state: `<token>/<calls>` of the iteration allowed to write
/// it, in `ps_oplite_kv` ([`kv::SYNC_ITERATION`]), set by `start` and
/// advanced by every call that changes it.
///
/// Two connections (or processes) syncing the same database at once would
/// corrupt each other's bookkeeping, and a host that goes on after a call's
/// transaction was rolled back (a failed COMMIT) would feed an iteration
/// that remembers writes the database no longer has: a missing data line
/// then fails the checksums and the buckets are downloaded again. So
/// `start` writes `<random token>/0` here, every line and
/// `completed_upload` checks it first, and every call that writes sync
/// state writes `<token>/<n+1>` in its own transaction (a line that wrote
/// no row, such as most `checkpoint_diff` lines, leaves nothing a rollback
/// could take from the database). A different token
/// means a later `start` elsewhere took over; the right token with another
/// count means a transaction holding an earlier call was rolled back.
/// Either way the iteration ends with an error instead of writing, and the
/// host's next `start` resumes from what the database holds. The last
/// `start` wins, so a crashed process never blocks the next one.
/// The key in `ps_oplite_kv`.
const OWNER_KEY: &str = kv::SYNC_ITERATION;

/// The checkpoint being downloaded.
#[derive(Debug, Clone)]
struct TargetCheckpoint {
    last_op_id: i64,
    write_checkpoint: Option<i64>,
    buckets: Vec<BucketChecksum<'static>>,
    /// The streams of the last full checkpoint line (diffs keep them).
    streams: Vec<StreamDescription>,
}

/// One connection of the host to the sync stream, from `start` to its end.
#[derive(Debug, Clone)]
struct Iteration {
    /// This iteration's token in `ps_oplite_kv` ([`OWNER_KEY`]).
    token: String,
    /// State-changing calls of this iteration so far (also in `ps_kv`).
    calls: u64,
    status: SyncStatus,
    /// Shared with the copy `control` keeps (replaced, never changed).
    checkpoint: Option<Arc<TargetCheckpoint>>,
    /// A validated full checkpoint that local data kept from being applied.
    pending_apply: bool,
    /// Buckets a new checkpoint may delete: those stored when the iteration
    /// started and those named by its checkpoints.
    /// (Shared with the copy `control` keeps until a checkpoint changes it.)
    deletable: Arc<HashSet<String>>,
    /// Per bucket (the copy `control` keeps shares what earlier calls wrote).
    counters: CounterMap,
    /// Download progress of `checkpoint`, kept line by line.
    progress: Option<Progress>,
    /// Stream subscriptions requested by this iteration.
    streams: IterationStreams,
    /// The raw tables of `start`'s schema, when it had one.
    raw_tables: Option<Vec<crate::schema::RawTable>>,
    /// When `start` asked for diagnostics: the column types seen so far.
    diagnostics: Option<Diagnostics>,
}

/// Per-connection sync state.
#[derive(Debug, Default)]
pub struct SyncClient {
    iteration: Option<Iteration>,
    /// Keys stored per bucket by the current iteration, to skip needless
    /// lookups (reset by `start`; outside [`Iteration`] so that a failed
    /// call does not copy it, see [`SyncClient::control`]).
    known_keys: KnownKeys,
    last_emitted: Option<SyncStatus>,
    /// How sync_local picks its strategy (`oplite_sync_local_strategy`).
    pub strategy: Setting,
    /// The last apply's report (`oplite_last_apply()`).
    pub last_apply: Option<ApplyReport>,
    /// An apply written in steps for the next call ([`stepped`]).
    prepared: Option<sync_local::Apply>,
}

/// What a `powersync_control` call returns.
pub enum ControlResult {
    /// A JSON array of instructions.
    Instructions(Vec<Instruction>),
    /// A plain value (the checkpoint-request ops).
    Value(Option<i64>),
}

/// Whether a failed `powersync_control` call ends the sync iteration.
/// Since core 0.5.4 (PR #218) no error does: a line that does not decode
/// or apply, a failed write, a failed `completed_upload` or a failed
/// `start` (which keeps the iteration it would have replaced) leave the
/// iteration as it was before the call, and the next event goes on from
/// there. Only `stop`, which ends the iteration before anything can fail,
/// ends it. (oplite's own ownership check, [`OWNER_KEY`], still ends an
/// iteration whose earlier calls were rolled back.)
fn ends_iteration(op: &str, _err: &OpliteError) -> bool {
    op == "stop"
}

fn no_iteration() -> OpliteError {
    OpliteError::Misuse { function: "powersync_control", reason: "invalid state: No iteration is active".into() }
}

/// The [`OWNER_KEY`] value of an iteration after `calls` state-changing calls.
fn owner_value(token: &str, calls: u64) -> String {
    format!("{token}/{calls}")
}

/// A random token for an iteration (128 bits, hex).
fn new_token() -> String {
    let mut bytes = [0u8; 16];
    crate::sqlite::random_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl SyncClient {
    /// Whether a sync iteration is running.
    pub fn has_iteration(&self) -> bool {
        self.iteration.is_some()
    }

    /// Handles one event. A failed call leaves memory as it was before it,
    /// except that the iteration ends where the reference's does
    /// (`ends_iteration`) or when it lost ownership of the database
    /// (`OWNER_KEY`).
    ///
    /// Lines are fully decoded before anything is written, and this keeps
    /// a copy of the iteration (and of the last status sent) that it puts
    /// back when the call fails, whichever write failed: memory then
    /// matches the database once the host rolls the call's transaction
    /// back, and a busy database can be retried in the same iteration. The copy is cheap next to the call because the large
    /// parts are shared (the checkpoint, the deletable buckets, each
    /// stream's buckets and the progress index behind an `Arc`, the counters
    /// in a [`CounterMap`] that copies only the last call's changes): with
    /// 1,000 buckets it takes 2.3 µs, against 250 µs for a call storing a
    /// one-op line (before sharing, 475 µs; before the counter map, 42 µs,
    /// as much per bucket as the map had entries). The one thing not
    /// copied is [`KnownKeys`], a cache that a rolled-back write can only
    /// make cautious, never wrong.
    pub fn control(&mut self, db: &Connection, op: &str, payload: Payload<'_>) -> Result<ControlResult> {
        if matches!(op, "line_text" | "line_binary" | "completed_upload") {
            self.check_owner(db)?;
        }
        if let Some(iteration) = self.iteration.as_mut() {
            iteration.counters.settle();
        }
        let before = (self.iteration.clone(), self.last_emitted.clone(), self.last_apply.clone());
        let mut result = self.dispatch(db, op, payload);
        let ends = result.as_ref().err().is_some_and(|err| ends_iteration(op, err));
        if self.prepared.take().is_some() && result.is_ok() {
            result = Err(stepped::unused_apply());
        }
        if result.is_err() {
            (self.iteration, self.last_emitted, self.last_apply) = before;
        }
        if ends {
            self.iteration = None;
        }
        result
    }

    fn dispatch(&mut self, db: &Connection, op: &str, payload: Payload<'_>) -> Result<ControlResult> {
        let mut out = Vec::new();
        match op {
            "start" => self.start(db, payload, &mut out)?,
            "stop" => self.stop(db, &mut out)?,
            "line_text" => {
                let text = payload.text("line_text")?;
                let line = super::line::parse_text(text).map_err(protocol_error("text"))?;
                self.line(db, line, text.len(), &mut out)?;
            }
            "line_binary" => {
                let bytes = payload.bytes("line_binary")?;
                let line = super::line::parse_binary(bytes).map_err(protocol_error("binary"))?;
                self.line(db, line, bytes.len(), &mut out)?;
            }
            "connection" => match payload.text("connection")? {
                "established" => {
                    let iteration = self.iteration.as_mut().ok_or_else(no_iteration)?;
                    iteration.status.mark_connected();
                    self.emit_status(&mut out);
                }
                "end" => {
                    self.iteration.as_ref().ok_or_else(no_iteration)?;
                    self.stop(db, &mut out)?;
                }
                other => {
                    return Err(invalid_argument(format!("unknown connection event {other:?}")));
                }
            },
            "refreshed_token" => {
                self.iteration.as_ref().ok_or_else(no_iteration)?;
                self.close(true, &mut out);
            }
            "completed_upload" => self.completed_upload(db, &mut out)?,
            "target_checkpoint_request_id" => return Ok(ControlResult::Value(requests::probe_target(db, payload)?)),
            // Seeding and allocating need an iteration, as in the reference.
            "seed_checkpoint_request_id" => {
                self.iteration.as_ref().ok_or_else(no_iteration)?;
                return Ok(ControlResult::Value(Some(requests::seed(db, payload)?)));
            }
            "next_checkpoint_request_id" => {
                self.iteration.as_ref().ok_or_else(no_iteration)?;
                let id = requests::next(db)?.ok_or_else(|| OpliteError::Misuse {
                    function: "powersync_control",
                    reason: "invalid state: Checkpoint request state has not been seeded".into(),
                })?;
                return Ok(ControlResult::Value(Some(id)));
            }
            "current_checkpoint_request_id" => return Ok(ControlResult::Value(requests::current(db)?)),
            // The streams the app uses changed: a changed request needs a
            // new connection (the reference closes the stream quietly).
            // No ownership check: it writes only subscription TTLs, never
            // bucket bookkeeping, and a rolled-back TTL extension is redone
            // by the next start or keep-alive.
            "update_subscriptions" => {
                let active = streams::parse_active_streams(payload.text("update_subscriptions")?)?;
                let iteration = self.iteration.as_mut().ok_or_else(no_iteration)?;
                if iteration.streams.update(db, active)? {
                    self.close(true, &mut out);
                }
            }
            // Subscribing needs no iteration and returns NULL, as in the reference.
            "subscriptions" => {
                streams::apply_change(db, payload.text("subscriptions")?)?;
                return Ok(ControlResult::Value(None));
            }
            other => return Err(invalid_argument(format!("unknown operation {other:?}"))),
        }
        Ok(ControlResult::Instructions(out))
    }

    /// Fails unless an iteration is active, still owns sync state and its
    /// state-changing calls so far all committed (see [`OWNER_KEY`]).
    fn check_owner(&mut self, db: &Connection) -> Result<()> {
        let iteration = self.iteration.as_ref().ok_or_else(no_iteration)?;
        let stored = kv::own(db, OWNER_KEY)?;
        let expected = owner_value(&iteration.token, iteration.calls);
        if stored.as_deref() == Some(expected.as_str()) {
            return Ok(());
        }
        let ours = stored.as_deref().and_then(|v| v.split_once('/')).is_some_and(|(token, _)| token == iteration.token);
        self.iteration = None;
        Err(OpliteError::Misuse {
            function: "powersync_control",
            reason: if ours {
                "the transaction of an earlier call of this sync iteration was rolled back (or its COMMIT failed), \
                 so the iteration no longer matches the database and has ended; call start to resume"
                    .into()
            } else {
                "another connection started syncing this database, so this iteration has ended; \
                 sync from one connection at a time (call start again to take over)"
                    .into()
            },
        })
    }

    /// Records a state-changing call of the active iteration.
    fn advance(&mut self, db: &Connection) -> Result<()> {
        if let Some(iteration) = self.iteration.as_mut() {
            kv::set_own(db, OWNER_KEY, &owner_value(&iteration.token, iteration.calls + 1))?;
            iteration.calls += 1;
        }
        Ok(())
    }

    fn start(&mut self, db: &Connection, payload: Payload<'_>, out: &mut Vec<Instruction>) -> Result<()> {
        let options = StartOptions::parse(payload.text_or_none())?;
        // The streams as stored before this start extends or drops any.
        let status = SyncStatus {
            connecting: true,
            priority_status: storage::sync_state(db)?,
            streams: streams::offline(db)?,
            ..Default::default()
        };
        let buckets = storage::requested_buckets(db)?
            .into_iter()
            .map(|(name, after)| BucketRequest { name, after: after.to_string() })
            .collect();
        let iteration_streams = IterationStreams::start(db, options.active_streams, options.include_defaults)?;
        let client_id = crate::client_id::client_id(db)?;
        let checkpoint_request = match options.checkpoint_mode {
            CheckpointMode::Requests => Some(CheckpointRequest::initial(db, client_id.clone())?),
            CheckpointMode::Legacy => None,
        };
        let request = StreamRequest {
            buckets,
            include_checksum: true,
            raw_data: true,
            binary_data: true,
            client_id,
            parameters: options.parameters,
            streams: iteration_streams.request().clone(),
            app_metadata: options.app_metadata,
        };
        let token = new_token();
        kv::set_own(db, OWNER_KEY, &owner_value(&token, 0))?;
        self.iteration = Some(Iteration {
            token,
            calls: 0,
            status,
            checkpoint: None,
            pending_apply: false,
            deletable: Arc::new(storage::bucket_names(db)?.into_iter().collect()),
            counters: CounterMap::new(storage::counters(db)?),
            progress: None,
            streams: iteration_streams,
            raw_tables: options.schema.map(|s| s.raw_tables),
            diagnostics: options.diagnostics.map(|_| Diagnostics::default()),
        });
        self.known_keys = KnownKeys::default();
        // A start always reports its status, even when unchanged.
        self.last_emitted = None;
        self.emit_status(out);
        out.push(Instruction::EstablishSyncStream { request, checkpoint_request });
        Ok(())
    }

    fn stop(&mut self, _db: &Connection, out: &mut Vec<Instruction>) -> Result<()> {
        self.close(false, out);
        Ok(())
    }

    /// Ends the iteration (if any) as every close of the stream does since
    /// core 0.5.4 (a stop, the stream's end, a checksum failure, an expired
    /// or refreshed token, changed subscriptions): the status marked
    /// disconnected, sent when it differs from the last one sent, then
    /// CloseSyncStream. The status is the iteration's, which holds the
    /// priorities as stored (start and every apply read them back), so a
    /// close needs no statement and cannot fail.
    fn close(&mut self, hide_disconnect: bool, out: &mut Vec<Instruction>) {
        let Some(iteration) = self.iteration.take() else {
            return;
        };
        let mut status = iteration.status;
        status.connected = false;
        status.connecting = false;
        status.internal_last_applied_checkpoint_request_id = None;
        status.stop_downloading();
        if self.last_emitted.as_ref() != Some(&status) {
            self.last_emitted = Some(status.clone());
            out.push(Instruction::UpdateSyncStatus { status });
        }
        out.push(Instruction::CloseSyncStream { hide_disconnect });
    }

    /// Pushes an UpdateSyncStatus when the iteration's status differs from
    /// the last one sent.
    fn emit_status(&mut self, out: &mut Vec<Instruction>) {
        if let Some(iteration) = &self.iteration {
            if self.last_emitted.as_ref() != Some(&iteration.status) {
                self.last_emitted = Some(iteration.status.clone());
                out.push(Instruction::UpdateSyncStatus { status: iteration.status.clone() });
            }
        }
    }

    fn line(&mut self, db: &Connection, line: SyncLine<'_>, size: usize, out: &mut Vec<Instruction>) -> Result<()> {
        let iteration = self.iteration.as_mut().ok_or_else(no_iteration)?;
        // Lines that may change stored sync state; whether this one did is
        // told by the rows it changed. A line that changed none (most
        // checkpoint_diff lines) needs no record: were its transaction
        // rolled back, the database would still match the iteration.
        let changes_state = !matches!(line, SyncLine::TokenExpiresIn(_) | SyncLine::Unknown(_));
        let changes_before = db.total_changes();
        // Diagnostics follow the status update, as in the reference.
        let mut diagnostics = Vec::new();
        // Since core 0.5.4 only some lines mark the status connected: a
        // checkpoint (or diff), a keep-alive that keeps the stream, an
        // unknown line and a partial completion that local data blocks. A
        // data line or an applied completion leaves it as it was.
        // `Some(hide_disconnect)` closes the stream.
        let close: Option<bool> = match line {
            SyncLine::Checkpoint(checkpoint) => {
                let target = TargetCheckpoint {
                    last_op_id: checkpoint.last_op_id,
                    write_checkpoint: checkpoint.write_checkpoint,
                    buckets: checkpoint.buckets.into_iter().map(BucketChecksum::into_owned).collect(),
                    streams: checkpoint.streams,
                };
                iteration.set_checkpoint(db, target, out)?;
                iteration.report_checkpoint(&mut diagnostics);
                None
            }
            SyncLine::CheckpointDiff(diff) => {
                let Some(previous) = &iteration.checkpoint else {
                    return Err(OpliteError::Protocol {
                        message: "Received checkpoint_diff without previous checkpoint".into(),
                    });
                };
                let mut target = TargetCheckpoint::clone(previous);
                target.last_op_id = diff.last_op_id;
                target.write_checkpoint = diff.write_checkpoint;
                let removed: HashSet<&str> = diff.removed_buckets.iter().map(|b| &**b).collect();
                target.buckets.retain(|b| !removed.contains(&*b.bucket));
                // Removed buckets are deleted even if no checkpoint named
                // them (data lines alone stored them), as in the reference.
                // (A failed call restores the iteration, see `control`.)
                if removed.iter().any(|b| !iteration.deletable.contains(*b)) {
                    Arc::make_mut(&mut iteration.deletable).extend(removed.iter().map(|b| (*b).to_owned()));
                }
                // The first entry of a name is the one an update replaces.
                let mut position: HashMap<String, usize> = HashMap::with_capacity(target.buckets.len());
                for (i, bucket) in target.buckets.iter().enumerate().rev() {
                    position.insert(bucket.bucket.to_string(), i);
                }
                for updated in diff.updated_buckets {
                    match position.get(&*updated.bucket) {
                        Some(&i) => target.buckets[i] = updated.into_owned(),
                        None => {
                            position.insert(updated.bucket.to_string(), target.buckets.len());
                            target.buckets.push(updated.into_owned());
                        }
                    }
                }
                iteration.set_checkpoint(db, target, out)?;
                iteration.report_checkpoint(&mut diagnostics);
                None
            }
            SyncLine::CheckpointComplete(_) => {
                if iteration.checkpoint.is_none() {
                    return Err(OpliteError::Protocol {
                        message: "Received checkpoint complete without previous checkpoint".into(),
                    });
                }
                let keep_going = iteration.complete_full(
                    db,
                    out,
                    CompletionKind::Line,
                    self.strategy,
                    &mut self.last_apply,
                    &mut self.prepared,
                )?;
                (!keep_going).then_some(false)
            }
            SyncLine::PartialCheckpointComplete(partial) => {
                if iteration.checkpoint.is_none() {
                    return Err(OpliteError::Misuse {
                        function: "powersync_control",
                        reason: "invalid state: Received checkpoint complete without previous checkpoint".into(),
                    });
                }
                let keep_going = iteration.complete_partial(
                    db,
                    partial.priority,
                    out,
                    self.strategy,
                    &mut self.last_apply,
                    &mut self.prepared,
                )?;
                (!keep_going).then_some(false)
            }
            SyncLine::Data(data) => {
                let stored = store_data_line(db, &data, size, &mut self.known_keys)?;
                let old = iteration.counters.insert(&data.bucket, stored.counters);
                if let Some(progress) = iteration.progress.as_mut() {
                    progress.update(&data.bucket, old, stored.counters);
                    // Progress is reported from a checkpoint to its apply only.
                    if iteration.status.downloading.is_some() {
                        progress.publish(&mut iteration.status);
                    }
                }
                iteration.report_data_line(&data, &mut diagnostics);
                None
            }
            SyncLine::TokenExpiresIn(seconds) => {
                // A keep-alive: the streams in use live on.
                iteration.streams.keep_alive(db)?;
                if seconds <= 0 {
                    out.push(Instruction::FetchCredentials { did_expire: true });
                    Some(false)
                } else if seconds <= 30 {
                    out.push(Instruction::FetchCredentials { did_expire: false });
                    iteration.status.mark_connected();
                    None
                } else if iteration.streams.request_changed(db)? {
                    // Subscriptions expired or changed since the request:
                    // reconnect with the new one.
                    Some(true)
                } else {
                    iteration.status.mark_connected();
                    None
                }
            }
            SyncLine::Unknown(_) => {
                out.push(Instruction::log(Severity::Debug, "Unknown sync line"));
                iteration.status.mark_connected();
                None
            }
        };
        match close {
            None => {
                if changes_state && db.total_changes() != changes_before {
                    self.advance(db)?;
                }
                self.emit_status(out);
                out.extend(diagnostics.into_iter().map(Instruction::HandleDiagnostics));
            }
            Some(hide_disconnect) => self.close(hide_disconnect, out),
        }
        Ok(())
    }

    fn completed_upload(&mut self, db: &Connection, out: &mut Vec<Instruction>) -> Result<()> {
        let iteration = self.iteration.as_mut().ok_or_else(no_iteration)?;
        if !iteration.pending_apply {
            return Ok(());
        }
        iteration.complete_full(db, out, CompletionKind::AfterUpload, self.strategy, &mut self.last_apply, &mut self.prepared)?;
        self.advance(db)?;
        self.emit_status(out);
        Ok(())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum CompletionKind {
    /// A `checkpoint_complete` line.
    Line,
    /// A retry of a pending checkpoint after `completed_upload`.
    AfterUpload,
}

impl Iteration {
    fn set_checkpoint(&mut self, db: &Connection, target: TargetCheckpoint, out: &mut Vec<Instruction>) -> Result<()> {
        // Every write first, then memory: an error leaves the iteration as
        // it was, matching the database once the host rolls back.
        let named: HashSet<&str> = target.buckets.iter().map(|b| &*b.bucket).collect();
        let mut gone: Vec<String> = self.deletable.iter().filter(|b| !named.contains(b.as_str())).cloned().collect();
        gone.sort();
        storage::delete_buckets(db, &gone)?;

        // A bucket whose server count no longer fits ours (compaction, a
        // CLEAR) starts its progress from zero; since core 0.5.4 the other
        // buckets keep theirs. A bucket without a count counts as 0, and
        // the last entry of a name is the one that counts, as there.
        let mut counts: HashMap<&str, i64> = HashMap::with_capacity(target.buckets.len());
        for bucket in &target.buckets {
            counts.insert(&bucket.bucket, bucket.count.unwrap_or(0));
        }
        let mut stale: Vec<&str> = counts
            .iter()
            .filter(|(name, count)| {
                // (A bucket named here is never one of those just deleted.)
                let counters = self.counters.get(name);
                **count < counters.at_last + counters.since_last
            })
            .map(|(name, _)| *name)
            .collect();
        stale.sort_unstable();
        storage::reset_counters(db, &stale)?;
        let mut warnings = Vec::new();
        let stream_status =
            streams::resolve(db, &target.streams, &self.streams.requested_ids, &target.buckets, &mut warnings)?;
        out.extend(warnings.into_iter().map(|line| Instruction::log(Severity::Warning, line)));

        let deletable = Arc::make_mut(&mut self.deletable);
        for name in &gone {
            deletable.remove(name);
            self.counters.remove(name);
        }
        deletable.extend(named.iter().map(|b| (*b).to_owned()));
        for name in &stale {
            self.counters.insert(name, Default::default());
        }
        let progress = Progress::compute(&target.buckets, &stream_status, &self.counters);
        self.checkpoint = Some(Arc::new(target));
        self.pending_apply = false;
        self.status.mark_connected();
        self.status.streams = stream_status;
        progress.publish(&mut self.status);
        self.progress = Some(progress);
        Ok(())
    }

    fn report_checkpoint(&self, out: &mut Vec<DiagnosticsEvent>) {
        if let (Some(diagnostics), Some(c)) = (&self.diagnostics, &self.checkpoint) {
            diagnostics.checkpoint(&c.buckets, &self.counters, out);
        }
    }

    fn report_data_line(&mut self, line: &DataLine<'_>, out: &mut Vec<DiagnosticsEvent>) {
        let downloading = self.checkpoint.as_ref().filter(|_| self.status.downloading.is_some());
        if let Some(diagnostics) = self.diagnostics.as_mut() {
            diagnostics.data_line(line, downloading.map(|c| (&c.buckets[..], &self.counters)), out);
        }
    }

    /// Compares stored checksums with the checkpoint's for buckets of
    /// priority `<= max_priority`. On a mismatch, deletes the failing
    /// buckets (so they download again), logs a WARNING naming each with its
    /// expected and actual values (worded alike for a partial checkpoint
    /// since core 0.5.4) and returns false: the caller closes the stream.
    fn validate(&self, db: &Connection, max_priority: i32, out: &mut Vec<Instruction>) -> Result<bool> {
        let (failed_names, failures) = self.checksum_failures(db, max_priority)?;
        if failures.is_empty() {
            return Ok(true);
        }
        storage::delete_buckets(db, &failed_names)?;
        out.push(Instruction::log(
            Severity::Warning,
            format!("Could not apply checkpoint, Checksums didn't match, failed for: {}", failures.join(", ")),
        ));
        Ok(false)
    }

    /// The buckets of priority `<= max_priority` whose stored checksum is
    /// not the checkpoint's: their names, and a description of each.
    fn checksum_failures(&self, db: &Connection, max_priority: i32) -> Result<(Vec<String>, Vec<String>)> {
        let checkpoint = self.checkpoint.as_ref().expect("validated without checkpoint");
        let stored = storage::checksums(db)?;
        let mut failed_names = Vec::new();
        let mut failures = Vec::new();
        for bucket in checkpoint.buckets.iter().filter(|b| b.priority() <= max_priority) {
            let actual = stored.get(&*bucket.bucket).copied().unwrap_or_default();
            if actual.total() != bucket.checksum {
                failures.push(format!(
                    "{} (expected {}, got {} = {} (op) + {} (add))",
                    bucket.bucket,
                    bucket.checksum,
                    actual.total(),
                    actual.op,
                    actual.add
                ));
                failed_names.push(bucket.bucket.to_string());
            }
        }
        Ok((failed_names, failures))
    }

    /// Whether local data allows an apply: no pending uploads, and the
    /// server has confirmed the uploads we wait for. As in the reference
    /// core, "confirmed" means the write checkpoint of the last validated
    /// full checkpoint (`last_seen`) has reached the target the host set.
    fn local_data_allows(db: &Connection) -> Result<bool> {
        Self::local_data_allows_seen(db, kv::int(db, kv::LAST_SEEN)?)
    }

    /// [`Iteration::local_data_allows`] with `seen` as the last seen write checkpoint.
    fn local_data_allows_seen(db: &Connection, seen: Option<i64>) -> Result<bool> {
        if storage::has_pending_uploads(db)? {
            return Ok(false);
        }
        Ok(match kv::int(db, kv::TARGET)? {
            None => true,
            Some(target) => seen.is_some_and(|seen| seen >= target),
        })
    }

    /// Handles a full completion; returns false when the iteration ends.
    fn complete_full(
        &mut self,
        db: &Connection,
        out: &mut Vec<Instruction>,
        kind: CompletionKind,
        setting: Setting,
        last_apply: &mut Option<ApplyReport>,
        prepared: &mut Option<sync_local::Apply>,
    ) -> Result<bool> {
        if kind == CompletionKind::Line && !self.validate(db, i32::MAX, out)? {
            return Ok(false);
        }
        let checkpoint = self.checkpoint.clone().expect("completed without checkpoint");
        // Since core 0.5.4 a pending checkpoint stays pending until a
        // checkpoint is applied (or a new one arrives): every upload
        // retries it, except while it is older than the gate (no write
        // checkpoint counts as older than any): it cannot confirm the
        // uploads.
        if kind == CompletionKind::AfterUpload && checkpoint.write_checkpoint < kv::int(db, kv::TARGET)? {
            return Ok(true);
        }
        // A validated checkpoint moves every bucket to its op id, applied or
        // not: the next request resumes from there. A retry records it
        // again, as the reference does (a local write may have cleared it).
        // When the checkpoint is applied, storage::mark_applied records it with the
        // rest of the bucket bookkeeping.
        if let Some(wc) = checkpoint.write_checkpoint {
            kv::set(db, kv::LAST_SEEN, wc)?;
        }
        if !Self::local_data_allows(db)? {
            let names: Vec<&str> = checkpoint.buckets.iter().map(|b| &*b.bucket).collect();
            storage::set_last_op(db, &names, checkpoint.last_op_id)?;
            match kind {
                CompletionKind::Line => {
                    self.pending_apply = true;
                    out.push(Instruction::CheckpointDelayedDueToLocalData {});
                    out.push(Instruction::log(
                        Severity::Info,
                        "Could not apply checkpoint due to local data. Will retry at completed upload or next checkpoint.",
                    ));
                }
                CompletionKind::AfterUpload => out.push(Instruction::log(
                    Severity::Warning,
                    "Could not apply pending checkpoint even after completed upload",
                )),
            }
            // Since core 0.5.4, a checkpoint whose buckets are all of
            // priority 0 is applied as a priority-0 partial checkpoint
            // (which local data never blocks), staying pending in full.
            let all_highest = !checkpoint.buckets.is_empty() && checkpoint.buckets.iter().all(|b| b.priority() == 0);
            if all_highest {
                self.apply_partial(db, 0, &checkpoint, setting, last_apply, prepared)?;
            }
            return Ok(true);
        }

        let report = stepped::apply(db, prepared, Scope::Full, setting, self.raw_tables.as_deref())?;
        *last_apply = Some(report);
        storage::mark_applied(db, &checkpoint.buckets, checkpoint.last_op_id)?;
        let synced_at = storage::record_sync(db, FULL_SYNC_PRIORITY)?;
        streams::mark_synced(db, &mut self.status.streams, None, synced_at)?;
        self.pending_apply = false;
        self.counters = CounterMap::new(storage::counters(db)?);
        if let Some(progress) = self.progress.as_mut() {
            // Published with the next data line, as downloads resume.
            progress.recompute(&self.counters);
        }
        self.status.priority_status = storage::sync_state(db)?;
        self.status.stop_downloading();
        self.status.internal_last_applied_checkpoint_request_id = checkpoint.write_checkpoint.map(|wc| wc.to_string());

        match kind {
            CompletionKind::Line => out.push(Instruction::log(Severity::Debug, "Validated and applied checkpoint")),
            CompletionKind::AfterUpload => {
                out.push(Instruction::log(Severity::Debug, "Applied pending checkpoint after completed upload"))
            }
        }
        let mut completed = CompletedSync::default();
        if let Some(wc) = checkpoint.write_checkpoint {
            kv::set(db, kv::LAST_APPLIED, wc)?;
            out.push(Instruction::log(Severity::Debug, format!("Applied checkpoint request id {wc}")));
            completed.applied_checkpoint_request_id = Some(wc.to_string());
        }
        out.push(Instruction::DidCompleteSync(completed));
        Ok(true)
    }

    /// Handles `partial_checkpoint_complete`; returns false when the
    /// iteration ends.
    fn complete_partial(
        &mut self,
        db: &Connection,
        priority: i32,
        out: &mut Vec<Instruction>,
        setting: Setting,
        last_apply: &mut Option<ApplyReport>,
        prepared: &mut Option<sync_local::Apply>,
    ) -> Result<bool> {
        if !self.validate(db, priority, out)? {
            return Ok(false);
        }
        let checkpoint = self.checkpoint.clone().expect("partial completion without checkpoint");
        // Priority 0 may be applied while uploads are pending; others wait
        // (with their buckets at the checkpoint's op id; an apply records
        // that in mark_buckets_applied), and the stream counts as connected.
        if priority > 0 && !Self::local_data_allows(db)? {
            let names: Vec<&str> =
                checkpoint.buckets.iter().filter(|b| b.priority() <= priority).map(|b| &*b.bucket).collect();
            storage::set_last_op(db, &names, checkpoint.last_op_id)?;
            out.push(Instruction::CheckpointDelayedDueToLocalData {});
            self.status.mark_connected();
            return Ok(true);
        }
        self.apply_partial(db, priority, &checkpoint, setting, last_apply, prepared)?;
        // As in the reference, any applied checkpoint ends a pending one.
        self.pending_apply = false;
        Ok(true)
    }

    /// Applies the buckets of priority `<= priority` of `checkpoint` and
    /// records the partial sync, in storage and in the status.
    fn apply_partial(
        &mut self,
        db: &Connection,
        priority: i32,
        checkpoint: &TargetCheckpoint,
        setting: Setting,
        last_apply: &mut Option<ApplyReport>,
        prepared: &mut Option<sync_local::Apply>,
    ) -> Result<()> {
        let names: Vec<&str> =
            checkpoint.buckets.iter().filter(|b| b.priority() <= priority).map(|b| &*b.bucket).collect();
        let ids = storage::bucket_ids(db, &names)?;
        let report = stepped::apply(db, prepared, Scope::Buckets(ids.clone()), setting, self.raw_tables.as_deref())?;
        *last_apply = Some(report);
        storage::mark_buckets_applied(db, &ids, checkpoint.last_op_id)?;
        let synced_at = storage::record_sync(db, priority)?;
        streams::mark_synced(db, &mut self.status.streams, Some(priority), synced_at)?;
        self.status.priority_status = storage::sync_state(db)?;
        Ok(())
    }
}

/// A line that does not decode, worded as the reference words it
/// (`invalid text line. cause: <the decoder's message>`).
fn protocol_error(encoding: &'static str) -> impl Fn(OpliteError) -> OpliteError {
    move |err| OpliteError::Protocol {
        message: match err {
            OpliteError::Malformed { message, .. } => format!("invalid {encoding} line. cause: {message}"),
            other => format!("invalid {encoding} line: {other}"),
        },
    }
}

mod stepped;

#[cfg(test)]
mod snapshot_tests;

#[cfg(test)]
mod progress_tests;
