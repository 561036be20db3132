//! The sync loop: what an SDK does around `powersync_control`, as a
//! command-line host.
//!
//! ```text
//! start ─▶ EstablishSyncStream ─▶ POST /sync/stream ─▶ line ─▶ powersync_control ─▶ instructions
//!   ▲                                   │ 401: refresh credentials                      │
//!   └──── backoff ◀── CloseSyncStream / end of stream / error ◀──────────────────────────┘
//! ```
//!
//! - Each line goes to `powersync_control('line_text' | 'line_binary')`
//!   in its own transaction, in arrival order.
//! - `FetchCredentials{did_expire: false}` fetches a token and then sends
//!   `refreshed_token`, which closes the stream quietly; the loop reconnects
//!   at once with the new token. With `did_expire: true` the engine also
//!   closes the stream, and the reconnect uses the new token.
//! - Uploads run whenever `ps_crud` has entries: the connector posts
//!   batches, deletes them from the queue, asks the service for a write
//!   checkpoint, records it with `target_checkpoint_request_id` and tells
//!   the engine with `completed_upload`, which applies a checkpoint that
//!   was waiting for the upload.
//! - Write checkpoints come from `GET /write-checkpoint2.json` (legacy
//!   mode, the default) or, with `--checkpoint-mode requests`, from ids the
//!   engine allocates and the host posts to `POST /sync/checkpoint-request`
//!   (each connection first posts the engine's `checkpoint_request` and
//!   seeds the engine with the answer; see [`crate::checkpoint`]).
//! - Reconnects back off exponentially (reset by a successful line).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};
use ureq::Agent;

pub use crate::backoff::Backoff;
use crate::checkpoint::{self, CheckpointMode, CheckpointPort, Failure};
use crate::credentials::TokenSource;
use crate::engine::{Database, Instruction, Payload, LINES_PER_COMMIT};
use crate::http::{self, RequestError, StreamEvent};
use crate::progress::Progress;
use crate::summary::{Outcome, Summary, TimedOutSynced, UploadInProgress};
use crate::Error;

/// When `run` returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopWhen {
    /// After the first checkpoint applied with nothing left to upload.
    Synced,
    /// Only when cancelled (Ctrl-C) or on a fatal error.
    Cancelled,
}

/// Connection attempts in a row that may fail before `--once` gives up
/// (with the default backoff, about 6 s of trying).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;

/// Everything a sync run needs.
#[derive(Clone, Debug)]
pub struct SyncOptions {
    /// The service, e.g. `https://xyz.powersync.journeyapps.com`.
    pub endpoint: String,
    /// Where tokens come from.
    pub credentials: TokenSource,
    /// Where the connector posts `{"batch": [ps_crud entries]}`
    /// (default `{endpoint}/upload`, the test service's).
    pub upload_url: Option<String>,
    /// Ask for BSON lines instead of JSON.
    pub binary: bool,
    /// Sync parameters: the `parameters` object of the stream request,
    /// `{}` when there are none (as the SDKs send; the service refuses
    /// `null`).
    pub parameters: serde_json::Map<String, Value>,
    /// When to stop.
    pub stop_when: StopWhen,
    /// Give up after this long (None: no limit).
    pub timeout: Option<Duration>,
    /// Set to stop the loop (Ctrl-C).
    pub cancel: Arc<AtomicBool>,
    /// Show the progress bar.
    pub progress: bool,
    /// Print the engine's log lines and the loop's events.
    pub verbose: bool,
    /// Reconnect delays.
    pub backoff: Backoff,
    /// Longest silence on the stream before it counts as dead.
    pub read_timeout: Duration,
    /// Entries per upload batch.
    pub upload_batch: usize,
    /// How write checkpoints are asked for after an upload.
    pub checkpoint_mode: CheckpointMode,
    /// With [`StopWhen::Synced`]: give up after this many failed
    /// connection attempts in a row (live mode retries until cancelled).
    pub max_attempts: u32,
}

