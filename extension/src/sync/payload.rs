//! The second argument of `powersync_control`, with the checks each
//! operation makes on it (moved out of `client.rs` to keep the state
//! machine readable).

use crate::error::{OpliteError, Result};

/// An invalid second argument (or payload field) of `powersync_control`.
pub(super) fn invalid_argument(message: String) -> OpliteError {
    OpliteError::InvalidArgument { function: "powersync_control", message, type_mismatch: false }
}

/// The second argument of `powersync_control`.
#[derive(Clone, Copy)]
pub enum Payload<'a> {
    /// SQL NULL.
    Null,
    /// Text.
    Text(&'a str),
    /// A blob.
    Blob(&'a [u8]),
    /// An integer.
    Integer(i64),
    /// Anything else.
    Other,
}

impl<'a> Payload<'a> {
    pub(super) fn text(self, op: &str) -> Result<&'a str> {
        match self {
            Payload::Text(text) => Ok(text),
            _ => Err(invalid_argument(format!("{op} needs a text payload"))),
        }
    }

    pub(super) fn optional_text(self, op: &str) -> Result<Option<&'a str>> {
        match self {
            Payload::Null => Ok(None),
            other => other.text(op).map(Some),
        }
    }

    pub(super) fn bytes(self, op: &str) -> Result<&'a [u8]> {
        match self {
            Payload::Blob(bytes) => Ok(bytes),
            Payload::Text(text) => Ok(text.as_bytes()),
            _ => Err(invalid_argument(format!("{op} needs a blob payload"))),
        }
    }

    pub(super) fn optional_int(self, message: &str) -> Result<Option<i64>> {
        match self {
            Payload::Null => Ok(None),
            Payload::Integer(i) => Ok(Some(i)),
            Payload::Text(text) => text.trim().parse().map(Some).map_err(|_| invalid_argument(message.into())),
            _ => Err(invalid_argument(message.into())),
        }
    }
}
