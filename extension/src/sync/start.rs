//! The `start` payload of `powersync_control`: what the host asks of a sync
//! iteration (parameters, streams, checkpoint mode, raw tables,
//! diagnostics). It lives apart from the modules that act on each option,
//! so none of them needs another to read its own.

use serde::{Deserialize, Deserializer};
use serde_json::Value as JsonValue;

use super::payload::invalid_argument;
use super::requests::CheckpointMode;
use super::streams::StreamKey;
use crate::error::Result;
use crate::schema::RawTable;

/// The `start` payload.
#[derive(Debug, Deserialize)]
pub struct StartOptions {
    /// Sync parameters, passed to the server (`null` when absent).
    #[serde(default)]
    pub parameters: JsonValue,
    /// App metadata, passed to the server when present (even as `null`).
    #[serde(default, deserialize_with = "present")]
    pub app_metadata: Option<JsonValue>,
    /// Streams the app uses now: their TTLs are extended.
    #[serde(default)]
    pub active_streams: Vec<StreamKey>,
    /// Whether the server should sync default streams.
    #[serde(default = "yes")]
    pub include_defaults: bool,
    /// How the host gets write checkpoints.
    #[serde(default)]
    pub checkpoint_mode: CheckpointMode,
    /// The app's schema: only its raw tables are used (the sync apply runs
    /// their statements in place of the recorded ones).
    #[serde(default)]
    pub schema: Option<StartSchema>,
    /// Present (an object): report `HandleDiagnostics` (diagnostics.rs).
    #[serde(default)]
    pub diagnostics: Option<DiagnosticOptions>,
}

/// The `schema` of a `start` payload.
#[derive(Debug, Default, Deserialize)]
pub struct StartSchema {
    /// Raw tables the synced rows of their types go to.
    #[serde(default)]
    pub raw_tables: Vec<RawTable>,
}

fn yes() -> bool {
    true
}

/// A field that is present, `null` included (absent: the default, None).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Option<JsonValue>, D::Error> {
    JsonValue::deserialize(deserializer).map(Some)
}

impl Default for StartOptions {
    fn default() -> Self {
        StartOptions {
            parameters: JsonValue::Null,
            app_metadata: None,
            active_streams: Vec::new(),
            include_defaults: true,
            checkpoint_mode: Default::default(),
            schema: None,
            diagnostics: None,
        }
    }
}

impl StartOptions {
    /// Decodes a `start` payload (NULL: defaults).
    pub fn parse(payload: Option<&str>) -> Result<Self> {
        let Some(text) = payload else { return Ok(Self::default()) };
        // Only an object: serde would also take a (short) array for a struct.
        if !text.trim_start().starts_with('{') {
            return Err(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Ok(_) => invalid_argument("start payload must be a JSON object".to_owned()),
                Err(e) => invalid_argument(format!("start payload is not valid JSON: {e}")),
            });
        }
        serde_json::from_str(text).map_err(|e| {
            if e.is_syntax() || e.is_eof() {
                invalid_argument(format!("start payload is not valid JSON: {e}"))
            } else {
                invalid_argument(format!("start payload: {e}"))
            }
        })
        .and_then(|options: StartOptions| {
            // Sync parameters are an object (or null), as the service reads them.
            if options.parameters.is_null() || options.parameters.is_object() {
                Ok(options)
            } else {
                Err(invalid_argument(format!("start payload: parameters must be an object, got {}", options.parameters)))
            }
        })
    }
}

/// `"diagnostics"` in `start`'s options: any object turns them on.
#[derive(Debug, Deserialize)]
pub struct DiagnosticOptions {}
