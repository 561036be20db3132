//! Request validation, as the PowerSync service validates requests.
//!
//! The service (`packages/service-core/src/routes/route-register.ts`)
//! merges a request's query parameters and its JSON body (when the body is
//! an object) into one object and checks that against the endpoint's schema
//! (`StreamingSyncRequest` of `packages/service-core/src/util/protocol-types.ts`
//! for `POST /sync/stream`, `WriteCheckpointRequest` of
//! `routes/endpoints/checkpointing.ts` for `GET /write-checkpoint2.json`,
//! `CheckpointRequestPayload` of the same file for
//! `POST /sync/checkpoint-request`),
//! before the token is looked at (`libs/lib-services/src/router/endpoint.ts`).
//! Fields the schema does not name are accepted (`allowAdditional`), and
//! so are absent optional ones; `null` is not an absent field. A failure is
//! HTTP 400 with code `PSYNC_S2001`, description `Validation failed` and as
//! details the JSON list of every error, e.g. `["/parameters: type must be object"]`
//! (`ValidationError` in `packages/service-errors/src/errors.ts`).
//!
//! Before that, the body is parsed as Fastify does: `application/json`
//! must be JSON (else 400 `FST_ERR_CTP_INVALID_JSON_BODY`, or
//! `FST_ERR_CTP_EMPTY_JSON_BODY` when empty); a `text/plain` body is read
//! as text and so takes no part in the request; another content type, or a
//! body without one, is 415 `FST_ERR_CTP_INVALID_MEDIA_TYPE`.

use super::*;

/// A refused request, in the service's error shape:
/// `{"error": {"name", "code", "status", "description", "details"?}}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceError {
    /// HTTP status.
    pub status: u16,
    /// The error class name the service reports.
    pub name: &'static str,
    /// `PSYNC_...` (or a Fastify code for body parsing).
    pub code: &'static str,
    /// What went wrong.
    pub description: String,
    /// More detail (validation errors as a JSON list).
    pub details: Option<String>,
}

impl ServiceError {
    /// The response body.
    pub fn body(&self) -> Value {
        let mut error = json!({"name": self.name, "code": self.code, "status": self.status, "description": self.description});
        if let Some(details) = &self.details {
            error["details"] = Value::String(details.clone());
        }
        json!({ "error": error })
    }

    fn fastify(status: u16, code: &'static str, description: &str) -> Self {
        ServiceError { status, name: "FastifyError", code, description: description.into(), details: None }
    }
}

impl From<crate::auth::AuthError> for ServiceError {
    fn from(e: crate::auth::AuthError) -> Self {
        ServiceError { status: 401, name: "AuthorizationError", code: e.code, description: e.description, details: None }
    }
}

