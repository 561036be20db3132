//! Deserialization of BSON documents straight into serde types.
//!
//! The decoder never builds an intermediate tree. A document is walked
//! element by element: each element's header (type byte, key) and the framing
//! of its value (fixed size or length prefix) are validated as it is reached,
//! and the value is handed to the visitor of the target type. Strings and
//! binary data are borrowed from the input, and values the target does not
//! want (unknown fields) are skipped using their length prefix without being
//! decoded.

use serde::de::value::{BorrowedStrDeserializer, SeqDeserializer};
use serde::de::{self, DeserializeSeed, Unexpected, Visitor};
use serde::forward_to_deserialize_any;

use super::{
    BsonError, TYPE_ARRAY, TYPE_BINARY, TYPE_BOOL, TYPE_DOCUMENT, TYPE_DOUBLE, TYPE_INT32,
    TYPE_INT64, TYPE_NULL, TYPE_STRING, TYPE_TIMESTAMP,
};

type Result<T> = std::result::Result<T, BsonError>;

/// Maximum nesting depth of documents and arrays (the top-level document
/// counts as one level). Deeper input fails with [`BsonError::TooDeep`], which
/// bounds the decoder's recursion on hostile input. Values that the target
/// type ignores are skipped without descending into them.
pub const MAX_DEPTH: usize = 64;

/// Deserializes a `T` from a single BSON document occupying all of `bytes`.
///
/// Strings and binary values are borrowed from `bytes` when the target type
/// allows it (`&'de str`, `#[serde(borrow)] Cow<'de, str>`, `&'de [u8]`).
/// The document's declared length must equal `bytes.len()`: a shorter input
/// fails with [`BsonError::UnexpectedEof`], a longer one with
/// [`BsonError::TrailingBytes`].
///
/// # Errors
///
/// Any framing problem in the input (see [`BsonError`]'s variants, each of
/// which names the offending offset or key), an element type outside the
/// supported set, nesting deeper than [`MAX_DEPTH`], or a value the target
/// type rejects ([`BsonError::InvalidValue`], with the key path).
pub fn from_slice<'de, T: de::Deserialize<'de>>(
    bytes: &'de [u8],
) -> std::result::Result<T, BsonError> {
    let Some(prefix) = bytes.first_chunk::<4>() else {
        return Err(BsonError::UnexpectedEof { at: bytes.len() });
    };
    let len = i32::from_le_bytes(*prefix);
    if len < 5 {
        return Err(BsonError::InvalidLength {
            what: "document",
            len: len.into(),
            at: 0,
        });
    }
    let len = len as usize;
    if len > bytes.len() {
        return Err(BsonError::UnexpectedEof { at: bytes.len() });
    }
    if len < bytes.len() {
        return Err(BsonError::TrailingBytes { at: len });
    }
    if bytes[len - 1] != 0 {
        return Err(BsonError::MissingNul { at: len - 1 });
    }
    T::deserialize(ValueDeserializer {
        value: Value::Document { bytes, at: 0 },
        key: "",
        depth: 0,
    })
}

/// A decoded element value. Scalars are decoded eagerly (they are cheap);
/// strings are kept as raw bytes and only UTF-8-validated when visited, and
/// documents/arrays are kept as framed byte slices and only walked when
/// visited.
#[derive(Clone, Copy)]
enum Value<'de> {
    Double(f64),
    /// String content without the length prefix and NUL; `at` is its offset.
    String {
        bytes: &'de [u8],
        at: usize,
    },
    /// A framed document (length prefix through terminator); `at` is its offset.
    Document {
        bytes: &'de [u8],
        at: usize,
    },
    /// A framed array document.
    Array {
        bytes: &'de [u8],
        at: usize,
    },
    Binary(&'de [u8]),
    Bool(bool),
    Null,
    Int32(i32),
    Timestamp(u64),
    Int64(i64),
}

