//! The HTTP side: routing a request, validating it and checking its token
//! (in the service's order), and the small helpers for query strings and
//! JSON answers.

use super::*;
use crate::validate::ServiceError;

pub(crate) fn expire_token(shared: &Shared, token: &str) {
    let mut state = shared.lock();
    state.expire_token(token);
    shared.bump(state);
}

pub(crate) fn bad_next_checkpoint(shared: &Shared, now: bool) {
    let mut state = shared.lock();
    state.bad_checkpoints += 1;
    if now {
        shared.bump(state);
    }
}

pub(crate) fn header<'a>(request: &'a tiny_http::Request, name: &str) -> Option<&'a str> {
    request.headers().iter().find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name)).map(|h| h.value.as_str())
}

pub(crate) fn query_param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then(|| percent_decode(v))
    })
}

pub(crate) fn percent_decode(s: &str) -> String {
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

pub(crate) fn json_response(status: u16, body: &Value) -> tiny_http::Response<io::Cursor<Vec<u8>>> {
    tiny_http::Response::from_data(body.to_string().into_bytes())
        .with_status_code(status)
        .with_header(tiny_http::Header::from_bytes("Content-Type", "application/json").expect("static header"))
}

pub(crate) fn error_body(status: u16, code: &str, description: &str) -> Value {
    json!({"error": {"code": code, "status": status, "description": description}})
}

/// The endpoints of the service (and the test service's upload stand-in).
enum Route {
    SyncStream,
    WriteCheckpoint,
    CheckpointRequest,
    Upload,
}

fn refuse(shared: &Shared, request: tiny_http::Request, error: ServiceError) {
    {
        let mut state = shared.lock();
        match error.status {
            401 => state.stats.unauthorized += 1,
            _ => state.stats.invalid_requests += 1,
        }
    }
    let _ = request.respond(json_response(error.status, &error.body()));
}

pub(crate) fn handle(shared: &Shared, mut request: tiny_http::Request) {
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
            let token = shared.lock().keys.issue(ttl);
            let _ = request.respond(tiny_http::Response::from_string(token));
            return;
        }
        (_, p) if p.starts_with("/dev/") => match dev_control::handle(shared, request) {
            Some(unhandled) => request = unhandled,
            None => return,
        },
        _ => {}
    }

    let route = match (&method, path.as_str()) {
        (tiny_http::Method::Post, "/sync/stream") => Route::SyncStream,
        (tiny_http::Method::Get, "/write-checkpoint2.json") => Route::WriteCheckpoint,
        (tiny_http::Method::Post, "/sync/checkpoint-request") => Route::CheckpointRequest,
        (tiny_http::Method::Post, "/upload") => Route::Upload,
        _ => {
            let description = format!("The path \"{path}\" does not exist on this server");
            let body = json!({"error": {"name": "RouteNotFound", "code": "PSYNC_S2002", "status": 404,
                "description": "The path does not exist on this server", "details": description}});
            let _ = request.respond(json_response(404, &body));
            return;
        }
    };

    let mut body = String::new();
    if request.as_reader().read_to_string(&mut body).is_err() {
        let _ = request.respond(json_response(400, &error_body(400, "PSYNC_R0001", "unreadable body")));
        return;
    }

    // As the service: the request is validated first, then its token.
    let mut requested_id = 0;
    let params = match route {
        Route::SyncStream => validate::sync_stream_request(&url, header(&request, "Content-Type"), &body),
        Route::WriteCheckpoint => validate::write_checkpoint_request(&url),
        Route::CheckpointRequest => validate::checkpoint_request(&url, header(&request, "Content-Type"), &body).map(|(params, id)| {
            requested_id = id;
            params
        }),
        Route::Upload => Ok(Value::Null),
    };
    let params = match params {
        Ok(params) => params,
        Err(error) => return refuse(shared, request, error),
    };
    let token = match auth::token_from_header(header(&request, "Authorization")) {
        Ok(token) => token.to_owned(),
        Err(error) => return refuse(shared, request, error.into()),
    };
    let verified = shared.lock().keys.verify(&token);
    if let Err(error) = verified {
        return refuse(shared, request, error.into());
    }

    match route {
        Route::SyncStream => {
            // Ok(0) for a token past its exp but within the clock tolerance:
            // the stream says so at once and ends.
            let left = shared.lock().token_left(&token).unwrap_or(Some(0));
            let encoding = Encoding::from_accept(header(&request, "Accept"));
            let writer = request.into_writer();
            let _ = stream(shared, writer, &params, encoding, &token, left);
        }
        Route::WriteCheckpoint => {
            // The service keys write checkpoints by user and client id; an
            // absent client id is allowed.
            let client_id = params["client_id"].as_str().unwrap_or_default().to_owned();
            let mut state = shared.lock();
            let wc = state.create_write_checkpoint(&client_id);
            state.stats.write_checkpoints += 1;
            shared.bump(state);
            let _ = request.respond(json_response(200, &json!({"data": {"write_checkpoint": wc.to_string()}})));
        }
        Route::CheckpointRequest => {
            // The answer is the record after the request: the larger of the
            // id and the record. Streams of that client see a new
            // checkpoint only when the record moved.
            let client_id = params["client_id"].as_str().unwrap_or_default().to_owned();
            let mut state = shared.lock();
            let (record, advanced) = state.request_checkpoint(&client_id, requested_id);
            state.stats.checkpoint_requests += 1;
            if advanced {
                shared.bump(state);
            } else {
                drop(state);
            }
            // The service's handler (checkpointing.ts) answers
            // `write_checkpoint`; the SDKs read `checkpoint_request_id`
            // (@powersync/common 2.3.0's `requestCheckpointFromService`, the
            // Swift SDK's mock service): both, with the same value.
            let record = record.to_string();
            let body = json!({"data": {"write_checkpoint": record, "checkpoint_request_id": record}});
            let _ = request.respond(json_response(200, &body));
        }
        Route::Upload => {
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
}