impl SyncOptions {
    /// Options with defaults for `endpoint` and `credentials`.
    pub fn new(endpoint: impl Into<String>, credentials: TokenSource) -> Self {
        SyncOptions {
            endpoint: endpoint.into(),
            credentials,
            upload_url: None,
            binary: false,
            parameters: serde_json::Map::new(),
            stop_when: StopWhen::Cancelled,
            timeout: None,
            cancel: Arc::new(AtomicBool::new(false)),
            progress: false,
            verbose: false,
            backoff: Backoff::new(Duration::from_millis(200), Duration::from_secs(30)),
            read_timeout: Duration::from_secs(90),
            upload_batch: 100,
            checkpoint_mode: CheckpointMode::Legacy,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
        }
    }
}

/// The loop's state.
struct Session<'a> {
    db: &'a Database,
    options: &'a SyncOptions,
    agent: Agent,
    token: String,
    client_id: String,
    progress: Progress,
    summary: Summary,
    /// An iteration is active in the engine (between `start` and its end).
    iteration: bool,
    /// Set when the run should end.
    done: bool,
    first_line_at: Option<Instant>,
    /// Uploads are retried no sooner than this after a failure.
    upload_retry_at: Option<Instant>,
    upload_backoff: Backoff,
    started: Instant,
    /// Connections in a row that ended with a line the engine refused
    /// (reset when a checkpoint is applied).
    refused_lines: u32,
    /// The last refusal's message.
    last_refusal: String,
    /// Requests mode: this connection's request counter was seeded, so ids
    /// can be allocated.
    requests_seeded: bool,
    /// Why the last connection attempt failed.
    last_failure: String,
    /// When this run last applied a checkpoint (DidCompleteSync).
    last_sync: Option<(Instant, SystemTime)>,
    /// The write checkpoint this run asked for after an upload and has
    /// not seen applied yet.
    awaiting_write_checkpoint: Option<i64>,
    /// A checkpoint delayed by local writes was logged since the last
    /// applied one.
    delay_logged: bool,
}

/// The checkpoint-request flow's access to the engine and the service.
struct LivePort<'s> {
    db: &'s Database,
    agent: &'s Agent,
    endpoint: &'s str,
    token: &'s str,
    posted: &'s mut u64,
}

impl CheckpointPort for LivePort<'_> {
    fn post_request(&mut self, client_id: &str, id: i64) -> Result<Option<i64>, RequestError> {
        *self.posted += 1;
        http::checkpoint_request(self.agent, self.endpoint, self.token, client_id, id)
    }
    fn seed(&mut self, id: i64) -> Result<(), Error> {
        self.db.seed_checkpoint_request_id(id)
    }
    fn next_id(&mut self) -> Result<i64, Error> {
        self.db.next_checkpoint_request_id()
    }
    fn confirm_target(&mut self, id: i64) -> Result<bool, Error> {
        self.db.confirm_checkpoint_request(id)
    }
}

/// What a service without `/sync/checkpoint-request` means for a run in
/// requests mode.
fn unsupported_service(endpoint: &str) -> Error {
    Error::Http(format!(
        "{endpoint} has no /sync/checkpoint-request (404): --checkpoint-mode requests needs a PowerSync service that has checkpoint requests (1.24.0 or later); use --checkpoint-mode legacy"
    ))
}

/// After this many connections in a row end with a refused line, the
/// error is taken as persistent (a bug or a broken database, not a bad
/// line in transit) and the run fails instead of retrying forever.
pub const MAX_REFUSED_LINES: u32 = 5;

/// What to do after the stream closed.
enum Reconnect {
    /// At once (token refresh).
    Now,
    /// After the backoff delay.
    Later,
}

impl<'a> Session<'a> {
    fn log(&self, line: impl AsRef<str>) {
        if self.options.verbose {
            self.progress.println(line);
        }
    }

    /// Reports a problem the loop recovers from (failed connection,
    /// failed upload): always shown, above the progress bar.
    fn warn(&self, line: impl AsRef<str>) {
        self.progress.println(format!("oplite: {}", line.as_ref()));
    }

    fn cancelled(&self) -> bool {
        self.options.cancel.load(Ordering::SeqCst)
            || self.options.timeout.is_some_and(|t| self.started.elapsed() >= t)
    }