/// A JSON schema, as much of one as the service's request types need.
enum Schema {
    Any,
    Null,
    String,
    Boolean,
    Number,
    /// A JSON integer (ajv's `integer`: a number without a fraction) in
    /// this range (`minimum`, `maximum`).
    Integer(i64, i64),
    /// A string matching the pattern of ts-codec's bigint: `^-?[0-9]+$`.
    DecimalString,
    /// An object with any keys, each value of the schema.
    Record(&'static Schema),
    Array(&'static Schema),
    /// An object with these fields (name, schema, required); others allowed.
    Object(&'static [(&'static str, Schema, bool)]),
    AnyOf(&'static [Schema]),
    /// Exactly one of these (none of ours can match two at once).
    OneOf(&'static [Schema]),
}

const BUCKET_REQUEST: Schema = Schema::Object(&[("name", Schema::String, true), ("after", Schema::String, true)]);
const STREAM_SUBSCRIPTION: Schema = Schema::Object(&[
    ("stream", Schema::String, true),
    ("parameters", Schema::AnyOf(&[Schema::Record(&Schema::Any), Schema::Null]), true),
    ("override_priority", Schema::AnyOf(&[Schema::Number, Schema::Null]), true),
]);

/// `StreamingSyncRequest` (protocol-types.ts).
const STREAMING_SYNC_REQUEST: Schema = Schema::Object(&[
    ("buckets", Schema::Array(&BUCKET_REQUEST), false),
    ("only", Schema::Array(&Schema::String), false),
    ("include_checksum", Schema::Boolean, false),
    ("raw_data", Schema::Boolean, false),
    ("parameters", Schema::Record(&Schema::Any), false),
    ("app_metadata", Schema::Record(&Schema::String), false),
    ("client_id", Schema::String, false),
    (
        "streams",
        Schema::Object(&[
            ("include_defaults", Schema::Boolean, false),
            ("subscriptions", Schema::Array(&STREAM_SUBSCRIPTION), true),
        ]),
        false,
    ),
]);

/// `WriteCheckpointRequest` (checkpointing.ts).
const WRITE_CHECKPOINT_REQUEST: Schema = Schema::Object(&[("client_id", Schema::String, false)]);

/// JavaScript's `Number.MAX_SAFE_INTEGER`: the bound the service's
/// `BigIntParser` (`libs/lib-services/src/codec/parsers.ts`) puts on a
/// bigint sent as a JSON number.
const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// `codecs.bigint` as JSON schema (`BigIntParser`): a decimal string, or a
/// safe integer.
const BIGINT: Schema = Schema::OneOf(&[Schema::DecimalString, Schema::Integer(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)]);

/// `CheckpointRequestPayload` (checkpointing.ts): both fields required.
const CHECKPOINT_REQUEST: Schema = Schema::Object(&[("client_id", Schema::String, true), ("checkpoint_request_id", BIGINT, true)]);

/// The service's message when a checkpoint request id passes the schema but
/// not `isValidCheckpointRequestId` (checkpointing.ts).
pub(crate) const CHECKPOINT_REQUEST_ID_RANGE: &str = "Expected checkpoint_request_id between 1 and 9223372036854775807";

fn type_error(path: &str, expected: &str) -> String {
    format!("{path}: type must be {expected}")
}

/// Appends the errors of `value` against `schema` (ajv's messages, in the
/// service's `path: keyword message` form).
fn check(schema: &Schema, value: &Value, path: &str, errors: &mut Vec<String>) {
    match schema {
        Schema::Any => {}
        Schema::Null if !value.is_null() => errors.push(type_error(path, "null")),
        Schema::String if !value.is_string() => errors.push(type_error(path, "string")),
        Schema::Boolean if !value.is_boolean() => errors.push(type_error(path, "boolean")),
        Schema::Number if !value.is_number() => errors.push(type_error(path, "number")),
        Schema::Null | Schema::String | Schema::Boolean | Schema::Number => {}
        Schema::Integer(min, max) => match value.as_f64() {
            Some(n) if n.fract() == 0.0 => {
                if n < *min as f64 {
                    errors.push(format!("{path}: minimum must be >= {min}"));
                }
                if n > *max as f64 {
                    errors.push(format!("{path}: maximum must be <= {max}"));
                }
            }
            _ => errors.push(type_error(path, "integer")),
        },
        Schema::DecimalString => match value.as_str() {
            Some(s) => {
                let digits = s.strip_prefix('-').unwrap_or(s);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    errors.push(format!("{path}: pattern must match pattern \"^-?[0-9]+$\""));
                }
            }
            None => errors.push(type_error(path, "string")),
        },
        Schema::Record(values) => match value.as_object() {
            Some(object) => {
                for (key, v) in object {
                    check(values, v, &format!("{path}/{key}"), errors);
                }
            }
            None => errors.push(type_error(path, "object")),
        },
        Schema::Array(items) => match value.as_array() {
            Some(array) => {
                for (i, v) in array.iter().enumerate() {
                    check(items, v, &format!("{path}/{i}"), errors);
                }
            }
            None => errors.push(type_error(path, "array")),
        },
        Schema::Object(fields) => match value.as_object() {
            Some(object) => {
                for (name, field, required) in fields.iter() {
                    match object.get(*name) {
                        Some(v) => check(field, v, &format!("{path}/{name}"), errors),
                        None if *required => errors.push(format!("{path}: required must have required property '{name}'")),
                        None => {}
                    }
                }
            }
            None => errors.push(type_error(path, "object")),
        },
        Schema::AnyOf(options) => {
            let mut all = Vec::new();
            for option in options.iter() {
                let mut these = Vec::new();
                check(option, value, path, &mut these);
                if these.is_empty() {
                    return;
                }
                all.extend(these);
            }
            errors.extend(all);
            errors.push(format!("{path}: anyOf must match a schema in anyOf"));
        }
        Schema::OneOf(options) => {
            let mut all = Vec::new();
            let mut matched = 0;
            for option in options.iter() {
                let mut these = Vec::new();
                check(option, value, path, &mut these);
                if these.is_empty() {
                    matched += 1;
                }
                all.extend(these);
            }
            if matched != 1 {
                if matched == 0 {
                    errors.extend(all);
                }
                errors.push(format!("{path}: oneOf must match exactly one schema in oneOf"));
            }
        }
    }
}

fn validated(schema: &Schema, params: Value) -> Result<Value, ServiceError> {
    let mut errors = Vec::new();
    check(schema, &params, "", &mut errors);
    if errors.is_empty() {
        Ok(params)
    } else {
        Err(validation_failed(errors))
    }
}

fn validation_failed(errors: Vec<String>) -> ServiceError {
    ServiceError {
        status: 400,
        name: "ValidationError",
        code: "PSYNC_S2001",
        description: "Validation failed".into(),
        details: Some(Value::from(errors).to_string()),
    }
}

/// The query parameters as an object; a name given twice is an array of
/// its values, as Fastify's query parser makes it.
pub(crate) fn query_object(url: &str) -> serde_json::Map<String, Value> {
    let mut object = serde_json::Map::new();
    let Some((_, query)) = url.split_once('?') else { return object };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (k, v) = (percent_decode(k), Value::String(percent_decode(v)));
        match object.get_mut(&k) {
            Some(Value::Array(values)) => values.push(v),
            Some(first) => *first = Value::Array(vec![first.take(), v]),
            None => {
                object.insert(k, v);
            }
        }
    }
    object
}

