//! A loopback stand-in for the PowerSync service, for tests and the demo.
//!
//! **Not a production server.** It binds to 127.0.0.1 only, keeps its state
//! in memory, trusts any token it issued itself, and implements only what a
//! client needs to exercise a full sync loop. The production server is the
//! PowerSync service.
//!
//! # HTTP interface
//!
//! | request | answer |
//! |---|---|
//! | `POST /sync/stream` (body: the core's `EstablishSyncStream.request`) | the sync stream: newline-delimited JSON, or BSON documents back to back when the `Accept` header names `application/vnd.powersync.bson-stream`; chunked, kept open with `{"token_expires_in": N}` keep-alive lines |
//! | `GET /write-checkpoint2.json?client_id=C` | `{"data":{"write_checkpoint":"N"}}`, N being client C's record plus one; the next checkpoint sent to client C carries `write_checkpoint: N` |
//! | `POST /sync/checkpoint-request` (body `{"client_id": C, "checkpoint_request_id": "N"}`) | `{"data":{"write_checkpoint":"M","checkpoint_request_id":"M"}}` (the service's handler names it `write_checkpoint`, the SDKs read `checkpoint_request_id`), M = max(N, client C's record), which becomes the record; when it moved, the next checkpoint sent to client C carries `write_checkpoint: M` |
//! | `POST /upload` (body `{"batch": [ps_crud entries]}`) | applies the batch to the service's buckets; stands in for the app's backend, which the PowerSync service does not include |
//! | `GET /dev/token?ttl=SECONDS` | a new token (plain text): a JWT the service signed, valid for `ttl` seconds (default 3600) |
//! | `GET /probes/liveness` | `200 ok` |
//! | `POST /dev/drop-next-stream`, `POST /dev/expire-token`, `GET /dev/log` | faults and a log of uploads and stream requests, for tests in another process (`dev_control`) |
//!
//! `POST /sync/stream`, `GET /write-checkpoint2.json` and
//! `POST /sync/checkpoint-request` are validated as
//! the PowerSync service validates them ([`validate`]: 400 `PSYNC_S2001`,
//! or Fastify's body errors), then their token is checked as the service
//! checks it ([`auth`]: 401 with `PSYNC_S2101`, `S2103`, `S2104`, `S2105` or
//! `S2106`). Errors have the service's shape:
//! `{"error": {"name", "code", "status", "description", "details"?}}`.
//! `POST /upload` needs a valid token too. `/dev/token`,
//! `/probes/liveness` and the `/dev/` endpoints need none. Unknown paths
//! are 404 `PSYNC_S2002`.
//!
//! # Data
//!
//! The service serves either a generated stream ([`StreamSpec`], held as a
//! formula, so a million ops cost no memory) or explicit buckets (a
//! recorded stream, a `ServerModel`). Uploaded writes become new ops: in the
//! bucket that holds the row, or in a bucket named `uploads` for new rows.
//! A client that reconnects with `after` values gets only the ops above
//! them.
//!
//! # Faults for tests
//!
//! [`TestService::drop_next_stream_after`] cuts the next stream after a
//! number of lines: the body breaks off mid-stream (an invalid chunk, so
//! the client's read fails as on a reset connection). [`TestService::expire_token`] makes open
//! streams of that token send `{"token_expires_in": 0}` and close, and new
//! requests with it get 401 `PSYNC_S2103`. [`TestService::corrupt_next_stream_after`]
//! slips an invalid line into the next stream. [`TestService::bad_next_checkpoint`]
//! makes the next checkpoint an open stream sends follow a checkpoint whose
//! `last_op_id` is not a number, as a sync error the client must report.
//! [`TestService::hold_next_checkpoint_after`] stops the next
//! checkpoint part-way and keeps the stream open and silent, so a client is
//! mid-download for as long as a test needs.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use oplite_test_data::lines::{self, BucketEntry, DataLines, Encoding, OpSource};
use oplite_test_data::server::{ServerBucket, ServerOp};
use oplite_test_data::StreamSpec;
use serde_json::{json, Value};