impl<'de> Value<'de> {
    fn unexpected(&self) -> Unexpected<'de> {
        match *self {
            Value::Double(v) => Unexpected::Float(v),
            Value::String { .. } => Unexpected::Other("string"),
            Value::Document { .. } => Unexpected::Map,
            Value::Array { .. } => Unexpected::Seq,
            Value::Binary(b) => Unexpected::Bytes(b),
            Value::Bool(b) => Unexpected::Bool(b),
            Value::Null => Unexpected::Unit,
            Value::Int32(v) => Unexpected::Signed(v.into()),
            Value::Timestamp(v) => Unexpected::Unsigned(v),
            Value::Int64(v) => Unexpected::Signed(v),
        }
    }
}

/// Iterates over the elements of a framed document.
///
/// `doc` must span exactly one document whose length prefix equals
/// `doc.len()`, with `doc.len() >= 5` and a final NUL byte; every producer
/// of a `Value::Document`/`Value::Array` checks this.
struct Elements<'de> {
    doc: &'de [u8],
    /// Absolute offset of `doc` in the top-level input.
    at: usize,
    /// Position of the next unread byte within `doc`.
    pos: usize,
}

impl<'de> Elements<'de> {
    fn new(doc: &'de [u8], at: usize) -> Self {
        Elements { doc, at, pos: 4 }
    }

    /// Index of the document's terminating NUL byte.
    fn end(&self) -> usize {
        self.doc.len().saturating_sub(1)
    }

    /// Consumes `n` bytes, which must lie before the terminator.
    fn take(&mut self, n: usize) -> Result<&'de [u8]> {
        let end = self.end();
        let slice = self
            .doc
            .get(self.pos..end)
            .and_then(|rest| rest.get(..n))
            .ok_or_else(|| BsonError::UnexpectedEof { at: self.at + end })?;
        self.pos += n;
        Ok(slice)
    }

    fn take_array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let at = self.at + self.end();
        self.take(N)?
            .try_into()
            .map_err(|_| BsonError::UnexpectedEof { at })
    }

    /// Reads a string's length prefix and consumes that many more bytes. A
    /// length below 1 or running past the document is an `InvalidLength`.
    fn take_string(&mut self) -> Result<&'de [u8]> {
        let at = self.at + self.pos;
        let len = i32::from_le_bytes(self.take_array()?);
        let invalid = move || BsonError::InvalidLength {
            what: "string",
            len: len.into(),
            at,
        };
        if len < 1 {
            return Err(invalid());
        }
        self.take(len as usize).map_err(|_| invalid())
    }

    /// Reads the next element, or `None` at the end of the document.
    fn next(&mut self) -> Result<Option<(&'de str, Value<'de>)>> {
        let end = self.end();
        let Some(&type_byte) = self.doc.get(self.pos).filter(|_| self.pos < end) else {
            return Ok(None);
        };
        if type_byte == 0 {
            // An element list terminator before the declared end.
            let len = self.doc.len() as i64;
            return Err(BsonError::InvalidLength {
                what: "document",
                len,
                at: self.at,
            });
        }
        let key_start = self.pos + 1;
        let rest = self.doc.get(key_start..end).unwrap_or_default();
        let nul = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| BsonError::MissingNul { at: self.at + end })?;
        let key = std::str::from_utf8(&rest[..nul]).map_err(|_| BsonError::InvalidKey {
            at: self.at + key_start,
        })?;
        self.pos = key_start + nul + 1;
        let value = self.value(type_byte, key)?;
        Ok(Some((key, value)))
    }

    /// Reads the value of an element of type `type_byte`.
    fn value(&mut self, type_byte: u8, key: &str) -> Result<Value<'de>> {
        let at = self.at + self.pos;
        Ok(match type_byte {
            TYPE_DOUBLE => Value::Double(f64::from_le_bytes(self.take_array()?)),
            TYPE_STRING => {
                let data = self.take_string()?;
                match data.split_last() {
                    Some((0, bytes)) => Value::String { bytes, at: at + 4 },
                    _ => {
                        return Err(BsonError::MissingNul {
                            at: self.at + self.pos - 1,
                        });
                    }
                }
            }
            TYPE_DOCUMENT | TYPE_ARRAY => {
                // The document's length includes its own 4-byte prefix.
                let start = self.pos;
                let len = i32::from_le_bytes(self.take_array()?);
                let invalid = move || BsonError::InvalidLength {
                    what: "document",
                    len: len.into(),
                    at,
                };
                if len < 5 {
                    return Err(invalid());
                }
                self.pos = start;
                let bytes = self.take(len as usize).map_err(|_| invalid())?;
                if bytes.last() != Some(&0) {
                    return Err(BsonError::MissingNul {
                        at: self.at + self.pos - 1,
                    });
                }
                if type_byte == TYPE_DOCUMENT {
                    Value::Document { bytes, at }
                } else {
                    Value::Array { bytes, at }
                }
            }
            TYPE_BINARY => {
                let len = i32::from_le_bytes(self.take_array()?);
                let invalid = move || BsonError::InvalidLength {
                    what: "binary",
                    len: len.into(),
                    at,
                };
                if len < 0 {
                    return Err(invalid());
                }
                let [subtype] = self.take_array()?;
                let data = self.take(len as usize).map_err(|_| invalid())?;
                if subtype == 0x02 {
                    // Deprecated "old binary": the payload repeats the length.
                    match data.split_first_chunk::<4>() {
                        Some((inner, rest)) if i32::from_le_bytes(*inner) == len - 4 => {
                            Value::Binary(rest)
                        }
                        _ => return Err(invalid()),
                    }
                } else {
                    Value::Binary(data)
                }
            }
            TYPE_BOOL => match self.take_array()? {
                [0] => Value::Bool(false),
                [1] => Value::Bool(true),
                [byte] => {
                    return Err(BsonError::InvalidBool {
                        key: key.to_owned(),
                        byte,
                    });
                }
            },
            TYPE_NULL => Value::Null,
            TYPE_INT32 => Value::Int32(i32::from_le_bytes(self.take_array()?)),
            TYPE_TIMESTAMP => Value::Timestamp(u64::from_le_bytes(self.take_array()?)),
            TYPE_INT64 => Value::Int64(i64::from_le_bytes(self.take_array()?)),
            _ => {
                return Err(BsonError::UnknownElementType {
                    type_byte,
                    key: key.to_owned(),
                });
            }
        })
    }
}