/// The parameters of `POST /sync/stream`: the query and the body merged,
/// checked against `StreamingSyncRequest`.
pub(crate) fn sync_stream_request(url: &str, content_type: Option<&str>, body: &str) -> Result<Value, ServiceError> {
    validated(&STREAMING_SYNC_REQUEST, Value::Object(merged_params(url, content_type, body)?))
}

/// The parameters of `POST /sync/checkpoint-request` and the id asked for:
/// the query and the body merged, checked against `CheckpointRequestPayload`
/// (`client_id` a string, `checkpoint_request_id` a decimal string or a
/// safe integer), then the id against the service's range, 1 to
/// `i64::MAX` (`CheckpointRequestPayloadValidator`, checkpointing.ts).
pub(crate) fn checkpoint_request(url: &str, content_type: Option<&str>, body: &str) -> Result<(Value, i64), ServiceError> {
    let params = validated(&CHECKPOINT_REQUEST, Value::Object(merged_params(url, content_type, body)?))?;
    let id = match &params["checkpoint_request_id"] {
        // BigInt("007") is 7; a number past i64 (or negative) is out of range.
        Value::String(s) => s.parse::<i64>().ok(),
        n => n.as_f64().map(|f| f as i64),
    };
    match id {
        Some(id) if id > 0 => Ok((params, id)),
        _ => Err(validation_failed(vec![CHECKPOINT_REQUEST_ID_RANGE.to_owned()])),
    }
}

/// The query, with a JSON object body merged over it, as the service's
/// router makes a request's parameters (Fastify's body parsing first).
fn merged_params(url: &str, content_type: Option<&str>, body: &str) -> Result<serde_json::Map<String, Value>, ServiceError> {
    let mut params = query_object(url);
    let media = content_type.map(|c| c.split(';').next().unwrap_or("").trim().to_ascii_lowercase());
    match media.as_deref() {
        Some("application/json") => {
            if body.is_empty() {
                return Err(ServiceError::fastify(
                    400,
                    "FST_ERR_CTP_EMPTY_JSON_BODY",
                    "Body cannot be empty when content-type is set to 'application/json'",
                ));
            }
            let parsed: Value = serde_json::from_str(body).map_err(|_| {
                ServiceError::fastify(400, "FST_ERR_CTP_INVALID_JSON_BODY", "Body is not valid JSON but content-type is set to 'application/json'")
            })?;
            if let Value::Object(fields) = parsed {
                params.extend(fields);
            }
        }
        // Parsed as a string, which is not merged.
        Some("text/plain") => {}
        None if body.is_empty() => {}
        _ => return Err(ServiceError::fastify(415, "FST_ERR_CTP_INVALID_MEDIA_TYPE", "Unsupported Media Type")),
    }
    Ok(params)
}

