//! Instructions: what `powersync_control` tells the host to do.
//!
//! The host (an SDK or the `oplite` CLI) owns the network. Every call
//! returns a JSON array of one-key objects, in the shapes the PowerSync SDKs
//! read; field order matches the reference core so traces compare as text.

use serde::Serialize;
use serde_json::Value as JsonValue;

use super::requests::CheckpointRequest;
use super::status::SyncStatus;
use super::streams::StreamsRequest;

/// Severity of a [`Instruction::LogLine`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Severity {
    /// Details for debugging.
    Debug,
    /// Normal operation worth noting.
    Info,
    /// Something went wrong and was handled.
    Warning,
}

/// One instruction for the host.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Instruction {
    /// Log a line.
    LogLine {
        /// How important it is.
        severity: Severity,
        /// The message.
        line: String,
    },
    /// The sync status changed.
    UpdateSyncStatus {
        /// The new status.
        status: SyncStatus,
    },
    /// Open the sync stream with this request body.
    EstablishSyncStream {
        /// The body of `POST /sync/stream`.
        request: StreamRequest,
        /// In `checkpoint_mode: "requests"`, what the host posts to the
        /// service's checkpoint-request endpoint before seeding the counter.
        #[serde(skip_serializing_if = "Option::is_none")]
        checkpoint_request: Option<CheckpointRequest>,
    },
    /// Fetch new credentials; `did_expire` says whether the old ones are
    /// already invalid (then the stream is also closed).
    FetchCredentials {
        /// True when the token has expired.
        did_expire: bool,
    },
    /// Close the sync stream.
    CloseSyncStream {
        /// True when the close is part of normal operation (token refresh)
        /// and should not be shown as a disconnect.
        hide_disconnect: bool,
    },
    /// Flush the file system (never emitted by native builds).
    FlushFileSystem {},
    /// A checkpoint was applied completely.
    DidCompleteSync(CompletedSync),
    /// Local data (pending uploads, or a write checkpoint the server has
    /// not confirmed) kept a completed checkpoint from being applied. The
    /// SDKs' download-only mode reports it as an error (its writes would
    /// never be uploaded); others ignore it. Sent for a blocked
    /// `checkpoint_complete` and a blocked `partial_checkpoint_complete`,
    /// not for a failed retry after `completed_upload`.
    CheckpointDelayedDueToLocalData {},
    /// Sync diagnostics (only when `start` asked for them).
    HandleDiagnostics(super::diagnostics::DiagnosticsEvent),
}

/// The payload of [`Instruction::DidCompleteSync`].
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CompletedSync {
    /// The write checkpoint the applied checkpoint carried, as a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied_checkpoint_request_id: Option<String>,
}

/// The body of the sync stream request.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StreamRequest {
    /// Buckets the client holds, with the last op id it has of each.
    pub buckets: Vec<BucketRequest>,
    /// Always true: the client validates checksums.
    pub include_checksum: bool,
    /// Always true: op data arrives as JSON text.
    pub raw_data: bool,
    /// Always true: the client accepts BSON lines.
    pub binary_data: bool,
    /// This database's client id.
    pub client_id: String,
    /// Sync parameters from the host (`null` when none).
    pub parameters: JsonValue,
    /// Stream subscriptions.
    pub streams: StreamsRequest,
    /// App metadata from the host, passed through when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_metadata: Option<JsonValue>,
}

/// One bucket of a [`StreamRequest`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BucketRequest {
    /// The bucket's name.
    pub name: String,
    /// The last op id held, as a decimal string.
    pub after: String,
}

impl Instruction {
    /// A log line.
    pub fn log(severity: Severity, line: impl Into<String>) -> Self {
        Instruction::LogLine { severity, line: line.into() }
    }
}

/// Serialises instructions as the JSON array the host receives.
pub fn to_json(instructions: &[Instruction]) -> String {
    serde_json::to_string(instructions).unwrap_or_else(|_| "[]".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_match_the_reference() {
        let json = to_json(&[
            Instruction::log(Severity::Debug, "Validated and applied checkpoint"),
            Instruction::DidCompleteSync(CompletedSync::default()),
            Instruction::FetchCredentials { did_expire: true },
            Instruction::CloseSyncStream { hide_disconnect: false },
            Instruction::DidCompleteSync(CompletedSync { applied_checkpoint_request_id: Some("3".into()) }),
        ]);
        assert_eq!(
            json,
            r#"[{"LogLine":{"severity":"DEBUG","line":"Validated and applied checkpoint"}},{"DidCompleteSync":{}},{"FetchCredentials":{"did_expire":true}},{"CloseSyncStream":{"hide_disconnect":false}},{"DidCompleteSync":{"applied_checkpoint_request_id":"3"}}]"#
        );
    }

    #[test]
    fn stream_request_field_order() {
        let request = StreamRequest {
            buckets: vec![BucketRequest { name: "b".into(), after: "10".into() }],
            include_checksum: true,
            raw_data: true,
            binary_data: true,
            client_id: "c".into(),
            parameters: JsonValue::Null,
            streams: StreamsRequest { include_defaults: true, subscriptions: vec![] },
            app_metadata: None,
        };
        assert_eq!(
            to_json(&[Instruction::EstablishSyncStream { request, checkpoint_request: None }]),
            r#"[{"EstablishSyncStream":{"request":{"buckets":[{"name":"b","after":"10"}],"include_checksum":true,"raw_data":true,"binary_data":true,"client_id":"c","parameters":null,"streams":{"include_defaults":true,"subscriptions":[]}}}}]"#
        );
    }
}