/// Deserializes one element value (or the top-level document).
struct ValueDeserializer<'de> {
    value: Value<'de>,
    /// Key of the element, for error messages.
    key: &'de str,
    /// Nesting depth of the document containing this value.
    depth: usize,
}

impl<'de> ValueDeserializer<'de> {
    /// Depth of a document/array value at offset `at`, checked against the limit.
    fn enter(&self, at: usize) -> Result<usize> {
        let depth = self.depth + 1;
        if depth > MAX_DEPTH {
            return Err(BsonError::TooDeep {
                limit: MAX_DEPTH,
                at,
            });
        }
        Ok(depth)
    }

    fn str(&self, bytes: &'de [u8], at: usize) -> Result<&'de str> {
        std::str::from_utf8(bytes).map_err(|_| BsonError::InvalidUtf8 {
            key: self.key.to_owned(),
            at,
        })
    }
}

impl<'de> de::Deserializer<'de> for ValueDeserializer<'de> {
    type Error = BsonError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.value {
            Value::Double(v) => visitor.visit_f64(v),
            Value::String { bytes, at } => visitor.visit_borrowed_str(self.str(bytes, at)?),
            Value::Document { bytes, at } => {
                let depth = self.enter(at)?;
                visitor.visit_map(DocAccess {
                    elements: Elements::new(bytes, at),
                    depth,
                    pending: None,
                })
            }
            Value::Array { bytes, at } => {
                let depth = self.enter(at)?;
                visitor.visit_seq(ArrayAccess {
                    elements: Elements::new(bytes, at),
                    depth,
                })
            }
            Value::Binary(bytes) => visitor.visit_borrowed_bytes(bytes),
            Value::Bool(v) => visitor.visit_bool(v),
            Value::Null => visitor.visit_unit(),
            Value::Int32(v) => visitor.visit_i32(v),
            Value::Timestamp(v) => visitor.visit_u64(v),
            Value::Int64(v) => visitor.visit_i64(v),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    /// Arrays are sequences; binary data also reads as a sequence of bytes so
    /// that `Vec<u8>` and `[u8; N]` targets accept it.
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.value {
            Value::Binary(bytes) => de::Deserializer::deserialize_any(
                SeqDeserializer::new(bytes.iter().copied()),
                visitor,
            ),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value> {
        self.deserialize_seq(visitor)
    }

    /// Enums are a string (unit variant) or a single-key document whose key
    /// is the variant name (externally tagged).
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        match self.value {
            Value::String { bytes, at } => {
                visitor.visit_enum(BorrowedStrDeserializer::new(self.str(bytes, at)?))
            }
            Value::Document { bytes, at } => {
                let depth = self.enter(at)?;
                let mut elements = Elements::new(bytes, at);
                let Some((key, value)) = elements.next()? else {
                    return Err(BsonError::InvalidEnum { at });
                };
                if elements.next()?.is_some() {
                    return Err(BsonError::InvalidEnum { at });
                }
                visitor.visit_enum(ValueDeserializer { value, key, depth })
            }
            other => Err(de::Error::invalid_type(
                other.unexpected(),
                &"string or document for enum",
            )),
        }
    }

    /// Skips the value. Its framing was already validated when the element
    /// was read, so this does no work at all, even for nested documents.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct tuple_struct map struct identifier
    }
}

