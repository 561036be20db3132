//! The HTTP side: routing a request, checking its token, and the small
//! helpers for query strings and JSON answers.

use super::*;

pub(crate) fn issue_token(shared: &Shared, ttl: Duration) -> String {
    let mut state = shared.lock();
    let n = state.next_token;
    state.next_token += 1;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    let token = format!("tok{n}-{nanos:08x}");
    state.tokens.insert(token.clone(), Some(Instant::now() + ttl));
    token
}

pub(crate) fn header<'a>(request: &'a tiny_http::Request, name: &str) -> Option<&'a str> {
    request.headers().iter().find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name)).map(|h| h.value.as_str())
}

pub(crate) fn bearer(request: &tiny_http::Request) -> Option<String> {
    let value = header(request, "Authorization")?.trim();
    let token = value.strip_prefix("Token ").or_else(|| value.strip_prefix("Bearer "))?;
    Some(token.trim().to_owned())
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