    /// The checkpoint-request flow's view of this session.
    fn port(&mut self) -> LivePort<'_> {
        LivePort {
            db: self.db,
            agent: &self.agent,
            endpoint: &self.options.endpoint,
            token: &self.token,
            posted: &mut self.summary.checkpoint_requests,
        }
    }

    fn refresh_credentials(&mut self) -> Result<(), Error> {
        self.token = self.options.credentials.fetch()?;
        self.summary.credential_refreshes += 1;
        self.log("credentials refreshed");
        Ok(())
    }

    /// Handles instructions; returns how to reconnect if the stream must
    /// close.
    fn handle(&mut self, instructions: Vec<Instruction>) -> Result<Option<Reconnect>, Error> {
        let mut close = None;
        for instruction in instructions {
            match instruction {
                Instruction::LogLine { severity, line } => self.log(format!("[{severity}] {line}")),
                Instruction::UpdateSyncStatus(status) => self.progress.status(&status),
                Instruction::EstablishSyncStream { .. } => {
                    // Only expected from `start`, which the loop handles.
                }
                Instruction::FetchCredentials { did_expire: false } if !self.options.credentials.can_refresh() => {
                    // A fixed token cannot be renewed ahead of time; keep
                    // streaming until it expires (then the service says so).
                    self.log("the token expires soon and cannot be renewed (use --token-command)");
                }
                Instruction::FetchCredentials { did_expire } => {
                    let previous = self.token.clone();
                    self.refresh_credentials()?;
                    if !did_expire && self.iteration && self.token != previous {
                        // Prefetched: restart the stream with the new token.
                        let more = self.db.control("refreshed_token", Payload::Null)?;
                        self.iteration = false;
                        if let Some(r) = self.handle(more)? {
                            close = Some(r);
                        }
                    }
                }
                Instruction::CloseSyncStream { hide_disconnect } => {
                    self.iteration = false;
                    close = Some(if hide_disconnect { Reconnect::Now } else { Reconnect::Later });
                }
                Instruction::FlushFileSystem => {}
                Instruction::DidCompleteSync { applied_checkpoint_request_id } => {
                    self.summary.checkpoints += 1;
                    self.refused_lines = 0;
                    if self.summary.first_sync_seconds.is_none() {
                        if let Some(first) = self.first_line_at {
                            self.summary.first_sync_seconds = Some(first.elapsed().as_secs_f64());
                        }
                    }
                    self.last_sync = Some((Instant::now(), SystemTime::now()));
                    self.delay_logged = false;
                    if let Some(wc) = applied_checkpoint_request_id.and_then(|w| w.parse::<i64>().ok()) {
                        // Every checkpoint carries the client's write
                        // checkpoint; it is news only when it moves.
                        if self.awaiting_write_checkpoint.is_some_and(|awaited| wc >= awaited) {
                            self.awaiting_write_checkpoint = None;
                            self.log(format!("write checkpoint {wc} confirmed: the checkpoint carrying it was applied"));
                        } else if self.summary.confirmed_write_checkpoint != Some(wc) {
                            self.log(format!("checkpoint applied with write checkpoint {wc}"));
                        }
                        self.summary.confirmed_write_checkpoint = Some(wc);
                    }
                    if self.options.stop_when == StopWhen::Synced && !self.db.has_pending_uploads()? {
                        self.done = true;
                    }
                }
                Instruction::CheckpointDelayedDueToLocalData => {
                    // Uploads run after every line; the checkpoint is
                    // applied once they are confirmed.
                    if !self.delay_logged {
                        self.delay_logged = true;
                        self.log("a complete checkpoint waits for local writes to be uploaded and confirmed");
                    }
                }
                Instruction::Unknown(name) => self.log(format!("ignoring instruction {name}")),
            }
        }
        Ok(close)
    }

    /// Uploads the queue if it has entries and the last failure is not too
    /// recent. Returns how to reconnect if the engine closed the stream.
    fn maybe_upload(&mut self) -> Result<Option<Reconnect>, Error> {
        if self.upload_retry_at.is_some_and(|at| Instant::now() < at) {
            return Ok(None);
        }
        let pending = self.db.has_pending_uploads()?;
        // A previous run may have uploaded everything but not recorded the
        // write checkpoint: the target is still at its maximum.
        let unconfirmed = !pending && self.db.target_checkpoint()? == Some(i64::MAX);
        if !pending && !unconfirmed {
            return Ok(None);
        }
        // Not across an HTTP request: the app's writers wait on the lock.
        self.db.commit_lines()?;
        match self.upload() {
            Ok(close) => {
                self.upload_retry_at = None;
                self.upload_backoff.reset();
                Ok(close)
            }
            Err(e) => {
                let delay = self.upload_backoff.next_delay();
                self.warn(format!("upload failed ({e}); retrying in {delay:?}"));
                self.upload_retry_at = Some(Instant::now() + delay);
                Ok(None)
            }
        }
    }

    fn upload(&mut self) -> Result<Option<Reconnect>, Error> {
        let url = self.options.upload_url.clone().unwrap_or_else(|| http::default_upload_url(&self.options.endpoint));
        loop {
            let batch = self.db.crud_batch(self.options.upload_batch)?;
            let Some(&(last_id, _)) = batch.last() else { break };
            let entries: Vec<Value> = batch
                .iter()
                .map(|(_, data)| serde_json::from_str(data).unwrap_or_else(|_| Value::String(data.clone())))
                .collect();
            let body = json!({"batch": entries});
            match http::post_json(&self.agent, &url, &self.token, &body) {
                Ok(_) => {}
                Err(RequestError::Unauthorized(m)) => {
                    self.refresh_credentials()?;
                    return Err(Error::Http(m));
                }
                Err(e) => return Err(e.into()),
            }
            self.db.complete_crud(last_id)?;
            self.summary.uploaded += batch.len() as u64;
            self.log(format!("uploaded {}", crate::progress::count_of(batch.len() as u64, "entry", "entries")));
        }
        match self.options.checkpoint_mode {
            CheckpointMode::Legacy => {
                let wc = match http::write_checkpoint(&self.agent, &self.options.endpoint, &self.token, &self.client_id) {
                    Ok(wc) => wc,
                    Err(RequestError::Unauthorized(m)) => {
                        self.refresh_credentials()?;
                        return Err(Error::Http(m));
                    }
                    Err(e) => return Err(e.into()),
                };
                if !self.db.set_target_checkpoint(wc)? {
                    // New local writes arrived meanwhile; they are uploaded next.
                    return Ok(None);
                }
                self.awaiting_write_checkpoint = Some(wc);
                self.log(format!("write checkpoint {wc} requested"));
            }
            CheckpointMode::Requests => {
                if !(self.iteration && self.requests_seeded) {
                    // Ids are allocated only once a connection seeded the
                    // counter; the gate stays at its sentinel until then,
                    // and the loop comes back here on the connection.
                    self.log("uploaded; the checkpoint request waits for the connection");
                    return Ok(None);
                }
                let client_id = self.client_id.clone();
                let requested = match checkpoint::request_after_upload(&mut self.port(), &client_id) {
                    Ok(requested) => requested,
                    Err(Failure::Request(RequestError::Unauthorized(m))) => {
                        self.refresh_credentials()?;
                        return Err(Error::Http(m));
                    }
                    Err(f) => return Err(f.into()),
                };
                if !requested.target_set {
                    // New local writes arrived meanwhile; they are uploaded next.
                    return Ok(None);
                }
                self.awaiting_write_checkpoint = Some(requested.id);
                self.log(format!("checkpoint request {} accepted (service at {})", requested.id, requested.accepted));
            }
        }
        if self.iteration {
            let instructions = self.db.control("completed_upload", Payload::Null)?;
            return self.handle(instructions);
        }
        Ok(None)
    }

    /// One connection: start, stream, lines until the stream closes.
    fn connect_once(&mut self) -> Result<Reconnect, Error> {
        let mut payload = json!({
            "parameters": self.options.parameters,
            "include_defaults": true,
        });
        if self.options.checkpoint_mode == CheckpointMode::Requests {
            payload["checkpoint_mode"] = json!(CheckpointMode::Requests.as_str());
        }
        self.requests_seeded = false;
        let instructions = self.db.control("start", Payload::Text(&payload.to_string()))?;
        self.iteration = true;
        let establish = instructions.iter().find_map(|i| match i {
            Instruction::EstablishSyncStream { request, checkpoint_request } => {
                Some((request.clone(), checkpoint_request.clone()))
            }
            _ => None,
        });
        if let Some(close) = self.handle(instructions)? {
            return Ok(close);
        }
        let Some((request, checkpoint_request)) = establish else {
            return Err(Error::Engine("start did not ask for a stream".into()));
        };
        // Requests mode: the connection's checkpoint request is posted and
        // the engine seeded before the stream opens (and so before any id
        // is allocated); a failed post is a failed connection.
        let reconciled = match (self.options.checkpoint_mode, &checkpoint_request) {
            (CheckpointMode::Legacy, _) => Ok(()),
            (CheckpointMode::Requests, None) => {
                return Err(Error::Engine(
                    "--checkpoint-mode requests: the engine's EstablishSyncStream has no checkpoint_request (this build has no checkpoint requests)".into(),
                ))
            }
            (CheckpointMode::Requests, Some(payload)) => {
                let reconciled = checkpoint::reconcile(&mut self.port(), payload);
                match reconciled {
                    Ok(checkpoint::Reconciled::Seeded(id)) => {
                        self.requests_seeded = true;
                        self.log(format!("checkpoint requests seeded at {id}"));
                        Ok(())
                    }
                    Ok(checkpoint::Reconciled::Unsupported) => return Err(unsupported_service(&self.options.endpoint)),
                    Err(Failure::Request(e)) => Err(e),
                    Err(Failure::Local(e)) => return Err(e),
                }
            }
        };
        let opened = reconciled
            .and_then(|()| http::open_stream(&self.agent, &self.options.endpoint, &self.token, &request, self.options.binary));
        let stream = match opened {
            Ok(stream) => stream,
            Err(e) => {
                self.summary.failed_connections += 1;
                let stop = self.db.control("stop", Payload::Null)?;
                self.iteration = false;
                self.handle(stop)?;
                match e {
                    RequestError::Unauthorized(m) => {
                        self.log(format!("stream refused: {m}"));
                        if !self.options.credentials.can_refresh() {
                            return Err(Error::Credentials(format!(
                                "{m} (the token given with --token cannot be renewed; use --token-command)"
                            )));
                        }
                        self.last_failure = m.clone();
                        self.refresh_credentials()?;
                    }
                    RequestError::Other(m) => {
                        self.warn(format!("could not open the stream: {m}"));
                        self.last_failure = m;
                    }
                }
                return Ok(Reconnect::Later);
            }
        };
        self.summary.connections += 1;
        self.summary.binary = stream.binary;
        self.log(format!("connected to {} ({})", self.options.endpoint, if stream.binary { "BSON" } else { "JSON" }));
        let established = self.db.control("connection", Payload::Text("established"))?;
        if let Some(close) = self.handle(established)? {
            return Ok(close);
        }
        // A line already received, taken off the channel to see whether
        // the open transaction can wait for it.
        let mut next: Option<StreamEvent> = None;
        loop {
            if self.cancelled() || self.done {
                self.db.commit_lines()?;
                return Ok(Reconnect::Later);
            }
            let event = match next.take() {
                Some(event) => Some(event),
                None => match stream.events.recv_timeout(Duration::from_millis(200)) {
                    Ok(event) => Some(event),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => {
                        Some(StreamEvent::Failed("the stream reader stopped".into()))
                    }
                },
            };
            let close = match event {
                None => None,
                Some(StreamEvent::Text(line)) => {
                    self.count_line(line.len());
                    let result = self.db.control_line("line_text", Payload::Text(&line));
                    match self.line_result(result)? {
                        Some(instructions) => self.line_done(instructions, &stream, &mut next)?,
                        None => return Ok(Reconnect::Later),
                    }
                }
                Some(StreamEvent::Binary(doc)) => {
                    self.count_line(doc.len());
                    let result = self.db.control_line("line_binary", Payload::Blob(&doc));
                    match self.line_result(result)? {
                        Some(instructions) => self.line_done(instructions, &stream, &mut next)?,
                        None => return Ok(Reconnect::Later),
                    }
                }
                Some(StreamEvent::End) => {
                    self.log("the service ended the stream");
                    self.end_connection()?;
                    return Ok(Reconnect::Later);
                }
                Some(StreamEvent::Failed(message)) => {
                    self.summary.failed_connections += 1;
                    self.warn(format!("stream failed: {message}"));
                    self.last_failure = message;
                    self.end_connection()?;
                    return Ok(Reconnect::Later);
                }
            };
            if let Some(close) = close {
                return Ok(close);
            }
            if let Some(close) = self.maybe_upload()? {
                return Ok(close);
            }
        }
    }

    /// After a data line was stored: commits the open lines unless another
    /// line is already waiting (taken into `next`), the transaction holds
    /// [`LINES_PER_COMMIT`] lines, or the line did more than report
    /// progress (a checkpoint applied, a stream to close); then handles
    /// the instructions.
    fn line_done(
        &mut self,
        instructions: Vec<Instruction>,
        stream: &http::SyncStream,
        next: &mut Option<StreamEvent>,
    ) -> Result<Option<Reconnect>, Error> {
        let progress_only = instructions.iter().all(|i| matches!(i, Instruction::UpdateSyncStatus(_)));
        if progress_only && self.db.open_lines() < LINES_PER_COMMIT {
            *next = stream.events.try_recv().ok();
        }
        if next.is_none() {
            if let Err(e) = self.db.commit_lines() {
                // As a refused line: the iteration stops and resumes from
                // what the database holds.
                self.line_result(Err(e))?;
                return Ok(Some(Reconnect::Later));
            }
        }
        self.handle(instructions)
    }

    /// A line the engine refused (a protocol error: a malformed or
    /// out-of-order line) ends this connection, as in the SDKs: the
    /// iteration is stopped and the loop reconnects after the backoff.
    /// Other errors are fatal.
    fn line_result(&mut self, result: Result<Vec<Instruction>, Error>) -> Result<Option<Vec<Instruction>>, Error> {
        match result {
            Ok(instructions) => Ok(Some(instructions)),
            Err(Error::Engine(message)) => {
                self.summary.failed_connections += 1;
                self.refused_lines += 1;
                self.last_refusal = message.clone();
                self.warn(format!("the engine refused a line: {message}; reconnecting"));
                // The reference ends the iteration on such an error; oplite
                // keeps it. Stopping covers both (a stop without an
                // iteration returns nothing).
                if let Ok(instructions) = self.db.control("stop", Payload::Null) {
                    self.handle(instructions)?;
                }
                self.iteration = false;
                Ok(None)
            }
            Err(other) => Err(other),
        }
    }

    fn count_line(&mut self, bytes: usize) {
        self.first_line_at.get_or_insert_with(Instant::now);
        self.summary.lines += 1;
        self.summary.bytes += bytes as u64;
        if self.summary.lines.is_multiple_of(16) {
            self.progress.bytes(self.summary.bytes);
        }
    }

    fn end_connection(&mut self) -> Result<(), Error> {
        if self.iteration {
            let instructions = self.db.control("connection", Payload::Text("end"))?;
            self.iteration = false;
            self.handle(instructions)?;
        }
        Ok(())
    }
}

