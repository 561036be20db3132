//! The second argument of `powersync_control`, with the checks each
//! operation makes on it (moved out of `client.rs` to keep the state
//! machine readable).

use crate::error::{OpliteError, Result};

/// An invalid second argument (or payload field) of `powersync_control`.
pub(super) fn invalid_argument(message: String) -> OpliteError {
    OpliteError::InvalidArgument { function: "powersync_control", message, type_mismatch: false }
}

/// A payload of the wrong SQLite type: refused before the event reaches
/// the iteration, which it therefore does not end (`client::ends_iteration`).
fn wrong_type(message: String) -> OpliteError {
    OpliteError::InvalidArgument { function: "powersync_control", message, type_mismatch: true }
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
            _ => Err(wrong_type(format!("{op} needs a text payload"))),
        }
    }

    /// A blob (text is refused too, as by the reference).
    pub(super) fn bytes(self, op: &str) -> Result<&'a [u8]> {
        match self {
            Payload::Blob(bytes) => Ok(bytes),
            _ => Err(wrong_type(format!("{op} needs a blob payload"))),
        }
    }

    /// Text, or None for any other payload (`start` takes a payload that is
    /// not text as no options, as the reference does).
    pub(super) fn text_or_none(self) -> Option<&'a str> {
        match self {
            Payload::Text(text) => Some(text),
            _ => None,
        }
    }

    /// A checkpoint request id: NULL (None), an integer, or a decimal
    /// string (for JavaScript drivers that cannot bind 64-bit integers),
    /// parsed as the reference does (no surrounding spaces); negative ids
    /// are refused. `type_error` is the message for anything else.
    pub(super) fn optional_request_id(self, name: &str, type_error: &str) -> Result<Option<i64>> {
        let value = match self {
            Payload::Null => return Ok(None),
            Payload::Integer(i) => i,
            Payload::Text(text) => text.parse().map_err(|_| invalid_argument(type_error.into()))?,
            _ => return Err(invalid_argument(type_error.into())),
        };
        if value < 0 {
            return Err(invalid_argument(format!("{name} must be a non-negative integer")));
        }
        Ok(Some(value))
    }

    /// A checkpoint request id that must be given and above 0.
    pub(super) fn request_id(self, name: &str, type_error: &str) -> Result<i64> {
        match self.optional_request_id(name, type_error)? {
            None => Err(invalid_argument(type_error.into())),
            Some(0) => Err(invalid_argument(format!("{name} must be a positive integer"))),
            Some(id) => Ok(id),
        }
    }
}
