//! Fault and inspection endpoints for tests that drive the service over
//! HTTP from another process (the Node SDK drop-in test, `clients/node`),
//! where [`TestService`](super::TestService)'s methods are out of reach.
//!
//! | request | effect |
//! |---|---|
//! | `POST /dev/drop-next-stream?after=N` | as [`TestService::drop_next_stream_after`](super::TestService::drop_next_stream_after) |
//! | `POST /dev/corrupt-next-stream?after=N` | as [`TestService::corrupt_next_stream_after`](super::TestService::corrupt_next_stream_after) |
//! | `POST /dev/expire-token?token=T` | as [`TestService::expire_token`](super::TestService::expire_token) |
//! | `POST /dev/bad-next-checkpoint[?now=1]` | as [`TestService::bad_next_checkpoint`](super::TestService::bad_next_checkpoint) |
//! | `GET /dev/log` | `{"uploads": [batch, ...], "streams": [{"buckets": [...], "parameters": {...}}, ...], "stats": {...}}`: every upload batch as received, the `buckets` (name, `after`), `parameters` and `streams` (the subscriptions) of every sync stream request, and the counters |
//!
//! Like `/dev/token` they need no token: the service binds to loopback
//! only and is test support, not a production server.

use serde_json::{json, Value};

use super::{error_body, json_response, query_param, Fault, Shared};

/// Answers `request` if its path is one of the endpoints above; gives it
/// back otherwise.
pub(super) fn handle(shared: &Shared, request: tiny_http::Request) -> Option<tiny_http::Request> {
    let url = request.url().to_owned();
    let path = url.split('?').next().unwrap_or("");
    let response = match (request.method(), path) {
        (tiny_http::Method::Post, "/dev/drop-next-stream") => plan_fault(shared, &url, Fault::Drop, "drop_after"),
        (tiny_http::Method::Post, "/dev/corrupt-next-stream") => plan_fault(shared, &url, Fault::Garbage, "garbage_after"),
        (tiny_http::Method::Post, "/dev/expire-token") => match query_param(&url, "token") {
            Some(token) => {
                super::expire_token(shared, &token);
                json_response(200, &json!({"expired": token}))
            }
            None => json_response(400, &error_body(400, "PSYNC_R0001", "token=T is required")),
        },
        (tiny_http::Method::Post, "/dev/bad-next-checkpoint") => {
            let now = query_param(&url, "now").is_some_and(|v| v == "1");
            super::bad_next_checkpoint(shared, now);
            json_response(200, &json!({"bad_checkpoint": if now { "now" } else { "next" }}))
        }
        (tiny_http::Method::Get, "/dev/log") => {
            let state = shared.lock();
            let s = &state.stats;
            let stats = json!({
                "streams": s.streams,
                "dropped_streams": s.dropped_streams,
                "unauthorized": s.unauthorized,
                "invalid_requests": s.invalid_requests,
                "upload_batches": s.upload_batches,
                "uploaded_ops": s.uploaded_ops,
                "write_checkpoints": s.write_checkpoints,
                "checkpoint_requests": s.checkpoint_requests,
                "lines_sent": s.lines_sent,
                "bytes_sent": s.bytes_sent,
            });
            json_response(200, &json!({"uploads": state.upload_log, "streams": state.stream_log, "stats": stats}))
        }
        _ => return Some(request),
    };
    let _ = request.respond(response);
    None
}

/// Plans `fault` after the `after=N` lines of the query for the next stream.
fn plan_fault(shared: &Shared, url: &str, fault: fn(usize) -> Fault, key: &str) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    match query_param(url, "after").and_then(|n| n.parse::<usize>().ok()) {
        Some(lines) => {
            shared.lock().fault_plans.push_back(fault(lines));
            json_response(200, &json!({ key: lines }))
        }
        None => json_response(400, &error_body(400, "PSYNC_R0001", "after=N (lines) is required")),
    }
}

/// What `/dev/log` keeps of a sync stream request: its bucket positions
/// and its parameters.
pub(super) fn stream_entry(request: &Value) -> Value {
    json!({"buckets": request["buckets"].clone(), "parameters": request["parameters"].clone(), "streams": request["streams"].clone()})
}

#[cfg(test)]
mod tests {
    use crate::{Dataset, ServiceOptions, TestService};
    use serde_json::Value;
    use std::io::{Read, Write};

    fn request(service: &TestService, head: &str, body: &str) -> (u16, String) {
        let mut socket = std::net::TcpStream::connect(service.addr()).unwrap();
        write!(socket, "{head} HTTP/1.1\r\nHost: x\r\nAuthorization: Token dev\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).unwrap();
        let mut text = String::new();
        socket.read_to_string(&mut text).unwrap();
        let status = text[9..12].parse().unwrap();
        let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
        (status, body)
    }

    #[test]
    fn faults_and_log_over_http() {
        let service = TestService::start(ServiceOptions::new(Dataset::Buckets(crate::two_tables::buckets(200)))).unwrap();
        assert_eq!(request(&service, "POST /dev/drop-next-stream?after=2", "").0, 200);
        assert_eq!(request(&service, "POST /dev/drop-next-stream", "").0, 400);
        assert_eq!(request(&service, "POST /dev/bad-next-checkpoint", "").0, 200);
        assert_eq!(service.shared.lock().bad_checkpoints, 1);
        let batch = r#"{"batch":[{"op":"PUT","type":"todos","id":"new1","data":{"description":"x"}}]}"#;
        assert_eq!(request(&service, "POST /upload", batch).0, 200);
        let token = service.issue_token(std::time::Duration::from_secs(60));
        assert_eq!(request(&service, &format!("POST /dev/expire-token?token={token}"), "").0, 200);
        let (status, body) = request(&service, "GET /dev/log", "");
        assert_eq!(status, 200);
        let log: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(log["uploads"][0]["batch"][0]["id"], "new1");
        assert_eq!(log["stats"]["upload_batches"], 1);
        assert_eq!(log["streams"].as_array().unwrap().len(), 0);
        assert_eq!(service.shared.lock().fault_plans.len(), 1);
        assert!(service.shared.lock().token_left(&token).is_err());
    }
}
