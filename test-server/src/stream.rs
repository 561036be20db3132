//! `POST /sync/stream`: writing a sync stream as HTTP/1.1 chunks, one line
//! per chunk, with keep-alives, token expiry and the test faults.

use super::*;
use crate::sync_streams::Selection;

/// Writes HTTP/1.1 chunks, one per line, flushing each so keep-alive lines
/// reach the client at once.
pub(crate) struct ChunkedLines {
    pub(crate) out: Box<dyn Write + Send>,
    pub(crate) encoding: Encoding,
    pub(crate) lines: u64,
    pub(crate) bytes: u64,
    /// The planned fault of this stream.
    pub(crate) fault: Option<Fault>,
    /// Lines left before the stream holds (a held checkpoint).
    pub(crate) hold_after: Option<usize>,
}

/// A fault planned for a stream.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Fault {
    /// Drop the connection after this many lines.
    Drop(usize),
    /// Send an invalid line after this many lines.
    Garbage(usize),
}

/// Why a stream ended (other than the client going away).
pub(crate) enum StreamEnd {
    /// The planned fault: the connection is dropped without the final chunk.
    Dropped,
    /// The service is shutting down.
    Stopped,
    /// The token expired; `{"token_expires_in": 0}` was the last line.
    TokenExpired,
    /// A held checkpoint: the stream sends nothing more until the service
    /// stops.
    Held,
}

impl ChunkedLines {
    pub(crate) fn send(&mut self, line: &[u8]) -> io::Result<Result<(), StreamEnd>> {
        match &mut self.hold_after {
            Some(0) => return Ok(Err(StreamEnd::Held)),
            Some(left) => *left -= 1,
            None => {}
        }
        match &mut self.fault {
            Some(Fault::Drop(0)) => return Ok(Err(StreamEnd::Dropped)),
            Some(Fault::Garbage(0)) => {
                self.fault = None;
                let garbage: &[u8] = match self.encoding {
                    Encoding::Json => b"{\"checkpoint\":",
                    // A document whose only element has type 0x7F.
                    Encoding::Bson => b"\x0b\x00\x00\x00\x7fbad\x00\x00\x00",
                };
                self.write_chunk(garbage)?;
            }
            Some(Fault::Drop(left) | Fault::Garbage(left)) => *left -= 1,
            None => {}
        }
        self.write_chunk(line)?;
        Ok(Ok(()))
    }

    pub(crate) fn write_chunk(&mut self, line: &[u8]) -> io::Result<()> {
        let newline = self.encoding == Encoding::Json;
        let len = line.len() + newline as usize;
        write!(self.out, "{len:x}\r\n")?;
        self.out.write_all(line)?;
        if newline {
            self.out.write_all(b"\n")?;
        }
        self.out.write_all(b"\r\n")?;
        self.out.flush()?;
        self.lines += 1;
        self.bytes += len as u64;
        Ok(())
    }

    pub(crate) fn send_value(&mut self, line: &Value) -> io::Result<Result<(), StreamEnd>> {
        let bytes = lines::encode(self.encoding, line);
        self.send(&bytes)
    }

    pub(crate) fn finish(&mut self) -> io::Result<()> {
        self.out.write_all(b"0\r\n\r\n")?;
        self.out.flush()
    }
}

/// Sends a line; returns from the stream at a planned drop or an I/O
/// error (the client went away).
macro_rules! send {
    ($call:expr) => {
        if let Err(end) = $call? {
            return Ok(end);
        }
    };
}

