//! The error type of the BSON decoder.
//!
//! A sync line that fails to decode becomes a protocol error whose message
//! names what was wrong and where (an offset or a key path), so each failure
//! has its own variant instead of a bare string.

use std::fmt;

/// Everything that can go wrong while decoding BSON.
///
/// Offsets (`at`) are byte offsets from the start of the top-level input
/// document. Decoding errors never panic and never read past the input; any
/// malformed input yields one of these variants instead.
#[derive(Debug, Clone, PartialEq)]
pub enum BsonError {
    /// The input (or the enclosing document) ended at offset `at` before a
    /// complete value could be read.
    UnexpectedEof {
        /// Offset at which data ran out.
        at: usize,
    },
    /// A declared length prefix is negative, too small, inconsistent with
    /// where the data actually ends, or larger than its enclosing document.
    InvalidLength {
        /// What the length belongs to: `"document"`, `"string"`, `"binary"`.
        what: &'static str,
        /// The declared length.
        len: i64,
        /// Offset of the length prefix.
        at: usize,
    },
    /// A document, key or string that must end with a NUL byte does not.
    MissingNul {
        /// Offset where the NUL byte was expected (or where the search ended).
        at: usize,
    },
    /// A string value is not valid UTF-8.
    InvalidUtf8 {
        /// Key of the element holding the string.
        key: String,
        /// Offset of the string's first byte.
        at: usize,
    },
    /// An element key (field name) is not valid UTF-8.
    InvalidKey {
        /// Offset of the key's first byte.
        at: usize,
    },
    /// A boolean element holds a byte other than `0x00` or `0x01`.
    InvalidBool {
        /// Key of the element.
        key: String,
        /// The offending byte.
        byte: u8,
    },
    /// An element uses a type byte this codec does not support.
    UnknownElementType {
        /// The BSON type byte.
        type_byte: u8,
        /// Key of the element.
        key: String,
    },
    /// Documents and arrays are nested more deeply than the decoder allows.
    TooDeep {
        /// The maximum nesting depth (see [`super::MAX_DEPTH`]).
        limit: usize,
        /// Offset of the document that exceeded the limit.
        at: usize,
    },
    /// Bytes follow the end of the top-level document.
    TrailingBytes {
        /// Offset of the first byte after the document.
        at: usize,
    },
    /// A document that encodes an enum variant does not have exactly one key.
    InvalidEnum {
        /// Offset of the document.
        at: usize,
    },
    /// The target type rejected a value (a serde error raised while
    /// deserializing the element at `path`, e.g. "invalid type" or
    /// "missing field").
    InvalidValue {
        /// Dotted key path to the element, e.g. `data.0.id`.
        path: String,
        /// The serde error message.
        message: String,
    },
    /// Any other error, typically a custom serde error without key context.
    Message(String),
}

impl BsonError {
    /// Attaches `key` to a serde error raised while deserializing the value
    /// of that key, building a dotted path as errors bubble up.
    pub(super) fn in_key(self, key: &str) -> Self {
        match self {
            BsonError::Message(message) => BsonError::InvalidValue {
                path: key.to_owned(),
                message,
            },
            BsonError::InvalidValue { path, message } => BsonError::InvalidValue {
                path: format!("{key}.{path}"),
                message,
            },
            other => other,
        }
    }
}

impl fmt::Display for BsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use BsonError::*;
        match self {
            UnexpectedEof { at } => write!(f, "unexpected end of BSON data at offset {at}"),
            InvalidLength { what, len, at } => {
                write!(f, "invalid BSON {what} length {len} at offset {at}")
            }
            MissingNul { at } => write!(f, "missing NUL terminator at offset {at}"),
            InvalidUtf8 { key, at } => {
                write!(
                    f,
                    "invalid UTF-8 in string for key \"{key}\" at offset {at}"
                )
            }
            InvalidKey { at } => write!(f, "invalid UTF-8 in key at offset {at}"),
            InvalidBool { key, byte } => {
                write!(f, "invalid boolean byte 0x{byte:02x} for key \"{key}\"")
            }
            UnknownElementType { type_byte, key } => write!(
                f,
                "unsupported BSON element type 0x{type_byte:02x} ({}) for key \"{key}\"",
                element_type_name(*type_byte)
            ),
            TooDeep { limit, at } => write!(
                f,
                "BSON documents nested deeper than {limit} levels at offset {at}"
            ),
            TrailingBytes { at } => {
                write!(f, "trailing bytes after BSON document at offset {at}")
            }
            InvalidEnum { at } => write!(
                f,
                "expected a single-key document for an enum variant at offset {at}"
            ),
            InvalidValue { path, message } => write!(f, "{message} (at key \"{path}\")"),
            Message(message) => f.write_str(message),
        }
    }
}

/// The specification's name for an element type the decoder refuses.
fn element_type_name(type_byte: u8) -> &'static str {
    match type_byte {
        0x06 => "undefined",
        0x07 => "ObjectId",
        0x09 => "UTC datetime",
        0x0B => "regular expression",
        0x0C => "DBPointer",
        0x0D => "JavaScript code",
        0x0E => "symbol",
        0x0F => "JavaScript code with scope",
        0x13 => "decimal128",
        0x7F => "max key",
        0xFF => "min key",
        _ => "not a BSON type",
    }
}

impl std::error::Error for BsonError {}

impl serde::de::Error for BsonError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        BsonError::Message(msg.to_string())
    }
}
