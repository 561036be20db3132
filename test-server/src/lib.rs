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
//! | `GET /write-checkpoint2.json?client_id=C` | `{"data":{"write_checkpoint":"N"}}`; the next checkpoint sent to client C carries `write_checkpoint: N` |
//! | `POST /upload` (body `{"batch": [ps_crud entries]}`) | applies the batch to the service's buckets; stands in for the app's backend, which the PowerSync service does not include |
//! | `GET /dev/token?ttl=SECONDS` | a new token (plain text), valid for `ttl` seconds (default 3600) |
//! | `GET /probes/liveness` | `200 ok` |
//! | `POST /dev/drop-next-stream`, `POST /dev/expire-token`, `GET /dev/log` | faults and a log of uploads and stream requests, for tests in another process (`dev_control`) |
//!
//! Every request but `/dev/token`, `/probes/liveness` and the `/dev/` endpoints needs `Authorization: Token T` or
//! `Authorization: Bearer T` with a token the service knows and that has not
//! expired; otherwise it is answered with 401.
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
//! requests with it get 401. [`TestService::corrupt_next_stream_after`]
//! slips an invalid line into the next stream.

use std::collections::{HashMap, VecDeque};
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

mod dev_control;
pub mod two_tables;

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
    /// Tokens accepted forever (default: `dev`).
    pub static_tokens: Vec<String>,
    /// Time between keep-alive lines on an idle stream.
    pub keepalive: Duration,
    /// Ops per data line for explicit buckets and uploads (a generated
    /// stream uses its own `ops_per_line`).
    pub ops_per_line: usize,
    /// The address to bind (default 127.0.0.1:0, a free port).
    pub bind: SocketAddr,
}

