//! HTTP to a PowerSync-compatible service: the sync stream, read line by
//! line on its own thread, and the small JSON requests of the connector.
//!
//! The stream is never buffered whole. A reader thread splits the body
//! into lines (newline-delimited JSON, or BSON documents by their length
//! prefix) and hands them over a bounded channel, so at most
//! [`CHANNEL_LINES`] lines wait in memory while SQLite stores the previous
//! one, and reading the socket overlaps with storing.

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc::{sync_channel, Receiver};
use std::time::Duration;

use serde_json::Value;
use ureq::Agent;

use crate::Error;

/// Lines waiting between the reader thread and the engine.
pub const CHANNEL_LINES: usize = 8;
/// The largest line accepted (the service sends far smaller ones).
pub const MAX_LINE_BYTES: usize = 64 << 20;
/// `Accept` value asking for BSON lines.
pub const BSON_STREAM: &str = "application/vnd.powersync.bson-stream";
/// `Accept` value asking for JSON lines.
pub const NDJSON: &str = "application/x-ndjson";

/// One event from the stream reader.
#[derive(Debug)]
pub enum StreamEvent {
    /// A JSON line (without its newline).
    Text(String),
    /// A BSON document.
    Binary(Vec<u8>),
    /// The server ended the response.
    End,
    /// Reading failed (connection dropped, timeout, bad framing).
    Failed(String),
}

/// An open sync stream.
pub struct SyncStream {
    /// Events in arrival order; ends after `End` or `Failed`.
    pub events: Receiver<StreamEvent>,
    /// Whether the server answered with BSON.
    pub binary: bool,
}

/// Why a request failed.
#[derive(Debug)]
pub enum RequestError {
    /// 401: the token is missing, unknown or expired.
    Unauthorized(String),
    /// Anything else (connection refused, 5xx, bad body).
    Other(String),
}

impl From<RequestError> for Error {
    fn from(e: RequestError) -> Self {
        match e {
            RequestError::Unauthorized(m) => Error::Http(format!("unauthorized: {m}")),
            RequestError::Other(m) => Error::Http(m),
        }
    }
}

