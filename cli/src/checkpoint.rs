//! Write checkpoints by checkpoint request (`oplite sync --checkpoint-mode
//! requests`), as the reference core's `docs/write-checkpoint-requests.md`
//! expects an SDK to do them:
//!
//! 1. `start` gets `"checkpoint_mode": "requests"`; its `EstablishSyncStream`
//!    then carries `checkpoint_request: {client_id, checkpoint_request_id}`
//!    (the core's max of its counter, a concrete local target and 1).
//! 2. On each connection that request is posted to `POST
//!    /sync/checkpoint-request`; the service answers the larger of it and
//!    its own record, and the core is seeded with that answer
//!    (`powersync_control('seed_checkpoint_request_id', id)`) before any id
//!    is allocated ([`reconcile`]).
//! 3. After an upload: an id from `next_checkpoint_request_id` (in a
//!    transaction), posted; once the service accepted it, it becomes the
//!    write gate (`target_checkpoint_request_id`) if the gate is still at
//!    the local-write sentinel and `ps_crud` is still empty
//!    ([`request_after_upload`]).
//!
//! The service reports the id as the `write_checkpoint` of a checkpoint;
//! the core applies it and says `DidCompleteSync{applied_checkpoint_request_id}`.
//! In the default legacy mode the host asks `GET /write-checkpoint2.json`
//! instead. The flow is written against [`CheckpointPort`] so that its
//! logic is tested without a core that has the operations.

use serde_json::Value;

use crate::http::RequestError;
use crate::Error;

/// How the host gets write checkpoints after an upload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CheckpointMode {
    /// `GET /write-checkpoint2.json` (what the SDKs do by default).
    #[default]
    Legacy,
    /// Client-allocated ids posted to `POST /sync/checkpoint-request`.
    Requests,
}

impl CheckpointMode {
    /// `legacy` or `requests`, as in the `start` payload.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckpointMode::Legacy => "legacy",
            CheckpointMode::Requests => "requests",
        }
    }
}

impl std::str::FromStr for CheckpointMode {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "legacy" => Ok(CheckpointMode::Legacy),
            "requests" => Ok(CheckpointMode::Requests),
            other => Err(Error::Usage(format!(
                "--checkpoint-mode: legacy or requests, not {other:?}"
            ))),
        }
    }
}

/// What the flow needs from the core and the service.
pub trait CheckpointPort {
    /// `POST /sync/checkpoint-request {client_id, checkpoint_request_id}`:
    /// the id the service accepted (the larger of `id` and its record), or
    /// `None` when the service has no such endpoint (404).
    fn post_request(&mut self, client_id: &str, id: i64) -> Result<Option<i64>, RequestError>;
    /// `powersync_control('seed_checkpoint_request_id', id)`.
    fn seed(&mut self, id: i64) -> Result<(), Error>;
    /// `powersync_control('next_checkpoint_request_id', NULL)`, in a
    /// transaction.
    fn next_id(&mut self) -> Result<i64, Error>;
    /// In one transaction: if `target_checkpoint_request_id` is still the
    /// local-write sentinel (`i64::MAX`) and `ps_crud` is empty, sets it to
    /// `id`. Returns whether it did.
    fn confirm_target(&mut self, id: i64) -> Result<bool, Error>;
}

/// Why a step failed: the service (to retry, or to refresh the token), or
/// the database.
#[derive(Debug)]
pub enum Failure {
    /// The request to the service failed.
    Request(RequestError),
    /// The core or the database failed, or answered nonsense.
    Local(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Local(e)
    }
}

impl From<Failure> for Error {
    fn from(f: Failure) -> Self {
        match f {
            Failure::Request(e) => e.into(),
            Failure::Local(e) => e,
        }
    }
}

/// The `checkpoint_request` of `EstablishSyncStream`: its client id and
/// request id (a decimal string, as the core writes it, or a number).
pub fn parse_request(payload: &Value) -> Result<(String, i64), Error> {
    let bad = || {
        Error::Engine(format!("EstablishSyncStream.checkpoint_request is not {{client_id, checkpoint_request_id > 0}}: {payload}"))
    };
    let client_id = payload
        .get("client_id")
        .and_then(Value::as_str)
        .ok_or_else(bad)?;
    let id = match payload.get("checkpoint_request_id") {
        Some(Value::String(s)) => s.parse::<i64>().ok(),
        Some(n) => n.as_i64(),
        None => None,
    };
    match id {
        Some(id) if id > 0 => Ok((client_id.to_owned(), id)),
        _ => Err(bad()),
    }
}

/// What [`reconcile`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reconciled {
    /// The core was seeded with the service's answer.
    Seeded(i64),
    /// The service has no `/sync/checkpoint-request` (404): nothing seeded.
    Unsupported,
}