pub mod auth;
mod dev_control;
mod http;
mod state;
mod stream;
pub mod sync_streams;
pub mod two_tables;
pub mod validate;

use http::*;
use state::*;
use stream::*;

/// The bucket that receives uploaded rows no other bucket holds.
pub const UPLOADS_BUCKET: &str = "uploads";

/// What the service serves.
#[derive(Clone, Debug)]
pub enum Dataset {
    /// A generated benchmark stream.
    Generated(StreamSpec),
    /// Explicit buckets (a recorded stream, a model).
    Buckets(Vec<ServerBucket>),
}

impl Dataset {
    /// The buckets of a [`ServerModel`](oplite_test_data::ServerModel)
    /// (its ops since each bucket's last CLEAR).
    pub fn from_model(model: &oplite_test_data::ServerModel) -> Self {
        Dataset::Buckets(model.buckets.clone())
    }
}

/// How the service behaves.
#[derive(Clone, Debug)]
pub struct ServiceOptions {
    /// The data.
    pub dataset: Dataset,
    /// Tokens accepted forever (default: `dev`); a convenience the
    /// PowerSync service does not have.
    pub static_tokens: Vec<String>,
    /// The `aud` values a token may have (default: [`auth::AUDIENCE`], the
    /// audience of the tokens the service issues).
    pub audiences: Vec<String>,
    /// The longest `exp - iat` of a token (the service's
    /// `token_max_expiration`, default a day).
    pub max_token_lifetime: Duration,
    /// Time between keep-alive lines on an idle stream.
    pub keepalive: Duration,
    /// Ops per data line for explicit buckets and uploads (a generated
    /// stream uses its own `ops_per_line`).
    pub ops_per_line: usize,
    /// The address to bind (default 127.0.0.1:0, a free port).
    pub bind: SocketAddr,
    /// The sync streams of the configuration (default none: every client
    /// gets every bucket, as with sync rules; see [`sync_streams`]).
    pub streams: Vec<sync_streams::SyncStreamDef>,
}

impl ServiceOptions {
    /// Options serving `dataset`, with the defaults.
    pub fn new(dataset: Dataset) -> Self {
        ServiceOptions {
            dataset,
            static_tokens: vec!["dev".to_owned()],
            audiences: vec![auth::AUDIENCE.to_owned()],
            max_token_lifetime: Duration::from_secs(86_400),
            keepalive: Duration::from_secs(20),
            ops_per_line: 1000,
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            streams: Vec::new(),
        }
    }
}

/// Counters of what the service did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// `POST /sync/stream` requests answered with a stream.
    pub streams: u64,
    /// Streams cut by [`TestService::drop_next_stream_after`].
    pub dropped_streams: u64,
    /// Requests refused with 401.
    pub unauthorized: u64,
    /// Requests refused by validation (400 or 415).
    pub invalid_requests: u64,
    /// Upload batches applied.
    pub upload_batches: u64,
    /// Upload entries applied.
    pub uploaded_ops: u64,
    /// Write checkpoints issued by `GET /write-checkpoint2.json`.
    pub write_checkpoints: u64,
    /// `POST /sync/checkpoint-request` requests answered.
    pub checkpoint_requests: u64,
    /// Lines written on all streams.
    pub lines_sent: u64,
    /// Bytes of lines written on all streams.
    pub bytes_sent: u64,
}


pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    pub(crate) changed: Condvar,
    pub(crate) stopping: AtomicBool,
    pub(crate) keepalive: Duration,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn bump(&self, mut state: MutexGuard<'_, State>) {
        state.version += 1;
        drop(state);
        self.changed.notify_all();
    }
}