/// Externally tagged enum: `self.key` is the variant, `self.value` its content.
impl<'de> de::EnumAccess<'de> for ValueDeserializer<'de> {
    type Error = BsonError;
    type Variant = Self;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self)> {
        let variant = seed.deserialize(KeyDeserializer(self.key))?;
        Ok((variant, self))
    }
}

impl<'de> de::VariantAccess<'de> for ValueDeserializer<'de> {
    type Error = BsonError;

    fn unit_variant(self) -> Result<()> {
        match self.value {
            Value::Null => Ok(()),
            other => Err(de::Error::invalid_type(
                other.unexpected(),
                &"null for unit variant",
            )),
        }
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value> {
        let key = self.key;
        seed.deserialize(self).map_err(|e| e.in_key(key))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value> {
        let key = self.key;
        de::Deserializer::deserialize_seq(self, visitor).map_err(|e| e.in_key(key))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        let key = self.key;
        de::Deserializer::deserialize_any(self, visitor).map_err(|e| e.in_key(key))
    }
}

/// Map access over the elements of a document.
struct DocAccess<'de> {
    elements: Elements<'de>,
    depth: usize,
    /// The element whose key was just handed out.
    pending: Option<(&'de str, Value<'de>)>,
}

impl<'de> de::MapAccess<'de> for DocAccess<'de> {
    type Error = BsonError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        match self.elements.next()? {
            Some((key, value)) => {
                self.pending = Some((key, value));
                seed.deserialize(KeyDeserializer(key)).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let (key, value) = self
            .pending
            .take()
            .ok_or_else(|| BsonError::Message("map value requested before its key".into()))?;
        seed.deserialize(ValueDeserializer {
            value,
            key,
            depth: self.depth,
        })
        .map_err(|e| e.in_key(key))
    }
}

/// Sequence access over the elements of an array document. Keys are not
/// checked against the expected "0", "1", ...: elements are taken in order.
struct ArrayAccess<'de> {
    elements: Elements<'de>,
    depth: usize,
}

impl<'de> de::SeqAccess<'de> for ArrayAccess<'de> {
    type Error = BsonError;

    fn next_element_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<Option<S::Value>> {
        match self.elements.next()? {
            Some((key, value)) => seed
                .deserialize(ValueDeserializer {
                    value,
                    key,
                    depth: self.depth,
                })
                .map(Some)
                .map_err(|e| e.in_key(key)),
            None => Ok(None),
        }
    }
}

/// Deserializes a document key: a borrowed string, or an integer for maps
/// with integer keys (e.g. `HashMap<u32, T>`).
struct KeyDeserializer<'de>(&'de str);