/// A connection's step 2: posts the core's `checkpoint_request` and seeds
/// the core with the service's answer (the accepted state, not the local
/// hint: after `disconnectAndClear` the service's record is larger).
pub fn reconcile(port: &mut impl CheckpointPort, payload: &Value) -> Result<Reconciled, Failure> {
    let (client_id, id) = parse_request(payload)?;
    let Some(accepted) = port
        .post_request(&client_id, id)
        .map_err(Failure::Request)?
    else {
        return Ok(Reconciled::Unsupported);
    };
    // The core refuses 0 and NULL seeds; the service never answers below
    // what was posted.
    if accepted < 1 {
        return Err(Failure::Request(RequestError::Other(format!(
            "POST /sync/checkpoint-request answered {accepted} for checkpoint request {id}"
        ))));
    }
    port.seed(accepted)?;
    Ok(Reconciled::Seeded(accepted))
}

/// What [`request_after_upload`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requested {
    /// The id allocated and posted.
    pub id: i64,
    /// The service's answer (at least `id`).
    pub accepted: i64,
    /// Whether it became the write gate (no local write since the upload).
    pub target_set: bool,
}

/// Step 3, after the upload queue drained: allocate, post, then gate.
pub fn request_after_upload(
    port: &mut impl CheckpointPort,
    client_id: &str,
) -> Result<Requested, Failure> {
    let id = port.next_id()?;
    if id < 1 {
        return Err(Failure::Local(Error::Engine(format!(
            "next_checkpoint_request_id returned {id}"
        ))));
    }
    let accepted =
        match port.post_request(client_id, id).map_err(Failure::Request)? {
            Some(accepted) => accepted,
            None => return Err(Failure::Request(RequestError::Other(
                "POST /sync/checkpoint-request: 404, though the service answered it on connecting"
                    .into(),
            ))),
        };
    // The gate is the id posted: the stream reports the service's record,
    // which is at least that.
    let target_set = port.confirm_target(id)?;
    Ok(Requested {
        id,
        accepted,
        target_set,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A fake core and service: the core's counter, gate and queue; the
    /// service's record (None: no endpoint); every call, in order.
    #[derive(Default)]
    struct Fake {
        counter: Option<i64>,
        target: Option<i64>,
        crud: usize,
        record: Option<i64>,
        unsupported: bool,
        fail_post: Option<fn() -> RequestError>,
        calls: Vec<String>,
    }

    impl CheckpointPort for Fake {
        fn post_request(&mut self, client_id: &str, id: i64) -> Result<Option<i64>, RequestError> {
            self.calls.push(format!("post {client_id} {id}"));
            if let Some(error) = self.fail_post {
                return Err(error());
            }
            if self.unsupported {
                return Ok(None);
            }
            let record = self.record.unwrap_or(0).max(id);
            self.record = Some(record);
            Ok(Some(record))
        }
        fn seed(&mut self, id: i64) -> Result<(), Error> {
            self.calls.push(format!("seed {id}"));
            self.counter = Some(id);
            Ok(())
        }
        fn next_id(&mut self) -> Result<i64, Error> {
            let next = self
                .counter
                .ok_or_else(|| Error::Engine("not seeded".into()))?
                + 1;
            self.counter = Some(next);
            self.calls.push(format!("next {next}"));
            Ok(next)
        }
        fn confirm_target(&mut self, id: i64) -> Result<bool, Error> {
            let set = self.target == Some(i64::MAX) && self.crud == 0;
            if set {
                self.target = Some(id);
            }
            self.calls.push(format!("target {id} {set}"));
            Ok(set)
        }
    }

    fn establish(id: Value) -> Value {
        json!({"client_id": "c1", "checkpoint_request_id": id})
    }

    #[test]
    fn modes_parse_and_name_themselves() {
        assert_eq!(
            "requests".parse::<CheckpointMode>().unwrap(),
            CheckpointMode::Requests
        );
        assert_eq!(
            "legacy".parse::<CheckpointMode>().unwrap().as_str(),
            "legacy"
        );
        assert!(matches!(
            "Requests".parse::<CheckpointMode>(),
            Err(Error::Usage(_))
        ));
        assert_eq!(CheckpointMode::default(), CheckpointMode::Legacy);
    }

    #[test]
    fn the_establish_payload_is_a_client_id_and_a_positive_id() {
        assert_eq!(
            parse_request(&establish(json!("7"))).unwrap(),
            ("c1".into(), 7)
        );
        assert_eq!(
            parse_request(&establish(json!(7))).unwrap(),
            ("c1".into(), 7)
        );
        for bad in [
            json!("0"),
            json!("-1"),
            json!(null),
            json!("x"),
            json!("9223372036854775808"),
        ] {
            assert!(parse_request(&establish(bad.clone())).is_err(), "{bad}");
        }
        assert!(parse_request(&json!({"checkpoint_request_id": "1"})).is_err());
    }

    #[test]
    fn a_connection_seeds_the_core_with_the_service_answer_not_the_local_hint() {
        // A fresh client: the core asks 1, the service has nothing.
        let mut fake = Fake::default();
        assert_eq!(
            reconcile(&mut fake, &establish(json!("1"))).unwrap(),
            Reconciled::Seeded(1)
        );
        assert_eq!(fake.calls, ["post c1 1", "seed 1"]);
        // After disconnectAndClear the core asks 1 again; the service
        // remembers 12, and the core continues from there.
        let mut fake = Fake {
            record: Some(12),
            ..Fake::default()
        };
        assert_eq!(
            reconcile(&mut fake, &establish(json!("1"))).unwrap(),
            Reconciled::Seeded(12)
        );
        assert_eq!(fake.next_id().unwrap(), 13);
        // The service lost its record: the local hint recreates it.
        let mut fake = Fake::default();
        assert_eq!(
            reconcile(&mut fake, &establish(json!("5"))).unwrap(),
            Reconciled::Seeded(5)
        );
        assert_eq!(fake.record, Some(5));
    }

    #[test]
    fn a_service_without_the_endpoint_or_failing_seeds_nothing() {
        let mut fake = Fake {
            unsupported: true,
            ..Fake::default()
        };
        assert_eq!(
            reconcile(&mut fake, &establish(json!("1"))).unwrap(),
            Reconciled::Unsupported
        );
        assert_eq!(fake.calls, ["post c1 1"]);
        let mut fake = Fake {
            fail_post: Some(|| RequestError::Unauthorized("401".into())),
            ..Fake::default()
        };
        assert!(matches!(
            reconcile(&mut fake, &establish(json!("1"))),
            Err(Failure::Request(RequestError::Unauthorized(_)))
        ));
        assert_eq!(fake.counter, None);
        // A bad payload from the core is not posted.
        let mut fake = Fake::default();
        assert!(matches!(
            reconcile(&mut fake, &establish(json!("0"))),
            Err(Failure::Local(_))
        ));
        assert!(fake.calls.is_empty());
    }

    #[test]
    fn after_an_upload_the_next_id_is_posted_then_becomes_the_gate() {
        let mut fake = Fake {
            target: Some(i64::MAX),
            ..Fake::default()
        };
        reconcile(&mut fake, &establish(json!("3"))).unwrap();
        let requested = request_after_upload(&mut fake, "c1").unwrap();
        assert_eq!(
            requested,
            Requested {
                id: 4,
                accepted: 4,
                target_set: true
            }
        );
        assert_eq!(
            fake.calls,
            [
                "post c1 3",
                "seed 3",
                "next 4",
                "post c1 4",
                "target 4 true"
            ]
        );
        assert_eq!(fake.target, Some(4));
    }

    #[test]
    fn a_local_write_during_the_request_keeps_the_gate_closed() {
        // ps_crud has entries again: the sentinel stays; the next upload
        // requests a new id.
        let mut fake = Fake {
            target: Some(i64::MAX),
            crud: 1,
            counter: Some(1),
            ..Fake::default()
        };
        let requested = request_after_upload(&mut fake, "c1").unwrap();
        assert!(!requested.target_set);
        assert_eq!(fake.target, Some(i64::MAX));
        // A concrete gate is not replaced.
        let mut fake = Fake {
            target: Some(2),
            counter: Some(2),
            ..Fake::default()
        };
        assert!(!request_after_upload(&mut fake, "c1").unwrap().target_set);
        assert_eq!(fake.target, Some(2));
    }

    #[test]
    fn a_failed_post_leaves_the_gate_at_the_sentinel() {
        let mut fake = Fake {
            target: Some(i64::MAX),
            counter: Some(1),
            fail_post: Some(|| RequestError::Other("503".into())),
            ..Fake::default()
        };
        assert!(matches!(
            request_after_upload(&mut fake, "c1"),
            Err(Failure::Request(RequestError::Other(_)))
        ));
        assert_eq!(fake.target, Some(i64::MAX));
        // The retry allocates the next id; the service keeps the larger.
        fake.fail_post = None;
        assert_eq!(
            request_after_upload(&mut fake, "c1").unwrap(),
            Requested {
                id: 3,
                accepted: 3,
                target_set: true
            }
        );
        // A service record ahead of the id (a stale request): the answer is
        // the record, the gate the id posted.
        let mut fake = Fake {
            target: Some(i64::MAX),
            counter: Some(1),
            record: Some(9),
            ..Fake::default()
        };
        assert_eq!(
            request_after_upload(&mut fake, "c1").unwrap(),
            Requested {
                id: 2,
                accepted: 9,
                target_set: true
            }
        );
        assert_eq!(fake.target, Some(2));
        // Not seeded: no id, nothing posted.
        let mut fake = Fake::default();
        assert!(matches!(
            request_after_upload(&mut fake, "c1"),
            Err(Failure::Local(_))
        ));
        assert!(fake.calls.is_empty());
    }
}