pub(crate) fn stream(
    shared: &Shared,
    mut raw: Box<dyn Write + Send>,
    request: &Value,
    encoding: Encoding,
    token: &str,
    token_left: Option<i64>,
) -> io::Result<()> {
    write!(
        raw,
        "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nTransfer-Encoding: chunked\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
        encoding.content_type()
    )?;
    raw.flush()?;
    let fault = {
        let mut state = shared.lock();
        state.stats.streams += 1;
        state.stream_log.push(dev_control::stream_entry(request));
        state.fault_plans.pop_front()
    };
    let mut out = ChunkedLines { out: raw, encoding, lines: 0, bytes: 0, fault, hold_after: None };
    let mut result = stream_lines(shared, &mut out, request, token, token_left);
    {
        let mut state = shared.lock();
        state.stats.lines_sent += out.lines;
        state.stats.bytes_sent += out.bytes;
        if matches!(result, Ok(StreamEnd::Dropped)) {
            state.stats.dropped_streams += 1;
        }
    }
    // A planned drop breaks the chunked framing: tiny_http keeps the socket
    // open for a next request, so closing our writer alone would leave the
    // client waiting; an invalid chunk header makes it fail at once, as on
    // a connection reset. An error means the client went away.
    if let Ok(StreamEnd::Dropped) = result {
        let _ = out.out.write_all(b"\r\nconnection dropped by oplite-test-server\r\n");
        let _ = out.out.flush();
    }
    if let Ok(StreamEnd::Held) = result {
        // Silent, as a service stuck in the middle of a checkpoint: no
        // keep-alives either, until the service stops.
        let mut state = shared.lock();
        while !shared.stopping.load(Ordering::SeqCst) {
            state = shared.changed.wait_timeout(state, Duration::from_millis(200)).unwrap_or_else(|p| p.into_inner()).0;
        }
        drop(state);
        result = out.finish().map(|()| StreamEnd::Stopped);
    }
    result.map(|_| ())
}

/// Sends the data of a checkpoint, highest priority first, as the service
/// does: after the buckets of each priority but the last comes
/// `partial_checkpoint_complete` for it, and `checkpoint_complete` ends.
pub(crate) fn send_by_priority(
    out: &mut ChunkedLines,
    mut sources: Vec<(String, i32, i64, OpSource)>,
    ops_per_line: usize,
    last_op_id: i64,
) -> io::Result<Result<(), StreamEnd>> {
    sources.sort_by_key(|s| s.1);
    let mut priorities: Vec<i32> = sources.iter().map(|s| s.1).collect();
    priorities.dedup();
    for (i, priority) in priorities.iter().enumerate() {
        let group: Vec<_> = {
            let (group, rest): (Vec<_>, Vec<_>) = sources.into_iter().partition(|s| s.1 == *priority);
            sources = rest;
            group
        };
        for line in DataLines::new(group, ops_per_line, out.encoding) {
            if let Err(end) = out.send(&line)? {
                return Ok(Err(end));
            }
        }
        if i + 1 < priorities.len() {
            if let Err(end) = out.send_value(&lines::partial_checkpoint_complete(last_op_id, *priority))? {
                return Ok(Err(end));
            }
        }
    }
    out.send_value(&lines::checkpoint_complete(last_op_id))
}

/// Before a checkpoint line: if a hold is planned, this stream takes it
/// and holds after the checkpoint line and the planned number of lines.
fn take_hold(shared: &Shared, out: &mut ChunkedLines) {
    if let Some(lines) = shared.lock().hold_next_checkpoint.take() {
        out.hold_after = Some(1 + lines);
    }
}