macro_rules! deserialize_integer_key {
    ($($method:ident => $visit:ident($ty:ty)),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            match self.0.parse::<$ty>() {
                Ok(v) => visitor.$visit(v),
                Err(_) => visitor.visit_borrowed_str(self.0),
            }
        }
    )*};
}

impl<'de> de::Deserializer<'de> for KeyDeserializer<'de> {
    type Error = BsonError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_borrowed_str(self.0)
    }

    deserialize_integer_key! {
        deserialize_i8 => visit_i64(i64), deserialize_i16 => visit_i64(i64),
        deserialize_i32 => visit_i64(i64), deserialize_i64 => visit_i64(i64),
        deserialize_u8 => visit_u64(u64), deserialize_u16 => visit_u64(u64),
        deserialize_u32 => visit_u64(u64), deserialize_u64 => visit_u64(u64),
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_enum(BorrowedStrDeserializer::new(self.0))
    }

    forward_to_deserialize_any! {
        bool i128 u128 f32 f64 char str string bytes byte_buf unit unit_struct
        seq tuple tuple_struct map struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{doc, el, string, HELLO};
    use super::from_slice;
    use serde::Deserialize;
    use serde_json::{json, Value as Json};

    #[test]
    fn spec_hello_world() {
        #[derive(Deserialize)]
        struct Hello<'a> {
            hello: &'a str,
        }
        assert_eq!(from_slice::<Hello>(HELLO).unwrap().hello, "world");
        assert_eq!(
            from_slice::<Json>(HELLO).unwrap(),
            json!({"hello": "world"})
        );
    }

    #[test]
    fn spec_array_example() {
        let bytes =
            b"\x31\x00\x00\x00\x04BSON\x00\x26\x00\x00\x00\x020\x00\x08\x00\x00\x00awesome\x00\
            \x011\x00\x33\x33\x33\x33\x33\x33\x14\x40\x102\x00\xc2\x07\x00\x00\x00\x00";
        let value: Json = from_slice(bytes).unwrap();
        assert_eq!(value, json!({"BSON": ["awesome", 5.05, 1986]}));
    }

    #[test]
    fn all_element_types() {
        let mut elements = el(0x01, "d", &1.5f64.to_le_bytes());
        elements.extend(el(0x02, "s", &string("hé".as_bytes())));
        elements.extend(el(0x03, "o", &doc(&el(0x10, "x", &7i32.to_le_bytes()))));
        elements.extend(el(
            0x04,
            "a",
            &doc(&[el(0x08, "0", &[1]), el(0x0A, "1", &[])].concat()),
        ));
        elements.extend(el(0x05, "b", &[2, 0, 0, 0, 0x80, 0xAB, 0xCD]));
        elements.extend(el(0x05, "old", &[6, 0, 0, 0, 0x02, 2, 0, 0, 0, 0xEE, 0xFF]));
        elements.extend(el(0x08, "f", &[0]));
        elements.extend(el(0x0A, "n", &[]));
        elements.extend(el(0x10, "i", &(-3i32).to_le_bytes()));
        elements.extend(el(0x11, "t", &u64::MAX.to_le_bytes()));
        elements.extend(el(0x12, "l", &(1i64 << 40).to_le_bytes()));
        let bytes = doc(&elements);

        #[derive(Deserialize, Debug, PartialEq)]
        struct All<'a> {
            d: f64,
            s: String,
            o: Json,
            a: (bool, Option<u8>),
            b: &'a [u8],
            old: Vec<u8>,
            f: bool,
            n: Option<String>,
            i: i8,
            t: u64,
            l: i64,
        }
        let all: All = from_slice(&bytes).unwrap();
        let expected = All {
            d: 1.5,
            s: "hé".into(),
            o: json!({"x": 7}),
            a: (true, None),
            b: &[0xAB, 0xCD],
            old: vec![0xEE, 0xFF],
            f: false,
            n: None,
            i: -3,
            t: u64::MAX,
            l: 1 << 40,
        };
        assert_eq!(all, expected);

        // Every type can also be skipped as an unknown field.
        #[derive(Deserialize)]
        struct Nothing {}
        from_slice::<Nothing>(&bytes).unwrap();
    }
}