impl ServiceOptions {
    /// Options serving `dataset`, with the defaults.
    pub fn new(dataset: Dataset) -> Self {
        ServiceOptions {
            dataset,
            static_tokens: vec!["dev".to_owned()],
            keepalive: Duration::from_secs(20),
            ops_per_line: 1000,
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
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
    /// Upload batches applied.
    pub upload_batches: u64,
    /// Upload entries applied.
    pub uploaded_ops: u64,
    /// Write checkpoints issued.
    pub write_checkpoints: u64,
    /// Lines written on all streams.
    pub lines_sent: u64,
    /// Bytes of lines written on all streams.
    pub bytes_sent: u64,
}

struct Bucket {
    name: String,
    priority: i32,
    /// The generated bucket this one starts with.
    generated: Option<u64>,
    /// Checksum and count of the generated part.
    generated_checksum: u32,
    generated_count: u64,
    /// Ops after the generated part (or all ops of an explicit bucket),
    /// since the last CLEAR.
    ops: Vec<ServerOp>,
}

impl Bucket {
    fn entry(&self) -> BucketEntry {
        let checksum = self.ops.iter().fold(self.generated_checksum, |s, op| s.wrapping_add(op.checksum));
        BucketEntry {
            bucket: self.name.clone(),
            checksum,
            priority: self.priority,
            count: self.generated_count + self.ops.len() as u64,
        }
    }

    fn last_op_id(&self, spec: Option<&StreamSpec>) -> i64 {
        match self.ops.last() {
            Some(op) => op.op_id,
            None => match (self.generated, spec) {
                (Some(b), Some(spec)) if spec.count(b) > 0 => {
                    spec.op_ids(b, 0).last().map(|n| n as i64).unwrap_or(0)
                }
                _ => 0,
            },
        }
    }
}

struct State {
    spec: Option<StreamSpec>,
    buckets: Vec<Bucket>,
    next_op_id: i64,
    /// Rows written by explicit or uploaded ops: bucket index and current
    /// data (None after a REMOVE).
    rows: HashMap<(String, String), (usize, Option<String>)>,
    write_checkpoints: HashMap<String, i64>,
    last_write_checkpoint: i64,
    /// Token → expiry (None: never).
    tokens: HashMap<String, Option<Instant>>,
    next_token: u64,
    /// Bumped on every change streams must see.
    version: u64,
    fault_plans: VecDeque<Fault>,
    stats: Stats,
    ops_per_line: usize,
    /// Upload request bodies as received (`GET /dev/log`).
    upload_log: Vec<Value>,
    /// The bucket positions of each sync stream request (`GET /dev/log`).
    stream_log: Vec<Value>,
}

impl State {
    fn new(options: &ServiceOptions) -> Self {
        let mut state = State {
            spec: None,
            buckets: Vec::new(),
            next_op_id: 1,
            rows: HashMap::new(),
            write_checkpoints: HashMap::new(),
            last_write_checkpoint: 0,
            tokens: options.static_tokens.iter().map(|t| (t.clone(), None)).collect(),
            next_token: 1,
            version: 0,
            fault_plans: VecDeque::new(),
            stats: Stats::default(),
            ops_per_line: options.ops_per_line.max(1),
            upload_log: Vec::new(),
            stream_log: Vec::new(),
        };
        match &options.dataset {
            Dataset::Generated(spec) => {
                for entry in spec.entries() {
                    let b = spec.bucket_index(&entry.bucket).expect("generated bucket name");
                    state.buckets.push(Bucket {
                        name: entry.bucket.clone(),
                        priority: entry.priority,
                        generated: Some(b),
                        generated_checksum: entry.checksum,
                        generated_count: entry.count,
                        ops: Vec::new(),
                    });
                }
                state.next_op_id = spec.ops as i64 + 1;
                state.ops_per_line = spec.ops_per_line.max(1);
                state.spec = Some(spec.clone());
            }
            Dataset::Buckets(buckets) => {
                for (i, bucket) in buckets.iter().enumerate() {
                    for op in &bucket.ops {
                        state.next_op_id = state.next_op_id.max(op.op_id + 1);
                        if let (Some(t), Some(id)) = (&op.object_type, &op.object_id) {
                            let data = if op.op == "PUT" { op.data.clone() } else { None };
                            state.rows.insert((t.clone(), id.clone()), (i, data));
                        }
                    }
                    state.buckets.push(Bucket {
                        name: bucket.name.clone(),
                        priority: bucket.priority,
                        generated: None,
                        generated_checksum: 0,
                        generated_count: 0,
                        ops: bucket.ops.clone(),
                    });
                }
            }
        }
        state
    }

    fn last_op_id(&self) -> i64 {
        self.next_op_id - 1
    }

    fn entries(&self) -> Vec<BucketEntry> {
        self.buckets.iter().map(Bucket::entry).collect()
    }

    /// The token's state: Ok(seconds left, None for never) or Err(()) when
    /// unknown or expired.
    fn token_left(&self, token: &str) -> Result<Option<i64>, ()> {
        match self.tokens.get(token) {
            None => Err(()),
            Some(None) => Ok(None),
            Some(Some(expiry)) => {
                let now = Instant::now();
                if *expiry <= now {
                    Err(())
                } else {
                    Ok(Some((*expiry - now).as_secs() as i64))
                }
            }
        }
    }

    fn bucket_index(&mut self, name: &str) -> usize {
        if let Some(i) = self.buckets.iter().position(|b| b.name == name) {
            return i;
        }
        self.buckets.push(Bucket {
            name: name.to_owned(),
            priority: 3,
            generated: None,
            generated_checksum: 0,
            generated_count: 0,
            ops: Vec::new(),
        });
        self.buckets.len() - 1
    }

    /// Where a row lives and its current data.
    fn locate(&self, row_type: &str, id: &str) -> Option<(usize, Option<String>)> {
        if let Some((b, data)) = self.rows.get(&(row_type.to_owned(), id.to_owned())) {
            return Some((*b, data.clone()));
        }
        let spec = self.spec.as_ref()?;
        let (b, newest) = spec.route(row_type, id)?;
        let index = self.buckets.iter().position(|bucket| bucket.generated == Some(b))?;
        Some((index, Some(spec.row_data(newest))))
    }

    fn push_op(&mut self, bucket: usize, op: &'static str, row_type: &str, id: &str, data: Option<String>) {
        let op_id = self.next_op_id;
        self.next_op_id += 1;
        let checksum = (op_id as u64).wrapping_mul(0x9E37_79B9) as u32;
        self.buckets[bucket].ops.push(ServerOp {
            op_id,
            op,
            object_type: Some(row_type.to_owned()),
            object_id: Some(id.to_owned()),
            subkey: None,
            checksum,
            data: data.clone(),
        });
        self.rows.insert((row_type.to_owned(), id.to_owned()), (bucket, data));
    }

    /// Applies one ps_crud entry (`{"op", "type", "id", "data"?}`).
    fn apply_crud(&mut self, entry: &Value) -> Result<(), String> {
        let op = entry["op"].as_str().ok_or("crud entry without op")?;
        let row_type = entry["type"].as_str().ok_or("crud entry without type")?;
        let id = entry["id"].as_str().ok_or("crud entry without id")?;
        let located = self.locate(row_type, id);
        let fields = |v: &Value| v.as_object().cloned().unwrap_or_default();
        match op {
            "PUT" => {
                let bucket = match located {
                    Some((b, _)) => b,
                    None => self.bucket_index(UPLOADS_BUCKET),
                };
                let data = Value::Object(fields(&entry["data"])).to_string();
                self.push_op(bucket, "PUT", row_type, id, Some(data));
            }
            "PATCH" => {
                let (bucket, current) = match located {
                    Some((b, current)) => (b, current),
                    None => (self.bucket_index(UPLOADS_BUCKET), None),
                };
                let mut row = current
                    .and_then(|c| serde_json::from_str::<Value>(&c).ok())
                    .map(|v| fields(&v))
                    .unwrap_or_default();
                for (k, v) in fields(&entry["data"]) {
                    row.insert(k, v);
                }
                self.push_op(bucket, "PUT", row_type, id, Some(Value::Object(row).to_string()));
            }
            "DELETE" => {
                if let Some((bucket, Some(_))) = located {
                    self.push_op(bucket, "REMOVE", row_type, id, None);
                }
            }
            other => return Err(format!("unknown crud op {other:?}")),
        }
        Ok(())
    }
}

/// Checks the shape of a ps_crud entry before anything is applied.
fn check_crud(entry: &Value) -> Result<(), String> {
    match entry["op"].as_str() {
        Some("PUT" | "PATCH" | "DELETE") => {}
        Some(other) => return Err(format!("unknown crud op {other:?}")),
        None => return Err("crud entry without op".into()),
    }
    if entry["type"].as_str().is_none() {
        return Err("crud entry without type".into());
    }
    if entry["id"].as_str().is_none() {
        return Err("crud entry without id".into());
    }
    Ok(())
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    stopping: AtomicBool,
    keepalive: Duration,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn bump(&self, mut state: MutexGuard<'_, State>) {
        state.version += 1;
        drop(state);
        self.changed.notify_all();
    }
}

/// A running loopback service. Dropping it shuts it down.
pub struct TestService {
    shared: Arc<Shared>,
    server: Arc<tiny_http::Server>,
    addr: SocketAddr,
    accept: Option<JoinHandle<()>>,
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

    /// A new token valid for `ttl`.
    pub fn issue_token(&self, ttl: Duration) -> String {
        issue_token(&self.shared, ttl)
    }

    /// Makes `token` invalid now; its open streams send
    /// `{"token_expires_in": 0}` and close.
    pub fn expire_token(&self, token: &str) {
        let mut state = self.shared.lock();
        state.tokens.insert(token.to_owned(), Some(Instant::now()));
        self.shared.bump(state);
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

    fn stop(&mut self) {
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

fn issue_token(shared: &Shared, ttl: Duration) -> String {
    let mut state = shared.lock();
    let n = state.next_token;
    state.next_token += 1;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    let token = format!("tok{n}-{nanos:08x}");
    state.tokens.insert(token.clone(), Some(Instant::now() + ttl));
    token
}

fn header<'a>(request: &'a tiny_http::Request, name: &str) -> Option<&'a str> {
    request.headers().iter().find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name)).map(|h| h.value.as_str())
}

fn bearer(request: &tiny_http::Request) -> Option<String> {
    let value = header(request, "Authorization")?.trim();
    let token = value.strip_prefix("Token ").or_else(|| value.strip_prefix("Bearer "))?;
    Some(token.trim().to_owned())
}

fn query_param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                match u8::from_str_radix(&s[i + 1..i + 3], 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn json_response(status: u16, body: &Value) -> tiny_http::Response<io::Cursor<Vec<u8>>> {
    tiny_http::Response::from_data(body.to_string().into_bytes())
        .with_status_code(status)
        .with_header(tiny_http::Header::from_bytes("Content-Type", "application/json").expect("static header"))
}

fn error_body(status: u16, code: &str, description: &str) -> Value {
    json!({"error": {"code": code, "status": status, "description": description}})
}

fn handle(shared: &Shared, mut request: tiny_http::Request) {
    let url = request.url().to_owned();
    let path = url.split('?').next().unwrap_or("").to_owned();
    let method = request.method().clone();

    // Unauthenticated helpers.
    match (&method, path.as_str()) {
        (tiny_http::Method::Get, "/probes/liveness") => {
            let _ = request.respond(tiny_http::Response::from_string("ok"));
            return;
        }
        (tiny_http::Method::Get, "/dev/token") => {
            let ttl = query_param(&url, "ttl").and_then(|t| t.parse().ok()).unwrap_or(3600);
            let token = issue_token(shared, Duration::from_secs(ttl));
            let _ = request.respond(tiny_http::Response::from_string(token));
            return;
        }
        (_, p) if p.starts_with("/dev/") => match dev_control::handle(shared, request) {
            Some(unhandled) => request = unhandled,
            None => return,
        },
        _ => {}
    }

    let token = bearer(&request);
    let left = {
        let state = shared.lock();
        token.as_deref().map(|t| state.token_left(t)).unwrap_or(Err(()))
    };
    let Ok(left) = left else {
        shared.lock().stats.unauthorized += 1;
        let _ = request.respond(json_response(401, &error_body(401, "PSYNC_S2101", "Authorization failed: token missing, unknown or expired")));
        return;
    };
    let token = token.unwrap_or_default();

    let mut body = String::new();
    if request.as_reader().read_to_string(&mut body).is_err() {
        let _ = request.respond(json_response(400, &error_body(400, "PSYNC_R0001", "unreadable body")));
        return;
    }

    match (&method, path.as_str()) {
        (tiny_http::Method::Post, "/sync/stream") => {
            let parsed: Value = match serde_json::from_str(&body) {
                Ok(v) => v,
                Err(e) => {
                    let _ = request.respond(json_response(400, &error_body(400, "PSYNC_R0001", &format!("request body: {e}"))));
                    return;
                }
            };
            let encoding = Encoding::from_accept(header(&request, "Accept"));
            let writer = request.into_writer();
            let _ = stream(shared, writer, &parsed, encoding, &token, left);
        }
        (tiny_http::Method::Get, "/write-checkpoint2.json") => {
            let Some(client_id) = query_param(&url, "client_id") else {
                let _ = request.respond(json_response(400, &error_body(400, "PSYNC_R0001", "client_id is required")));
                return;
            };
            let mut state = shared.lock();
            state.last_write_checkpoint += 1;
            let wc = state.last_write_checkpoint;
            state.write_checkpoints.insert(client_id, wc);
            state.stats.write_checkpoints += 1;
            shared.bump(state);
            let _ = request.respond(json_response(200, &json!({"data": {"write_checkpoint": wc.to_string()}})));
        }
        (tiny_http::Method::Post, "/upload") => {
            let parsed: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let Some(batch) = parsed["batch"].as_array() else {
                let _ = request.respond(json_response(400, &error_body(400, "PSYNC_R0001", "expected {\"batch\": [...]}")));
                return;
            };
            // All or nothing: a batch with a bad entry changes nothing, so
            // the client's retry of the whole batch cannot apply twice.
            if let Some(bad) = batch.iter().find_map(|entry| check_crud(entry).err()) {
                let _ = request.respond(json_response(400, &error_body(400, "PSYNC_R0001", &bad)));
                return;
            }
            let mut state = shared.lock();
            let mut applied = 0;
            for entry in batch {
                state.apply_crud(entry).expect("checked above");
                applied += 1;
            }
            state.stats.upload_batches += 1;
            state.stats.uploaded_ops += applied;
            state.upload_log.push(parsed.clone());
            shared.bump(state);
            let _ = request.respond(json_response(200, &json!({"applied": applied})));
        }
        _ => {
            let _ = request.respond(json_response(404, &error_body(404, "PSYNC_R0404", "no such endpoint")));
        }
    }
}

/// Writes HTTP/1.1 chunks, one per line, flushing each so keep-alive lines
/// reach the client at once.
struct ChunkedLines {
    out: Box<dyn Write + Send>,
    encoding: Encoding,
    lines: u64,
    bytes: u64,
    /// The planned fault of this stream.
    fault: Option<Fault>,
}

/// A fault planned for a stream.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Drop the connection after this many lines.
    Drop(usize),
    /// Send an invalid line after this many lines.
    Garbage(usize),
}

/// Why a stream ended (other than the client going away).
enum StreamEnd {
    /// The planned fault: the connection is dropped without the final chunk.
    Dropped,
    /// The service is shutting down.
    Stopped,
    /// The token expired; `{"token_expires_in": 0}` was the last line.
    TokenExpired,
}

impl ChunkedLines {
    fn send(&mut self, line: &[u8]) -> io::Result<Result<(), StreamEnd>> {
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

    fn write_chunk(&mut self, line: &[u8]) -> io::Result<()> {
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

    fn send_value(&mut self, line: &Value) -> io::Result<Result<(), StreamEnd>> {
        let bytes = lines::encode(self.encoding, line);
        self.send(&bytes)
    }

    fn finish(&mut self) -> io::Result<()> {
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

fn stream(
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
    let mut out = ChunkedLines { out: raw, encoding, lines: 0, bytes: 0, fault };
    let result = stream_lines(shared, &mut out, request, token, token_left);
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
    result.map(|_| ())
}

/// Sends the data of a checkpoint, highest priority first, as the service
/// does: after the buckets of each priority but the last comes
/// `partial_checkpoint_complete` for it, and `checkpoint_complete` ends.
fn send_by_priority(
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

fn stream_lines(
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

    // The first checkpoint and its data: a snapshot of the state now.
    let (checkpoint, sources, mut sent, mut sent_through, mut sent_wc, mut version, ops_per_line) = {
        let state = shared.lock();
        let entries = state.entries();
        let wc = state.write_checkpoints.get(&client_id).copied();
        let checkpoint = lines::checkpoint(state.last_op_id(), wc, &entries);
        let mut sources: Vec<(String, i32, i64, OpSource)> = Vec::new();
        let mut sent_through = HashMap::new();
        for bucket in &state.buckets {
            let from = after.get(&bucket.name).copied().unwrap_or(0).max(0);
            let generated: OpSource = match (bucket.generated, &state.spec) {
                (Some(b), Some(spec)) => spec.ops_after(b, from as u64),
                _ => Box::new(std::iter::empty()),
            };
            let appended: Vec<ServerOp> = bucket.ops.iter().filter(|op| op.op_id > from).cloned().collect();
            sources.push((bucket.name.clone(), bucket.priority, from, Box::new(generated.chain(appended))));
            sent_through.insert(bucket.name.clone(), bucket.last_op_id(state.spec.as_ref()).max(from));
        }
        let sent: HashMap<String, BucketEntry> = entries.into_iter().map(|e| (e.bucket.clone(), e)).collect();
        (checkpoint, sources, sent, sent_through, wc, state.version, state.ops_per_line)
    };
    let last_op_id = checkpoint["checkpoint"]["last_op_id"].as_str().unwrap_or("0").parse().unwrap_or(0);
    send!(out.send_value(&checkpoint));
    if let Err(end) = send_by_priority(out, sources, ops_per_line, last_op_id)? {
        return Ok(end);
    }

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
            let wait = match state.tokens.get(token) {
                Some(Some(expiry)) => wait.min(expiry.saturating_duration_since(Instant::now()) + Duration::from_millis(5)),
                _ => wait,
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
        // What changed since the last checkpoint sent on this stream.
        let entries = state.entries();
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
        send!(out.send_value(&lines::checkpoint_diff(last_op_id, wc, &updated, &removed)));
        if let Err(end) = send_by_priority(out, sources, ops_per_line, last_op_id)? {
            return Ok(end);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters_are_decoded() {
        assert_eq!(query_param("/x?client_id=a%2Db&y=1", "client_id").as_deref(), Some("a-b"));
        assert_eq!(query_param("/x?y=1", "client_id"), None);
        assert_eq!(percent_decode("%zz%41"), "%zzA");
    }

    #[test]
    fn uploads_route_to_the_bucket_holding_the_row() {
        let options = ServiceOptions::new(Dataset::Generated(StreamSpec::benchmark(100)));
        let mut state = State::new(&options);
        state.apply_crud(&json!({"op": "PATCH", "type": "thisisatable", "id": "thisismyrowid13", "data": {"x": 1}})).unwrap();
        assert_eq!(state.buckets[3].ops.len(), 1);
        assert_eq!(state.buckets[3].ops[0].data.as_deref(), Some(r#"{"n":13,"x":1}"#));
        assert_eq!(state.buckets[3].ops[0].op_id, 101);
        state.apply_crud(&json!({"op": "PUT", "type": "todos", "id": "t1", "data": {"a": "b"}})).unwrap();
        assert_eq!(state.buckets.last().unwrap().name, UPLOADS_BUCKET);
        state.apply_crud(&json!({"op": "DELETE", "type": "todos", "id": "t1"})).unwrap();
        assert_eq!(state.buckets.last().unwrap().ops.len(), 2);
        assert_eq!(state.buckets.last().unwrap().ops[1].op, "REMOVE");
        // Entries add the uploaded ops to the generated part.
        let entry = state.buckets[3].entry();
        assert_eq!(entry.count, 11);
        assert!(state.apply_crud(&json!({"op": "NOPE", "type": "a", "id": "b"})).is_err());
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
        assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["error"]["status"], 401);
        let (status, body) = get(&format!("{url}/write-checkpoint2.json?client_id=c1"), Some("dev"));
        assert_eq!(status, 200);
        assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), json!({"data": {"write_checkpoint": "1"}}));
        let (_, token) = get(&format!("{url}/dev/token?ttl=60"), None);
        assert_eq!(get(&format!("{url}/write-checkpoint2.json?client_id=c1"), Some(&token)).0, 200);
        service.expire_token(&token);
        assert_eq!(get(&format!("{url}/write-checkpoint2.json?client_id=c1"), Some(&token)).0, 401);
        assert_eq!(get(&format!("{url}/nope"), Some("dev")).0, 404);
        let stats = service.stats();
        assert_eq!((stats.unauthorized, stats.write_checkpoints), (2, 2));
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

    #[test]
    fn binding_elsewhere_than_loopback_is_refused() {
        let mut options = ServiceOptions::new(Dataset::Buckets(Vec::new()));
        options.bind = SocketAddr::from(([0, 0, 0, 0], 0));
        assert!(TestService::start(options).is_err());
    }
}