/// The parameters of `GET /write-checkpoint2.json`: the query, checked
/// against `WriteCheckpointRequest` (`client_id` is optional).
pub(crate) fn write_checkpoint_request(url: &str) -> Result<Value, ServiceError> {
    validated(&WRITE_CHECKPOINT_REQUEST, Value::Object(query_object(url)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON: Option<&str> = Some("application/json");

    fn refused(body: Value) -> (u16, &'static str, Vec<String>) {
        let e = sync_stream_request("/sync/stream", JSON, &body.to_string()).unwrap_err();
        let details = e.details.map(|d| serde_json::from_str(&d).unwrap()).unwrap_or_default();
        (e.status, e.code, details)
    }

    #[test]
    fn what_the_sdks_send_is_accepted() {
        // The request of the core (and so of every SDK on it), with the
        // fields the schema does not name (binary_data).
        let request = json!({
            "buckets": [{"name": "a", "after": "5"}], "include_checksum": true, "raw_data": true,
            "binary_data": true, "client_id": "c1", "parameters": {},
            "streams": {"include_defaults": true, "subscriptions": [{"stream": "s", "parameters": null, "override_priority": null}]},
            "app_metadata": {"app": "x"}
        });
        assert_eq!(sync_stream_request("/sync/stream", JSON, &request.to_string()).unwrap(), request);
        assert!(sync_stream_request("/sync/stream", Some("application/json; charset=utf-8"), "{}").is_ok());
        // Unknown fields, of any type, pass as in the service.
        assert!(sync_stream_request("/sync/stream", JSON, r#"{"binary_data": "yes", "future": [1]}"#).is_ok());
    }

    #[test]
    fn each_rejected_shape_is_a_400_psync_s2001_with_the_path() {
        let cases = [
            (json!({"parameters": null}), "/parameters: type must be object"),
            (json!({"parameters": [1]}), "/parameters: type must be object"),
            (json!({"buckets": {}}), "/buckets: type must be array"),
            (json!({"buckets": [{"name": "a", "after": 5}]}), "/buckets/0/after: type must be string"),
            (json!({"buckets": [{"name": "a"}]}), "/buckets/0: required must have required property 'after'"),
            (json!({"buckets": ["a"]}), "/buckets/0: type must be object"),
            (json!({"client_id": 7}), "/client_id: type must be string"),
            (json!({"client_id": null}), "/client_id: type must be string"),
            (json!({"raw_data": "true"}), "/raw_data: type must be boolean"),
            (json!({"include_checksum": 1}), "/include_checksum: type must be boolean"),
            (json!({"streams": []}), "/streams: type must be object"),
            (json!({"streams": {"include_defaults": true}}), "/streams: required must have required property 'subscriptions'"),
            (json!({"streams": {"include_defaults": 1, "subscriptions": []}}), "/streams/include_defaults: type must be boolean"),
            (
                json!({"streams": {"subscriptions": [{"stream": "s", "override_priority": null}]}}),
                "/streams/subscriptions/0: required must have required property 'parameters'",
            ),
            (
                json!({"streams": {"subscriptions": [{"stream": "s", "parameters": 1, "override_priority": null}]}}),
                "/streams/subscriptions/0/parameters: anyOf must match a schema in anyOf",
            ),
            (json!({"app_metadata": {"a": 1}}), "/app_metadata/a: type must be string"),
            (json!({"only": [1]}), "/only/0: type must be string"),
        ];
        for (body, error) in cases {
            let (status, code, details) = refused(body.clone());
            assert_eq!((status, code), (400, "PSYNC_S2001"), "{body}");
            assert!(details.contains(&error.to_owned()), "{body}: {details:?}");
        }
        // Every error is listed.
        let (_, _, details) = refused(json!({"parameters": null, "client_id": 1}));
        assert_eq!(details, ["/parameters: type must be object", "/client_id: type must be string"]);
        let e = sync_stream_request("/sync/stream", JSON, r#"{"parameters": null}"#).unwrap_err();
        assert_eq!(
            e.body(),
            json!({"error": {"name": "ValidationError", "code": "PSYNC_S2001", "status": 400, "description": "Validation failed",
                             "details": "[\"/parameters: type must be object\"]"}})
        );
    }

    #[test]
    fn the_body_is_parsed_by_its_content_type_and_merged_over_the_query() {
        let code = |ct: Option<&str>, body: &str| sync_stream_request("/sync/stream", ct, body).map(|_| "ok").unwrap_or_else(|e| e.code);
        assert_eq!(code(JSON, ""), "FST_ERR_CTP_EMPTY_JSON_BODY");
        assert_eq!(code(JSON, "{\"buckets\":"), "FST_ERR_CTP_INVALID_JSON_BODY");
        assert_eq!(code(Some("application/xml"), "<a/>"), "FST_ERR_CTP_INVALID_MEDIA_TYPE");
        assert_eq!(code(None, "{}"), "FST_ERR_CTP_INVALID_MEDIA_TYPE");
        assert_eq!(code(None, ""), "ok");
        // A text body is not part of the request: its buckets are ignored.
        let text = sync_stream_request("/sync/stream", Some("text/plain; charset=utf-8"), r#"{"buckets": 1}"#).unwrap();
        assert_eq!(text, json!({}));
        // Query parameters take part, and are strings.
        let merged = sync_stream_request("/sync/stream?client_id=q&x=1", JSON, r#"{"client_id": "b"}"#).unwrap();
        assert_eq!(merged, json!({"client_id": "b", "x": "1"}));
        assert_eq!(code(JSON.map(|_| "application/json"), "[1]"), "ok");
        let e = sync_stream_request("/sync/stream?raw_data=true", JSON, "{}").unwrap_err();
        assert_eq!(e.details.as_deref(), Some("[\"/raw_data: type must be boolean\"]"));
    }

    #[test]
    fn write_checkpoint_takes_an_optional_client_id() {
        assert_eq!(write_checkpoint_request("/write-checkpoint2.json?client_id=a%2Db").unwrap(), json!({"client_id": "a-b"}));
        assert_eq!(write_checkpoint_request("/write-checkpoint2.json").unwrap(), json!({}));
        let e = write_checkpoint_request("/write-checkpoint2.json?client_id=a&client_id=b").unwrap_err();
        assert_eq!((e.status, e.code), (400, "PSYNC_S2001"));
        assert_eq!(e.details.as_deref(), Some("[\"/client_id: type must be string\"]"));
    }

    fn checkpoint_refused(body: &str) -> ServiceError {
        checkpoint_request("/sync/checkpoint-request", JSON, body).unwrap_err()
    }

    fn details(e: &ServiceError) -> Vec<String> {
        e.details.as_deref().map(|d| serde_json::from_str(d).unwrap()).unwrap_or_default()
    }

    #[test]
    fn a_checkpoint_request_takes_a_client_id_and_a_positive_int64() {
        // What the SDKs send (a decimal string), a safe JSON integer, the
        // largest id, leading zeros (BigInt("007") is 7), extra fields and
        // the query merged in.
        let ok = |url: &str, body: &str| checkpoint_request(url, JSON, body).map(|(_, id)| id).unwrap();
        let url = "/sync/checkpoint-request";
        assert_eq!(ok(url, r#"{"client_id": "c1", "checkpoint_request_id": "1"}"#), 1);
        assert_eq!(ok(url, r#"{"client_id": "c1", "checkpoint_request_id": 42}"#), 42);
        assert_eq!(ok(url, r#"{"client_id": "c1", "checkpoint_request_id": "9223372036854775807"}"#), i64::MAX);
        assert_eq!(ok(url, r#"{"client_id": "c1", "checkpoint_request_id": "007", "future": [1]}"#), 7);
        assert_eq!(ok("/sync/checkpoint-request?checkpoint_request_id=3", r#"{"client_id": "c1"}"#), 3);
        assert_eq!(ok(url, r#"{"client_id": "", "checkpoint_request_id": 9007199254740991}"#), 9_007_199_254_740_991);
        let (params, _) = checkpoint_request(url, JSON, r#"{"client_id": "c1", "checkpoint_request_id": "5"}"#).unwrap();
        assert_eq!(params["client_id"], "c1");
    }

    #[test]
    fn a_checkpoint_request_of_another_shape_is_refused_as_the_service_refuses_it() {
        let id_errors = |type_error: &str| {
            vec![
                type_error.to_owned(),
                "/checkpoint_request_id: oneOf must match exactly one schema in oneOf".to_owned(),
            ]
        };
        let cases: Vec<(&str, Vec<String>)> = vec![
            // Both fields are required (client_id is optional only on write-checkpoint2.json).
            (r#"{"checkpoint_request_id": "1"}"#, vec!["required must have required property 'client_id'".into()]),
            (r#"{"client_id": "c1"}"#, vec!["required must have required property 'checkpoint_request_id'".into()]),
            (r#"{"client_id": 1, "checkpoint_request_id": "1"}"#, vec!["/client_id: type must be string".into()]),
            (r#"{"client_id": null, "checkpoint_request_id": "1"}"#, vec!["/client_id: type must be string".into()]),
            (
                r#"{"client_id": "c1", "checkpoint_request_id": "1.5"}"#,
                vec![
                    "/checkpoint_request_id: pattern must match pattern \"^-?[0-9]+$\"".into(),
                    "/checkpoint_request_id: type must be integer".into(),
                    "/checkpoint_request_id: oneOf must match exactly one schema in oneOf".into(),
                ],
            ),
            (
                r#"{"client_id": "c1", "checkpoint_request_id": 1.5}"#,
                [vec!["/checkpoint_request_id: type must be string".to_owned()], id_errors("/checkpoint_request_id: type must be integer")].concat(),
            ),
            (
                r#"{"client_id": "c1", "checkpoint_request_id": null}"#,
                [vec!["/checkpoint_request_id: type must be string".to_owned()], id_errors("/checkpoint_request_id: type must be integer")].concat(),
            ),
            (
                // Past Number.MAX_SAFE_INTEGER a JSON number is refused: send a string.
                r#"{"client_id": "c1", "checkpoint_request_id": 9007199254740992}"#,
                [vec!["/checkpoint_request_id: type must be string".to_owned()], id_errors("/checkpoint_request_id: maximum must be <= 9007199254740991")].concat(),
            ),
        ];
        for (body, expected) in cases {
            let e = checkpoint_refused(body);
            assert_eq!((e.status, e.code, e.name), (400, "PSYNC_S2001", "ValidationError"), "{body}");
            let expected: Vec<String> = expected.into_iter().map(|m| if m.starts_with('/') { m } else { format!(": {m}") }).collect();
            assert_eq!(details(&e), expected, "{body}");
        }
        // The shape is right but the id is not a positive int64.
        for id in [r#""0""#, r#""-3""#, "0", "-1", r#""-0""#, r#""9223372036854775808""#, r#""123456789012345678901234567890""#] {
            let e = checkpoint_refused(&format!(r#"{{"client_id": "c1", "checkpoint_request_id": {id}}}"#));
            assert_eq!((e.status, e.code), (400, "PSYNC_S2001"), "{id}");
            assert_eq!(details(&e), [CHECKPOINT_REQUEST_ID_RANGE], "{id}");
        }
        // Fastify's body parsing comes first.
        let code = |ct: Option<&str>, body: &str| checkpoint_request("/sync/checkpoint-request", ct, body).unwrap_err().code;
        assert_eq!(code(JSON, ""), "FST_ERR_CTP_EMPTY_JSON_BODY");
        assert_eq!(code(JSON, "{"), "FST_ERR_CTP_INVALID_JSON_BODY");
        assert_eq!(code(Some("application/x-www-form-urlencoded"), "client_id=c1"), "FST_ERR_CTP_INVALID_MEDIA_TYPE");
        // A text body takes no part: both fields are then missing.
        let e = checkpoint_request("/sync/checkpoint-request", Some("text/plain"), r#"{"client_id": "c1", "checkpoint_request_id": "1"}"#).unwrap_err();
        assert_eq!(details(&e).len(), 2);
    }
}
