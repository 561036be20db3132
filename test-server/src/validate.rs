//! Request validation, as the PowerSync service validates requests.
//!
//! The service (`packages/service-core/src/routes/route-register.ts`)
//! merges a request's query parameters and its JSON body (when the body is
//! an object) into one object and checks that against the endpoint's schema
//! (`StreamingSyncRequest` of `packages/service-core/src/util/protocol-types.ts`
//! for `POST /sync/stream`, `WriteCheckpointRequest` of
//! `routes/endpoints/checkpointing.ts` for `GET /write-checkpoint2.json`),
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
    /// An object with any keys, each value of the schema.
    Record(&'static Schema),
    Array(&'static Schema),
    /// An object with these fields (name, schema, required); others allowed.
    Object(&'static [(&'static str, Schema, bool)]),
    AnyOf(&'static [Schema]),
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
    }
}

fn validated(schema: &Schema, params: Value) -> Result<Value, ServiceError> {
    let mut errors = Vec::new();
    check(schema, &params, "", &mut errors);
    if errors.is_empty() {
        Ok(params)
    } else {
        Err(ServiceError {
            status: 400,
            name: "ValidationError",
            code: "PSYNC_S2001",
            description: "Validation failed".into(),
            details: Some(Value::from(errors).to_string()),
        })
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
    validated(&STREAMING_SYNC_REQUEST, Value::Object(params))
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
}