/// A running loopback service. Dropping it shuts it down.
pub struct TestService {
    pub(crate) shared: Arc<Shared>,
    pub(crate) server: Arc<tiny_http::Server>,
    pub(crate) addr: SocketAddr,
    pub(crate) accept: Option<JoinHandle<()>>,
}

impl TestService {
    /// Starts the service on `options.bind` (127.0.0.1, a free port by
    /// default).
    pub fn start(options: ServiceOptions) -> io::Result<Self> {
        if !options.bind.ip().is_loopback() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "the test service binds to loopback addresses only"));
        }
        let server = tiny_http::Server::http(options.bind).map_err(io::Error::other)?;
        let addr = server.server_addr().to_ip().ok_or_else(|| io::Error::other("not an IP listener"))?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new(&options)),
            changed: Condvar::new(),
            stopping: AtomicBool::new(false),
            keepalive: options.keepalive,
        });
        let server = Arc::new(server);
        let accept = {
            let (server, shared) = (server.clone(), shared.clone());
            std::thread::Builder::new().name("test-service".into()).spawn(move || {
                for request in server.incoming_requests() {
                    if shared.stopping.load(Ordering::SeqCst) {
                        break;
                    }
                    let shared = shared.clone();
                    let _ = std::thread::Builder::new()
                        .name("test-service-request".into())
                        .spawn(move || handle(&shared, request));
                }
            })?
        };
        Ok(TestService { shared, server, addr, accept: Some(accept) })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A new token valid for `ttl` (whole seconds).
    pub fn issue_token(&self, ttl: Duration) -> String {
        self.shared.lock().keys.issue(ttl.as_secs() as i64)
    }

    /// A JWT with these claims, signed with the service's key, for tests
    /// of tokens the service refuses (a wrong `aud`, no `sub`, ...).
    pub fn sign_token(&self, claims: &Value) -> String {
        self.shared.lock().keys.sign(claims)
    }

    /// Makes `token` invalid now; its open streams send
    /// `{"token_expires_in": 0}` and close.
    pub fn expire_token(&self, token: &str) {
        expire_token(&self.shared, token);
    }

    /// The next stream sends `lines` lines and then drops the connection.
    pub fn drop_next_stream_after(&self, lines: usize) {
        self.shared.lock().fault_plans.push_back(Fault::Drop(lines));
    }

    /// The next stream sends `lines` lines, then a line that is not valid
    /// (truncated JSON, or a BSON document with an unknown element type),
    /// then carries on.
    pub fn corrupt_next_stream_after(&self, lines: usize) {
        self.shared.lock().fault_plans.push_back(Fault::Garbage(lines));
    }

    /// The next change an open stream sends a checkpoint for is preceded
    /// by `{"checkpoint": {"last_op_id": "invalid line", ...}}`, a line a
    /// client must refuse (the core's iteration fails, and the SDK reports
    /// it as a download error and reconnects). With `now`, open streams
    /// send it at once, without waiting for a change.
    pub fn bad_next_checkpoint(&self, now: bool) {
        bad_next_checkpoint(&self.shared, now);
    }

    /// The next checkpoint a stream sends (the first of a new stream, or
    /// one for a change on an open stream) stops after its `checkpoint` or
    /// `checkpoint_diff` line and `lines` more (its data, then its
    /// `checkpoint_complete`): the stream then sends nothing, not even
    /// keep-alives, until the service stops, as a service stuck in the
    /// middle of a checkpoint. With `lines` the number of its data lines,
    /// only `checkpoint_complete` is withheld (more holds nothing). One
    /// stream takes it; its client is held mid-download for as long as a
    /// test needs.
    pub fn hold_next_checkpoint_after(&self, lines: usize) {
        self.shared.lock().hold_next_checkpoint = Some(lines);
    }

    /// Writes a row on the service (as another client's upload would) and
    /// notifies open streams.
    pub fn put_row(&self, row_type: &str, id: &str, data: Value) {
        let mut state = self.shared.lock();
        let entry = json!({"op": "PUT", "type": row_type, "id": id, "data": data});
        let _ = state.apply_crud(&entry);
        self.shared.bump(state);
    }

    /// The service's current data, as a client would hold it after a full
    /// sync: table → id → row. Only for explicit buckets and uploads (rows
    /// of a generated stream are not listed).
    pub fn uploaded_rows(&self) -> HashMap<(String, String), Option<Value>> {
        self.shared
            .lock()
            .rows
            .iter()
            .map(|(k, (_, data))| (k.clone(), data.as_deref().and_then(|d| serde_json::from_str(d).ok())))
            .collect()
    }

    /// What the service did so far.
    pub fn stats(&self) -> Stats {
        self.shared.lock().stats.clone()
    }

    /// The op id of the newest op.
    pub fn last_op_id(&self) -> i64 {
        self.shared.lock().last_op_id()
    }

    /// Stops accepting requests and ends open streams.
    pub fn shutdown(mut self) {
        self.stop();
    }

    pub(crate) fn stop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.shared.changed.notify_all();
        self.server.unblock();
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