/// Runs the sync loop on `db` until `options.stop_when`, cancellation, the
/// timeout, `options.max_attempts` failed connections (`--once`), or a
/// fatal error (the database, the engine, credentials that cannot be had).
/// Network errors are retried. The summary's outcome says how it ended.
pub fn run(db: &Database, options: &SyncOptions) -> Result<Summary, Error> {
    let started = Instant::now();
    let ops_before = db.ops_held()?;
    let apply_before = db.last_apply()?;
    let mut session = Session {
        db,
        options,
        agent: http::agent(options.read_timeout),
        token: options.credentials.fetch()?,
        client_id: db.client_id()?,
        progress: Progress::new(options.progress),
        summary: Summary::default(),
        iteration: false,
        done: false,
        first_line_at: None,
        upload_retry_at: None,
        upload_backoff: options.backoff.clone(),
        started,
        refused_lines: 0,
        last_refusal: String::new(),
        requests_seeded: false,
        last_failure: String::new(),
        last_sync: None,
        awaiting_write_checkpoint: None,
        delay_logged: false,
    };
    let mut failed_attempts: u32 = 0;
    let mut gave_up = None;
    let mut backoff = options.backoff.clone();
    let result = (|| -> Result<(), Error> {
        // Local writes made while offline go first.
        session.maybe_upload()?;
        while !session.done && !session.cancelled() {
            let (lines_before, failed_before, checkpoints_before) =
                (session.summary.lines, session.summary.failed_connections, session.summary.checkpoints);
            let reconnect = session.connect_once()?;
            // Progress resets the delay: a checkpoint applied, or lines
            // received on a connection that did not fail.
            let failed = session.summary.failed_connections > failed_before;
            let applied = session.summary.checkpoints > checkpoints_before;
            let received = session.summary.lines > lines_before;
            if applied || (received && !failed) {
                backoff.reset();
            }
            // An attempt that failed before anything arrived.
            failed_attempts = if failed && !applied && !received { failed_attempts + 1 } else { 0 };
            if options.stop_when == StopWhen::Synced && failed_attempts >= options.max_attempts.max(1) {
                gave_up = Some(Outcome::GaveUp { attempts: failed_attempts, last_error: session.last_failure.clone() });
                break;
            }
            if session.refused_lines >= MAX_REFUSED_LINES {
                return Err(Error::Engine(format!(
                    "giving up after {MAX_REFUSED_LINES} connections in a row ended with a refused line: {}",
                    session.last_refusal
                )));
            }
            if session.done || session.cancelled() {
                break;
            }
            if let Reconnect::Later = reconnect {
                let delay = backoff.next_delay();
                session.progress.reconnecting();
                if failed_attempts > 0 {
                    let limit = match options.stop_when {
                        StopWhen::Synced => format!(" of {}", options.max_attempts.max(1)),
                        StopWhen::Cancelled => "; live mode retries until Ctrl-C".into(),
                    };
                    session.warn(format!("retrying in {:.1} s (failed attempt {failed_attempts}{limit})", delay.as_secs_f64()));
                } else {
                    session.log(format!("reconnecting in {delay:?}"));
                }
                let until = Instant::now() + delay;
                while Instant::now() < until && !session.cancelled() {
                    std::thread::sleep(Duration::from_millis(50).min(until - Instant::now()));
                }
                session.maybe_upload()?;
            }
        }
        Ok(())
    })();
    // What was being downloaded when the loop ended (`stop` clears it).
    let download_at_end = session.progress.download();
    let ended_at = Instant::now();
    // The run's last apply, if it applied one (read before `stop`).
    if let Ok(Some(apply)) = db.last_apply() {
        if Some(&apply) != apply_before.as_ref() {
            session.summary.strategy = Some(apply);
        }
    }
    if session.iteration {
        if let Ok(instructions) = db.control("stop", Payload::Null) {
            session.iteration = false;
            let _ = session.handle(instructions);
        }
    }
    // Lines stored after the last commit (the loop ended between them):
    // the caller may read the database on its own connection next.
    let committed = db.commit_lines();
    session.progress.finish();
    result?;
    committed?;
    let mut summary = session.summary;
    summary.ops = (db.ops_held()? - ops_before).max(0) as u64;
    summary.rows = db.row_counts()?;
    summary.buckets = db.bucket_count()?;
    summary.seconds = started.elapsed().as_secs_f64();
    summary.outcome = if session.done {
        Outcome::Synced
    } else if let Some(gave_up) = gave_up {
        gave_up
    } else if options.cancel.load(Ordering::SeqCst) {
        let synced = options.stop_when == StopWhen::Cancelled && summary.checkpoints > 0 && download_at_end.is_none();
        if synced { Outcome::Stopped } else { Outcome::Interrupted }
    } else if let (StopWhen::Cancelled, Some((at, wall))) = (options.stop_when, session.last_sync) {
        Outcome::TimedOutSynced(TimedOutSynced {
            seconds: options.timeout.map_or(0, |t| t.as_secs()),
            last_sync_unix: wall.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
            last_sync_before_end_ms: ended_at.saturating_duration_since(at).as_millis() as u64,
            download: download_at_end,
            upload: upload_in_progress(db, session.awaiting_write_checkpoint)?,
        })
    } else {
        Outcome::TimedOut { seconds: options.timeout.map_or(0, |t| t.as_secs()) }
    };
    Ok(summary)
}

/// The local writes under way at the end of a run: entries still queued,
/// or uploaded and waiting for the checkpoint that confirms them (asked
/// for by this run, or by none yet when the gate is still at the
/// local-write sentinel).
fn upload_in_progress(db: &Database, awaiting: Option<i64>) -> Result<Option<UploadInProgress>, Error> {
    let queued = db.pending_upload_count()?;
    Ok(if queued > 0 {
        Some(UploadInProgress::Queued(queued))
    } else if awaiting.is_some() {
        Some(UploadInProgress::AwaitingWriteCheckpoint(awaiting))
    } else if db.target_checkpoint()? == Some(i64::MAX) {
        Some(UploadInProgress::AwaitingWriteCheckpoint(None))
    } else {
        None
    })
}