/// An HTTP agent for a sync session. `read_timeout` bounds the silence
/// on the stream: the service sends keep-alive lines, so a longer silence
/// means a dead connection.
pub fn agent(read_timeout: Duration) -> Agent {
    Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(10)))
        .timeout_per_read(Some(read_timeout))
        .user_agent(concat!("oplite-cli/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

fn join(endpoint: &str, path: &str) -> String {
    format!("{}/{}", endpoint.trim_end_matches('/'), path.trim_start_matches('/'))
}

fn check_status(response: &mut ureq::http::Response<ureq::Body>, what: &str) -> Result<(), RequestError> {
    let status = response.status().as_u16();
    if (200..300).contains(&status) {
        return Ok(());
    }
    let body = response.body_mut().read_to_string().unwrap_or_default();
    let message = format!("{what}: HTTP {status} {}", body.chars().take(300).collect::<String>());
    if status == 401 {
        Err(RequestError::Unauthorized(message))
    } else {
        Err(RequestError::Other(message))
    }
}

/// `POST {endpoint}/sync/stream` with the engine's request body; on success
/// a thread reads the response into [`SyncStream::events`].
pub fn open_stream(agent: &Agent, endpoint: &str, token: &str, request: &Value, binary: bool) -> Result<SyncStream, RequestError> {
    let url = join(endpoint, "sync/stream");
    let mut response = agent
        .post(&url)
        .header("Authorization", format!("Token {token}"))
        .header("Content-Type", "application/json")
        .header("Accept", if binary { BSON_STREAM } else { NDJSON })
        .send(request.to_string())
        .map_err(|e| RequestError::Other(format!("POST {url}: {e}")))?;
    check_status(&mut response, &format!("POST {url}"))?;
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let binary = content_type.contains(BSON_STREAM);
    let reader = response.into_body().into_reader();
    let (sender, events) = sync_channel(CHANNEL_LINES);
    std::thread::Builder::new()
        .name("sync-stream-reader".into())
        .spawn(move || {
            let mut reader = BufReader::with_capacity(256 << 10, reader);
            loop {
                let event = if binary { read_bson(&mut reader) } else { read_json(&mut reader) };
                let last = matches!(event, StreamEvent::End | StreamEvent::Failed(_));
                // The receiver is gone when the host closed the stream:
                // returning drops the body and the connection.
                if sender.send(event).is_err() || last {
                    return;
                }
            }
        })
        .map_err(|e| RequestError::Other(format!("starting the stream reader: {e}")))?;
    Ok(SyncStream { events, binary })
}

/// Reads the next non-empty JSON line.
pub fn read_json(reader: &mut impl BufRead) -> StreamEvent {
    loop {
        let mut line = Vec::new();
        match reader.by_ref().take(MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut line) {
            Ok(0) => return StreamEvent::End,
            Ok(_) => {}
            Err(e) => return StreamEvent::Failed(format!("reading the stream: {e}")),
        }
        if line.len() > MAX_LINE_BYTES {
            return StreamEvent::Failed(format!("a line is longer than {MAX_LINE_BYTES} bytes"));
        }
        let complete = line.last() == Some(&b'\n');
        while matches!(line.last(), Some(b'\n' | b'\r')) {
            line.pop();
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            if !complete {
                return StreamEvent::End;
            }
            continue;
        }
        if !complete {
            // The body ended without a final newline: accept the line only
            // if it is whole JSON (a cut connection leaves half a line).
            if serde_json::from_slice::<serde::de::IgnoredAny>(&line).is_err() {
                return StreamEvent::Failed("the stream ended in the middle of a line".into());
            }
        }
        return match String::from_utf8(line) {
            Ok(text) => StreamEvent::Text(text),
            Err(_) => StreamEvent::Failed("a line is not valid UTF-8".into()),
        };
    }
}

/// Reads the next BSON document (length-prefixed).
pub fn read_bson(reader: &mut impl Read) -> StreamEvent {
    let mut prefix = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match reader.read(&mut prefix[got..]) {
            Ok(0) if got == 0 => return StreamEvent::End,
            Ok(0) => return StreamEvent::Failed("the stream ended in the middle of a document".into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return StreamEvent::Failed(format!("reading the stream: {e}")),
        }
    }
    let len = i32::from_le_bytes(prefix);
    if len < 5 || len as usize > MAX_LINE_BYTES {
        return StreamEvent::Failed(format!("bad BSON document length {len}"));
    }
    let mut doc = vec![0u8; len as usize];
    doc[..4].copy_from_slice(&prefix);
    match reader.read_exact(&mut doc[4..]) {
        Ok(()) => StreamEvent::Binary(doc),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            StreamEvent::Failed("the stream ended in the middle of a document".into())
        }
        Err(e) => StreamEvent::Failed(format!("reading the stream: {e}")),
    }
}

/// `GET {endpoint}/write-checkpoint2.json?client_id=...`: the service's
/// write checkpoint for this client.
pub fn write_checkpoint(agent: &Agent, endpoint: &str, token: &str, client_id: &str) -> Result<i64, RequestError> {
    let url = join(endpoint, "write-checkpoint2.json");
    let mut response = agent
        .get(&url)
        .query("client_id", client_id)
        .header("Authorization", format!("Token {token}"))
        .call()
        .map_err(|e| RequestError::Other(format!("GET {url}: {e}")))?;
    check_status(&mut response, &format!("GET {url}"))?;
    let body = response.body_mut().read_to_string().map_err(|e| RequestError::Other(format!("GET {url}: {e}")))?;
    let parsed: Value = serde_json::from_str(&body).map_err(|e| RequestError::Other(format!("GET {url}: {e}")))?;
    let wc = &parsed["data"]["write_checkpoint"];
    wc.as_str()
        .and_then(|s| s.parse().ok())
        .or_else(|| wc.as_i64())
        .ok_or_else(|| RequestError::Other(format!("GET {url}: no data.write_checkpoint in {body}")))
}

/// `POST {endpoint}/sync/checkpoint-request` with `{client_id,
/// checkpoint_request_id}` (the id as a decimal string, as the SDKs send
/// it): the id the service accepted, or `None` when it answers 404 (a
/// service without checkpoint requests). The answer is read from
/// `data.checkpoint_request_id` (what the SDKs read) or
/// `data.write_checkpoint` (what the service's handler names it).
pub fn checkpoint_request(agent: &Agent, endpoint: &str, token: &str, client_id: &str, id: i64) -> Result<Option<i64>, RequestError> {
    let url = join(endpoint, "sync/checkpoint-request");
    let body = serde_json::json!({"client_id": client_id, "checkpoint_request_id": id.to_string()});
    let mut response = agent
        .post(&url)
        .header("Authorization", format!("Token {token}"))
        .header("Content-Type", "application/json")
        .send(body.to_string())
        .map_err(|e| RequestError::Other(format!("POST {url}: {e}")))?;
    if response.status().as_u16() == 404 {
        return Ok(None);
    }
    check_status(&mut response, &format!("POST {url}"))?;
    let text = response.body_mut().read_to_string().map_err(|e| RequestError::Other(format!("POST {url}: {e}")))?;
    let parsed: Value = serde_json::from_str(&text).map_err(|e| RequestError::Other(format!("POST {url}: {e}")))?;
    let data = &parsed["data"];
    let id_of = |v: &Value| v.as_str().and_then(|s| s.parse().ok()).or_else(|| v.as_i64());
    id_of(&data["checkpoint_request_id"])
        .or_else(|| id_of(&data["write_checkpoint"]))
        .map(Some)
        .ok_or_else(|| RequestError::Other(format!("POST {url}: no data.checkpoint_request_id in {text}")))
}

/// `POST url` with a JSON body; returns the response body.
pub fn post_json(agent: &Agent, url: &str, token: &str, body: &Value) -> Result<String, RequestError> {
    let mut response = agent
        .post(url)
        .header("Authorization", format!("Token {token}"))
        .header("Content-Type", "application/json")
        .send(body.to_string())
        .map_err(|e| RequestError::Other(format!("POST {url}: {e}")))?;
    check_status(&mut response, &format!("POST {url}"))?;
    response.body_mut().read_to_string().map_err(|e| RequestError::Other(format!("POST {url}: {e}")))
}

/// The default upload URL for an endpoint: `{endpoint}/upload` (the test
/// service's stand-in for an app backend).
pub fn default_upload_url(endpoint: &str) -> String {
    join(endpoint, "upload")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(input: &[u8]) -> Vec<String> {
        let mut reader = BufReader::new(input);
        let mut out = Vec::new();
        loop {
            match read_json(&mut reader) {
                StreamEvent::Text(t) => out.push(t),
                StreamEvent::End => return out,
                StreamEvent::Failed(e) => {
                    out.push(format!("FAILED: {e}"));
                    return out;
                }
                StreamEvent::Binary(_) => unreachable!(),
            }
        }
    }

    #[test]
    fn json_lines_skip_blanks_and_detect_cut_lines() {
        assert_eq!(texts(b"{\"a\":1}\n\n{\"b\":2}\r\n"), vec![r#"{"a":1}"#, r#"{"b":2}"#]);
        assert_eq!(texts(b"{\"a\":1}\n{\"b\":2}"), vec![r#"{"a":1}"#, r#"{"b":2}"#]);
        assert_eq!(texts(b"{\"a\":1}\n{\"b\":"), vec![r#"{"a":1}"#.to_owned(), "FAILED: the stream ended in the middle of a line".to_owned()]);
    }

    #[test]
    fn bson_documents_are_framed_by_their_length() {
        let doc = oplite_test_data::bson::from_json(&serde_json::json!({"token_expires_in": 5}));
        let mut two = doc.clone();
        two.extend_from_slice(&doc);
        let mut reader: &[u8] = &two;
        assert!(matches!(read_bson(&mut reader), StreamEvent::Binary(d) if d == doc));
        assert!(matches!(read_bson(&mut reader), StreamEvent::Binary(_)));
        assert!(matches!(read_bson(&mut reader), StreamEvent::End));
        let mut cut: &[u8] = &doc[..doc.len() - 2];
        assert!(matches!(read_bson(&mut cut), StreamEvent::Failed(_)));
        let mut bad: &[u8] = &[1, 0, 0, 0];
        assert!(matches!(read_bson(&mut bad), StreamEvent::Failed(_)));
    }
}