pub(crate) fn stream_lines(
    shared: &Shared,
    out: &mut ChunkedLines,
    request: &Value,
    token: &str,
    token_left: Option<i64>,
) -> io::Result<StreamEnd> {
    let client_id = request["client_id"].as_str().unwrap_or_default().to_owned();
    let mut after: HashMap<String, i64> = HashMap::new();
    for bucket in request["buckets"].as_array().into_iter().flatten() {
        if let (Some(name), Some(a)) = (bucket["name"].as_str(), bucket["after"].as_str()) {
            after.insert(name.to_owned(), a.parse().unwrap_or(0));
        }
    }

    send!(out.send_value(&lines::token_expires_in(token_left.unwrap_or(3600))));
    if token_left == Some(0) {
        out.finish()?;
        return Ok(StreamEnd::TokenExpired);
    }

    // The first checkpoint and its data: a snapshot of the state now.
    let (checkpoint, sources, mut sent, mut sent_through, mut sent_wc, mut version, ops_per_line, selection) = {
        let state = shared.lock();
        let selection = Selection::for_request(&state.streams, request);
        let entries = selection.entries(state.entries());
        let wc = state.write_checkpoints.get(&client_id).copied();
        let mut checkpoint = lines::checkpoint(state.last_op_id(), wc, &entries);
        selection.annotate(&mut checkpoint);
        let mut sources: Vec<(String, i32, i64, OpSource)> = Vec::new();
        let mut sent_through = HashMap::new();
        for bucket in &state.buckets {
            let Some(priority) = selection.priority(&bucket.name, bucket.priority) else { continue };
            let from = after.get(&bucket.name).copied().unwrap_or(0).max(0);
            let generated: OpSource = match (bucket.generated, &state.spec) {
                (Some(b), Some(spec)) => spec.ops_after(b, from as u64),
                _ => Box::new(std::iter::empty()),
            };
            let appended: Vec<ServerOp> = bucket.ops.iter().filter(|op| op.op_id > from).cloned().collect();
            sources.push((bucket.name.clone(), priority, from, Box::new(generated.chain(appended))));
            sent_through.insert(bucket.name.clone(), bucket.last_op_id(state.spec.as_ref()).max(from));
        }
        let sent: HashMap<String, BucketEntry> = entries.into_iter().map(|e| (e.bucket.clone(), e)).collect();
        (checkpoint, sources, sent, sent_through, wc, state.version, state.ops_per_line, selection)
    };
    let last_op_id = checkpoint["checkpoint"]["last_op_id"].as_str().unwrap_or("0").parse().unwrap_or(0);
    take_hold(shared, out);
    send!(out.send_value(&checkpoint));
    if let Err(end) = send_by_priority(out, sources, ops_per_line, last_op_id)? {
        return Ok(end);
    }
    out.hold_after = None;

    // Live: keep-alives, token expiry, and new checkpoints on changes.
    let mut last_keepalive = Instant::now();
    loop {
        let mut state = shared.lock();
        loop {
            if shared.stopping.load(Ordering::SeqCst) {
                drop(state);
                out.finish()?;
                return Ok(StreamEnd::Stopped);
            }
            let expired = state.token_left(token).is_err();
            if expired || state.version != version {
                break;
            }
            let elapsed = last_keepalive.elapsed();
            if elapsed >= shared.keepalive {
                break;
            }
            let wait = shared.keepalive - elapsed;
            let wait = match state.token_expires_after(token) {
                Some(left) => wait.min(left + Duration::from_millis(5)),
                None => wait,
            };
            state = shared.changed.wait_timeout(state, wait).unwrap_or_else(|p| p.into_inner()).0;
        }
        let left = state.token_left(token);
        let Ok(left) = left else {
            drop(state);
            send!(out.send_value(&lines::token_expires_in(0)));
            out.finish()?;
            return Ok(StreamEnd::TokenExpired);
        };
        if state.version == version {
            drop(state);
            send!(out.send_value(&lines::token_expires_in(left.unwrap_or(3600))));
            last_keepalive = Instant::now();
            continue;
        }
        version = state.version;
        if state.bad_checkpoints > 0 {
            state.bad_checkpoints -= 1;
            let bad = json!({"checkpoint": {"last_op_id": "invalid line", "write_checkpoint": null, "buckets": []}});
            drop(state);
            send!(out.send_value(&bad));
            state = shared.lock();
        }
        // What changed since the last checkpoint sent on this stream.
        let entries = selection.entries(state.entries());
        let wc = state.write_checkpoints.get(&client_id).copied();
        let updated: Vec<BucketEntry> =
            entries.iter().filter(|e| sent.get(&e.bucket) != Some(e)).cloned().collect();
        let removed: Vec<String> =
            sent.keys().filter(|name| !entries.iter().any(|e| &e.bucket == *name)).cloned().collect();
        if updated.is_empty() && removed.is_empty() && wc == sent_wc {
            continue;
        }
        let mut sources: Vec<(String, i32, i64, OpSource)> = Vec::new();
        for entry in &updated {
            let bucket = state.buckets.iter().find(|b| b.name == entry.bucket).expect("entry of a bucket");
            let from = sent_through.get(&entry.bucket).copied().unwrap_or(0);
            let ops: Vec<ServerOp> = bucket.ops.iter().filter(|op| op.op_id > from).cloned().collect();
            sent_through.insert(entry.bucket.clone(), bucket.last_op_id(state.spec.as_ref()).max(from));
            sources.push((entry.bucket.clone(), entry.priority, from, Box::new(ops.into_iter())));
        }
        let last_op_id = state.last_op_id();
        drop(state);
        take_hold(shared, out);
        let mut diff = lines::checkpoint_diff(last_op_id, wc, &updated, &removed);
        selection.annotate(&mut diff);
        send!(out.send_value(&diff));
        if let Err(end) = send_by_priority(out, sources, ops_per_line, last_op_id)? {
            return Ok(end);
        }
        out.hold_after = None;
        for name in &removed {
            sent.remove(name);
            sent_through.remove(name);
        }
        for entry in updated {
            sent.insert(entry.bucket.clone(), entry);
        }
        sent_wc = wc;
    }
}