impl Drop for TestService {
    fn drop(&mut self) {
        self.stop();
    }
}


#[cfg(test)]
mod http_tests {
    use super::*;

    fn get(url: &str, token: Option<&str>) -> (u16, String) {
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let mut request = agent.get(url);
        if let Some(token) = token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let mut response = request.call().unwrap();
        (response.status().as_u16(), response.body_mut().read_to_string().unwrap())
    }

    #[test]
    fn endpoints_check_tokens_and_answer_in_the_service_shapes() {
        let service = TestService::start(ServiceOptions::new(Dataset::Generated(StreamSpec::benchmark(10)))).unwrap();
        assert!(service.addr().ip().is_loopback());
        let url = service.url();
        assert_eq!(get(&format!("{url}/probes/liveness"), None).0, 200);
        let (status, body) = get(&format!("{url}/write-checkpoint2.json?client_id=c1"), None);
        assert_eq!(status, 401);
        assert_eq!(
            serde_json::from_str::<Value>(&body).unwrap(),
            json!({"error": {"name": "AuthorizationError", "code": "PSYNC_S2106", "status": 401, "description": "Authentication required"}})
        );
        let (status, body) = get(&format!("{url}/write-checkpoint2.json?client_id=c1"), Some("dev"));
        assert_eq!(status, 200);
        assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), json!({"data": {"write_checkpoint": "1"}}));
        let (_, token) = get(&format!("{url}/dev/token?ttl=60"), None);
        assert_eq!(get(&format!("{url}/write-checkpoint2.json?client_id=c1"), Some(&token)).0, 200);
        service.expire_token(&token);
        assert_eq!(get(&format!("{url}/write-checkpoint2.json?client_id=c1"), Some(&token)).0, 401);
        let (status, body) = get(&format!("{url}/nope"), Some("dev"));
        assert_eq!(status, 404);
        assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["error"]["code"], "PSYNC_S2002");
        // client_id is optional, as in the service; given twice it is an
        // array, which is not a string.
        assert_eq!(get(&format!("{url}/write-checkpoint2.json"), Some("dev")).0, 200);
        let (status, body) = get(&format!("{url}/write-checkpoint2.json?client_id=a&client_id=b"), Some("dev"));
        assert_eq!((status, error_code(&body)), (400, "PSYNC_S2001".to_owned()));
        let stats = service.stats();
        assert_eq!((stats.unauthorized, stats.write_checkpoints, stats.invalid_requests), (2, 3, 1));
    }

    fn error_code(body: &str) -> String {
        serde_json::from_str::<Value>(body).unwrap()["error"]["code"].as_str().unwrap_or_default().to_owned()
    }

    /// POST /sync/stream with a JSON body; the status and, unless 200, the
    /// body (a stream is not read).
    fn post_stream(service: &TestService, authorization: Option<&str>, body: &Value) -> (u16, String) {
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let mut request = agent.post(format!("{}/sync/stream", service.url())).header("Content-Type", "application/json");
        if let Some(value) = authorization {
            request = request.header("Authorization", value);
        }
        let mut response = request.send(body.to_string()).unwrap();
        let status = response.status().as_u16();
        (status, if status == 200 { String::new() } else { response.body_mut().read_to_string().unwrap() })
    }

    #[test]
    fn a_stream_request_with_null_parameters_is_refused_before_its_token_is_checked() {
        let service = TestService::start(ServiceOptions::new(Dataset::Generated(StreamSpec::benchmark(10)))).unwrap();
        // The body `oplite sync` sent before it sent {}: the service's answer.
        let request = json!({"buckets": [], "include_checksum": true, "raw_data": true, "binary_data": true,
            "client_id": "c1", "parameters": null, "streams": {"include_defaults": true, "subscriptions": []}});
        let expected = json!({"error": {"name": "ValidationError", "code": "PSYNC_S2001", "status": 400,
            "description": "Validation failed", "details": "[\"/parameters: type must be object\"]"}});
        for authorization in [Some("Token dev"), None] {
            let (status, body) = post_stream(&service, authorization, &request);
            assert_eq!(status, 400);
            assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), expected);
        }
        let mut fixed = request.clone();
        fixed["parameters"] = json!({});
        assert_eq!(post_stream(&service, Some("Token dev"), &fixed).0, 200);
        let stats = service.stats();
        assert_eq!((stats.invalid_requests, stats.unauthorized), (2, 0));
    }

    #[test]
    fn stream_requests_with_bad_tokens_get_the_service_codes() {
        let service = TestService::start(ServiceOptions::new(Dataset::Generated(StreamSpec::benchmark(10)))).unwrap();
        let now = auth::now_secs();
        let claims = json!({"sub": "u", "aud": auth::AUDIENCE, "iat": now, "exp": now + 600});
        let with = |key: &str, value: Value| {
            let mut c = claims.clone();
            c[key] = value;
            format!("Bearer {}", service.sign_token(&c))
        };
        let issued = service.issue_token(Duration::from_secs(600));
        let (head, _) = issued.rsplit_once('.').unwrap();
        let revoked = service.issue_token(Duration::from_secs(600));
        service.expire_token(&revoked);
        let cases = [
            (None, "PSYNC_S2106"),
            (Some("Basic dev".to_owned()), "PSYNC_S2106"),
            (Some("Token not-a-jwt".to_owned()), "PSYNC_S2101"),
            (Some(format!("Token {head}.c2lnbmF0dXJl")), "PSYNC_S2101"),
            (Some(with("exp", json!(now - 120))), "PSYNC_S2103"),
            (Some(format!("Token {revoked}")), "PSYNC_S2103"),
            (Some(with("aud", json!("another-app"))), "PSYNC_S2105"),
            (Some(with("exp", json!(now + 2 * 86_400))), "PSYNC_S2104"),
        ];
        let body = json!({"parameters": {}});
        for (authorization, code) in &cases {
            let (status, text) = post_stream(&service, authorization.as_deref(), &body);
            let error = &serde_json::from_str::<Value>(&text).unwrap()["error"];
            assert_eq!((status, error["code"].as_str().unwrap()), (401, *code), "{authorization:?}: {text}");
            assert_eq!(error["status"], 401);
            assert!(error["description"].as_str().is_some_and(|d| !d.is_empty()));
        }
        assert_eq!(post_stream(&service, Some(&format!("Token {issued}")), &body).0, 200);
        assert_eq!(service.stats().unauthorized, cases.len() as u64);
    }

    #[test]
    fn a_stream_sends_priorities_in_order_with_partial_completions() {
        use std::io::BufRead;
        let lines = oplite_test_data::recorded::todo_list_lines();
        let service = TestService::start(ServiceOptions::new(Dataset::Buckets(
            oplite_test_data::recorded::buckets_from_lines(&lines),
        )))
        .unwrap();
        let response = ureq::post(format!("{}/sync/stream", service.url()))
            .header("Authorization", "Token dev")
            .header("Content-Type", "application/json")
            .send(r#"{"buckets":[{"name":"user_todos","after":"5"}],"client_id":"c1"}"#)
            .unwrap();
        assert_eq!(response.headers().get("content-type").unwrap(), "application/x-ndjson");
        let mut reader = std::io::BufReader::new(response.into_body().into_reader());
        let mut kinds = Vec::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let value: Value = serde_json::from_str(&line).unwrap();
            let (kind, body) = value.as_object().unwrap().iter().next().unwrap();
            kinds.push(match kind.as_str() {
                "data" => format!("data {} after {}", body["bucket"].as_str().unwrap(), body["after"].as_str().unwrap()),
                "partial_checkpoint_complete" => format!("partial {}", body["priority"]),
                other => other.to_owned(),
            });
            if kind == "checkpoint_complete" {
                break;
            }
        }
        assert_eq!(
            kinds,
            [
                "token_expires_in",
                "checkpoint",
                "data shared after 0",
                "partial 1",
                "data user_lists after 0",
                "data user_todos after 5",
                "checkpoint_complete"
            ]
        );
    }

    #[test]
    fn an_upload_batch_with_a_bad_entry_changes_nothing() {
        let service = TestService::start(ServiceOptions::new(Dataset::Buckets(Vec::new()))).unwrap();
        let post = |body: Value| {
            let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
            agent.post(format!("{}/upload", service.url())).header("Authorization", "Token dev").send(body.to_string()).unwrap().status().as_u16()
        };
        let good = json!({"op": "PUT", "type": "todos", "id": "a", "data": {"x": 1}});
        assert_eq!(post(json!({"batch": [good, {"op": "PUT", "type": "todos"}]})), 400);
        assert!(service.uploaded_rows().is_empty());
        assert_eq!(post(json!({"batch": [good]})), 200);
        assert_eq!(service.uploaded_rows().len(), 1);
        assert_eq!(service.stats().uploaded_ops, 1);
    }

    /// POST /sync/checkpoint-request: status and body.
    fn post_checkpoint_request(service: &TestService, authorization: Option<&str>, body: &str) -> (u16, Value) {
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let mut request =
            agent.post(format!("{}/sync/checkpoint-request", service.url())).header("Content-Type", "application/json");
        if let Some(value) = authorization {
            request = request.header("Authorization", value);
        }
        let mut response = request.send(body.to_owned()).unwrap();
        let status = response.status().as_u16();
        (status, serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap())
    }

    #[test]
    fn checkpoint_requests_answer_the_larger_id_after_validation_and_the_token() {
        let service = TestService::start(ServiceOptions::new(Dataset::Buckets(Vec::new()))).unwrap();
        let token = Some("Token dev");
        let request = |id: &str| format!(r#"{{"client_id": "c1", "checkpoint_request_id": {id}}}"#);
        let answer = |id: &str| json!({"data": {"write_checkpoint": id, "checkpoint_request_id": id}});
        // Validated before the token is looked at.
        let (status, body) = post_checkpoint_request(&service, None, r#"{"client_id": "c1", "checkpoint_request_id": "0"}"#);
        assert_eq!((status, body["error"]["code"].as_str().unwrap()), (400, "PSYNC_S2001"));
        assert_eq!(body["error"]["details"], "[\"Expected checkpoint_request_id between 1 and 9223372036854775807\"]");
        let (status, body) = post_checkpoint_request(&service, None, &request("\"1\""));
        assert_eq!((status, body["error"]["code"].as_str().unwrap()), (401, "PSYNC_S2106"));
        // The answer is max(id, record), as a string, in the service's
        // {"data": ...} envelope.
        assert_eq!(post_checkpoint_request(&service, token, &request("\"1\"")), (200, answer("1")));
        assert_eq!(post_checkpoint_request(&service, token, &request("7")), (200, answer("7")));
        assert_eq!(post_checkpoint_request(&service, token, &request("\"3\"")), (200, answer("7")));
        // A legacy write checkpoint counts on from the record.
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let mut response = agent.get(format!("{}/write-checkpoint2.json?client_id=c1", service.url())).header("Authorization", "Token dev").call().unwrap();
        assert_eq!(serde_json::from_str::<Value>(&response.body_mut().read_to_string().unwrap()).unwrap(), json!({"data": {"write_checkpoint": "8"}}));
        // GET is not the route.
        assert_eq!(agent.get(format!("{}/sync/checkpoint-request", service.url())).call().unwrap().status().as_u16(), 404);
        let stats = service.stats();
        assert_eq!((stats.checkpoint_requests, stats.write_checkpoints, stats.invalid_requests, stats.unauthorized), (3, 1, 1, 1));
    }

    /// A sync stream of client `c1` with no buckets, to read line by line.
    fn open_stream(service: &TestService) -> std::io::BufReader<impl std::io::Read> {
        let response = ureq::post(format!("{}/sync/stream", service.url()))
            .header("Authorization", "Token dev")
            .header("Content-Type", "application/json")
            .send(r#"{"buckets":[],"client_id":"c1","parameters":{}}"#)
            .unwrap();
        std::io::BufReader::new(response.into_body().into_reader())
    }

    #[test]
    fn a_stream_reports_the_requested_id_as_its_write_checkpoint() {
        use std::io::BufRead;
        let mut options = ServiceOptions::new(Dataset::Buckets(Vec::new()));
        options.keepalive = Duration::from_millis(200);
        let service = TestService::start(options).unwrap();
        let post = |id: &str| post_checkpoint_request(&service, Some("Token dev"), &format!(r#"{{"client_id": "c1", "checkpoint_request_id": "{id}"}}"#)).1;
        // The connection's probe: 1 when the client has nothing.
        assert_eq!(post("1")["data"]["write_checkpoint"], "1");
        let mut reader = open_stream(&service);
        let mut next = || {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            serde_json::from_str::<Value>(&line).unwrap()
        };
        // The kind of line and its write_checkpoint, skipping keep-alives.
        let mut next_checkpoint = || loop {
            let line = next();
            let (kind, body) = line.as_object().unwrap().iter().next().map(|(k, v)| (k.clone(), v.clone())).unwrap();
            if kind != "token_expires_in" {
                return (kind, body["write_checkpoint"].clone(), body["last_op_id"].clone());
            }
        };
        assert_eq!(next_checkpoint(), ("checkpoint".into(), json!("1"), json!("0")));
        assert_eq!(next_checkpoint().0, "checkpoint_complete");
        // An upload's request: a new checkpoint carries it.
        post("2");
        assert_eq!(next_checkpoint(), ("checkpoint_diff".into(), json!("2"), json!("0")));
        assert_eq!(next_checkpoint().0, "checkpoint_complete");
        // A stale or repeated id moves nothing: no checkpoint for it (only
        // keep-alives), and the next one that moves is the next checkpoint.
        post("2");
        post("1");
        std::thread::sleep(Duration::from_millis(500));
        post("9");
        assert_eq!(next_checkpoint(), ("checkpoint_diff".into(), json!("9"), json!("0")));
        // Another client's request is not this stream's.
        post_checkpoint_request(&service, Some("Token dev"), r#"{"client_id": "c2", "checkpoint_request_id": "50"}"#);
        assert_eq!(next_checkpoint().0, "checkpoint_complete");
        std::thread::sleep(Duration::from_millis(500));
        post("10");
        assert_eq!(next_checkpoint(), ("checkpoint_diff".into(), json!("10"), json!("0")));
    }

    #[test]
    fn a_bad_checkpoint_comes_before_the_next_change_or_at_once() {
        use std::io::BufRead;
        let mut options = ServiceOptions::new(Dataset::Buckets(Vec::new()));
        options.keepalive = Duration::from_millis(200);
        let service = TestService::start(options).unwrap();
        let post = |id: &str| post_checkpoint_request(&service, Some("Token dev"), &format!(r#"{{"client_id": "c1", "checkpoint_request_id": "{id}"}}"#));
        let mut reader = open_stream(&service);
        // The next line other than a keep-alive: its kind and last_op_id.
        let mut next = || loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let line: Value = serde_json::from_str(&line).unwrap();
            let (kind, body) = line.as_object().unwrap().iter().next().map(|(k, v)| (k.clone(), v.clone())).unwrap();
            if kind != "token_expires_in" {
                return (kind, body["last_op_id"].clone());
            }
        };
        assert_eq!(next().0, "checkpoint");
        assert_eq!(next().0, "checkpoint_complete");
        // At once: the bad line, and nothing else changed.
        service.bad_next_checkpoint(true);
        assert_eq!(next(), ("checkpoint".into(), json!("invalid line")));
        // Planned: nothing until a change, then the bad line and the change.
        service.bad_next_checkpoint(false);
        std::thread::sleep(Duration::from_millis(300));
        post("5");
        assert_eq!(next(), ("checkpoint".into(), json!("invalid line")));
        assert_eq!(next(), ("checkpoint_diff".into(), json!("0")));
        assert_eq!(service.shared.lock().bad_checkpoints, 0);
    }

    #[test]
    fn a_held_checkpoint_stops_part_way_and_the_stream_stays_silent() {
        use std::io::BufRead;
        let mut options = ServiceOptions::new(Dataset::Buckets(Vec::new()));
        options.keepalive = Duration::from_millis(100);
        let service = TestService::start(options).unwrap();
        let response = ureq::Agent::config_builder()
            .timeout_per_read(Some(Duration::from_millis(1500)))
            .build()
            .new_agent()
            .post(format!("{}/sync/stream", service.url()))
            .header("Authorization", "Token dev")
            .header("Content-Type", "application/json")
            .send(r#"{"buckets":[],"client_id":"c1","parameters":{}}"#)
            .unwrap();
        let mut reader = std::io::BufReader::new(response.into_body().into_reader());
        let mut next = || {
            let mut line = String::new();
            reader.read_line(&mut line).map(|_| {
                let line: Value = serde_json::from_str(&line).unwrap();
                line.as_object().unwrap().keys().next().unwrap().clone()
            })
        };
        assert_eq!(next().unwrap(), "token_expires_in");
        assert_eq!(next().unwrap(), "checkpoint");
        assert_eq!(next().unwrap(), "checkpoint_complete");
        // Held after the diff and its one data line: checkpoint_complete
        // and the keep-alives (every 100 ms) are withheld.
        service.hold_next_checkpoint_after(1);
        service.put_row("todos", "t1", json!({"a": 1}));
        let mut kinds = Vec::new();
        let silent = loop {
            match next() {
                Ok(kind) => kinds.push(kind),
                Err(e) => break e,
            }
            assert!(kinds.len() < 10, "not held: {kinds:?}");
        };
        assert!(silent.to_string().contains("timeout"), "the read timed out: {silent}");
        kinds.retain(|k| k != "token_expires_in");
        assert_eq!(kinds, ["checkpoint_diff", "data"]);
        assert!(service.shared.lock().hold_next_checkpoint.is_none(), "one stream takes the hold");
    }

    #[test]
    fn binding_elsewhere_than_loopback_is_refused() {
        let mut options = ServiceOptions::new(Dataset::Buckets(Vec::new()));
        options.bind = SocketAddr::from(([0, 0, 0, 0], 0));
        assert!(TestService::start(options).is_err());
    }
}
