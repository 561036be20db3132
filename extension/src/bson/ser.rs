//! Serialization of serde types into BSON documents.
//!
//! Output is written straight into one `Vec<u8>`. Each element's type byte is
//! written as a placeholder before its key and patched once the value
//! has been serialized, and document lengths are back-patched when a document
//! ends, so no intermediate buffers are needed.
//!
//! Type mapping:
//!
//! | Rust / serde                          | BSON                               |
//! |---------------------------------------|------------------------------------|
//! | `bool`                                | boolean (0x08)                     |
//! | `i8`, `i16`, `i32`, `u8`, `u16`       | int32 (0x10)                       |
//! | `u32`                                 | int32 if it fits, else int64       |
//! | `i64`, `i128`/`u64`/`u128` if they fit| int64 (0x12), else an error        |
//! | `f32`, `f64`                          | double (0x01)                      |
//! | `char`, `str`, unit variants          | string (0x02)                      |
//! | bytes (`serde_bytes`, `&[u8]` via `serialize_bytes`) | binary subtype 0 (0x05) |
//! | `None`, `()`, unit structs            | null (0x0A)                        |
//! | sequences, tuples                     | array (0x04) with keys "0", "1", … |
//! | maps, structs                         | document (0x03)                    |
//! | newtype/tuple/struct variants         | `{ "Variant": content }` document  |
//!
//! `u32` uses int32 whenever the value allows so that small unsigned numbers
//! look like ordinary numbers to other BSON readers; the decoder accepts either
//! width for every integer type. Map keys may be strings, chars, unit variants
//! or integers (written in decimal, as JSON does).

use serde::ser::{self, Impossible, Serialize};

use super::{
    BsonError, TYPE_ARRAY, TYPE_BINARY, TYPE_BOOL, TYPE_DOCUMENT, TYPE_DOUBLE, TYPE_INT32,
    TYPE_INT64, TYPE_NULL, TYPE_STRING,
};

type Result<T> = std::result::Result<T, BsonError>;

/// Serializes `value` as a BSON document.
///
/// The value must serialize as a map, a struct, or a newtype/tuple/struct
/// enum variant (which becomes a single-key document); anything else fails with
/// [`BsonError::NotADocument`].
///
/// # Errors
///
/// [`BsonError::NotADocument`] as above; [`BsonError::IntegerOutOfRange`]
/// for a `u64`/`i128`/`u128` outside the int64 range;
/// [`BsonError::KeyMustBeString`] or [`BsonError::KeyContainsNul`] for an
/// unusable map key; [`BsonError::TooLarge`] past 2 GiB; and any error the
/// value's `Serialize` implementation raises ([`BsonError::Message`]).
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> std::result::Result<Vec<u8>, BsonError> {
    let mut out = Vec::with_capacity(128);
    value.serialize(ValueSerializer {
        out: &mut out,
        type_pos: None,
    })?;
    Ok(out)
}

/// Starts a document, returning the offset of its length placeholder.
fn begin_document(out: &mut Vec<u8>) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    start
}

/// Terminates the document starting at `start` and patches its length.
fn end_document(out: &mut Vec<u8>, start: usize) -> Result<()> {
    out.push(0);
    let len = i32::try_from(out.len() - start).map_err(|_| BsonError::TooLarge)?;
    if let Some(slot) = out.get_mut(start..start + 4) {
        slot.copy_from_slice(&len.to_le_bytes());
    }
    Ok(())
}

/// Writes a type placeholder and a key, returning the placeholder's offset.
fn begin_element(out: &mut Vec<u8>, key: &str) -> Result<usize> {
    let type_pos = out.len();
    out.push(0);
    write_cstring(out, key)?;
    Ok(type_pos)
}

fn write_cstring(out: &mut Vec<u8>, key: &str) -> Result<()> {
    if key.as_bytes().contains(&0) {
        return Err(BsonError::KeyContainsNul {
            key: key.to_owned(),
        });
    }
    out.extend_from_slice(key.as_bytes());
    out.push(0);
    Ok(())
}

/// Writes `value` in decimal followed by a NUL (array indexes, integer keys).
fn write_decimal_key(out: &mut Vec<u8>, value: i128) {
    let mut buf = [0u8; 40];
    let mut pos = buf.len();
    let mut rest = value.unsigned_abs();
    loop {
        pos -= 1;
        buf[pos] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if value < 0 {
        pos -= 1;
        buf[pos] = b'-';
    }
    out.extend_from_slice(&buf[pos..]);
    out.push(0);
}

/// Serializes one value. With `type_pos` set, the value is an element whose
/// type byte placeholder sits at that offset; without, it is the top-level
/// value, which must produce a document.
struct ValueSerializer<'a> {
    out: &'a mut Vec<u8>,
    type_pos: Option<usize>,
}

impl<'a> ValueSerializer<'a> {
    /// Records the element type and returns the output buffer, or fails if a
    /// non-document is serialized at the top level (`found` names it).
    fn element(self, type_byte: u8, found: &'static str) -> Result<&'a mut Vec<u8>> {
        match self.type_pos {
            Some(pos) => {
                if let Some(slot) = self.out.get_mut(pos) {
                    *slot = type_byte;
                }
                Ok(self.out)
            }
            None if type_byte == TYPE_DOCUMENT => Ok(self.out),
            None => Err(BsonError::NotADocument { found }),
        }
    }

    fn int32(self, v: i32) -> Result<()> {
        self.element(TYPE_INT32, "integer")?
            .extend_from_slice(&v.to_le_bytes());
        Ok(())
    }

    fn int64(self, v: i64) -> Result<()> {
        self.element(TYPE_INT64, "integer")?
            .extend_from_slice(&v.to_le_bytes());
        Ok(())
    }

    fn int64_checked<T: TryInto<i64> + ToString + Copy>(self, v: T) -> Result<()> {
        match v.try_into() {
            Ok(v) => self.int64(v),
            Err(_) => Err(BsonError::IntegerOutOfRange {
                value: v.to_string(),
            }),
        }
    }

    fn double(self, v: f64) -> Result<()> {
        self.element(TYPE_DOUBLE, "float")?
            .extend_from_slice(&v.to_le_bytes());
        Ok(())
    }

    /// Starts `{ variant: <inner_type> ... }` and returns the compound that
    /// fills the inner document/array and closes both.
    fn variant(self, variant: &str, inner_type: u8) -> Result<Compound<'a>> {
        let out = self.element(TYPE_DOCUMENT, "enum variant")?;
        let outer = begin_document(out);
        let type_pos = begin_element(out, variant)?;
        out[type_pos] = inner_type;
        Ok(Compound::new(out, Some(outer)))
    }
}

impl<'a> ser::Serializer for ValueSerializer<'a> {
    type Ok = ();
    type Error = BsonError;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, v: bool) -> Result<()> {
        self.element(TYPE_BOOL, "bool")?.push(u8::from(v));
        Ok(())
    }

    fn serialize_i8(self, v: i8) -> Result<()> {
        self.int32(v.into())
    }

    fn serialize_i16(self, v: i16) -> Result<()> {
        self.int32(v.into())
    }

    fn serialize_i32(self, v: i32) -> Result<()> {
        self.int32(v)
    }

    fn serialize_i64(self, v: i64) -> Result<()> {
        self.int64(v)
    }

    fn serialize_i128(self, v: i128) -> Result<()> {
        self.int64_checked(v)
    }

    fn serialize_u8(self, v: u8) -> Result<()> {
        self.int32(v.into())
    }

    fn serialize_u16(self, v: u16) -> Result<()> {
        self.int32(v.into())
    }

    fn serialize_u32(self, v: u32) -> Result<()> {
        match i32::try_from(v) {
            Ok(v) => self.int32(v),
            Err(_) => self.int64(v.into()),
        }
    }

    fn serialize_u64(self, v: u64) -> Result<()> {
        self.int64_checked(v)
    }

    fn serialize_u128(self, v: u128) -> Result<()> {
        self.int64_checked(v)
    }

    fn serialize_f32(self, v: f32) -> Result<()> {
        self.double(v.into())
    }

    fn serialize_f64(self, v: f64) -> Result<()> {
        self.double(v)
    }

    fn serialize_char(self, v: char) -> Result<()> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(self, v: &str) -> Result<()> {
        let len = i32::try_from(v.len() + 1).map_err(|_| BsonError::TooLarge)?;
        let out = self.element(TYPE_STRING, "string")?;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(v.as_bytes());
        out.push(0);
        Ok(())
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<()> {
        let len = i32::try_from(v.len()).map_err(|_| BsonError::TooLarge)?;
        let out = self.element(TYPE_BINARY, "bytes")?;
        out.extend_from_slice(&len.to_le_bytes());
        out.push(0x00); // generic binary subtype
        out.extend_from_slice(v);
        Ok(())
    }

    fn serialize_none(self) -> Result<()> {
        self.serialize_unit()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<()> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<()> {
        self.element(TYPE_NULL, "null")?;
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<()> {
        self.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<()> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<()> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<()> {
        let out = self.element(TYPE_DOCUMENT, "enum variant")?;
        let start = begin_document(out);
        let type_pos = begin_element(out, variant)?;
        value.serialize(ValueSerializer {
            out: &mut *out,
            type_pos: Some(type_pos),
        })?;
        end_document(out, start)
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a>> {
        Ok(Compound::new(self.element(TYPE_ARRAY, "sequence")?, None))
    }

    fn serialize_tuple(self, len: usize) -> Result<Compound<'a>> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Compound<'a>> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>> {
        self.variant(variant, TYPE_ARRAY)
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a>> {
        Ok(Compound::new(self.element(TYPE_DOCUMENT, "map")?, None))
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Compound<'a>> {
        self.serialize_map(None)
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>> {
        self.variant(variant, TYPE_DOCUMENT)
    }
}

/// Writes the elements of a document or array, and closes it (plus the
/// wrapping variant document, if any) at the end.
struct Compound<'a> {
    out: &'a mut Vec<u8>,
    /// Offset of this document's length prefix.
    start: usize,
    /// Offset of the enclosing `{ variant: ... }` document, if any.
    outer: Option<usize>,
    /// Next array index.
    index: usize,
    /// Type placeholder of the map entry whose key was just written.
    type_pos: usize,
}

impl<'a> Compound<'a> {
    fn new(out: &'a mut Vec<u8>, outer: Option<usize>) -> Self {
        let start = begin_document(out);
        Compound {
            out,
            start,
            outer,
            index: 0,
            type_pos: 0,
        }
    }

    fn array_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        let type_pos = self.out.len();
        self.out.push(0);
        write_decimal_key(self.out, self.index as i128);
        self.index += 1;
        value.serialize(ValueSerializer {
            out: &mut *self.out,
            type_pos: Some(type_pos),
        })
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<()> {
        let type_pos = begin_element(self.out, key)?;
        value.serialize(ValueSerializer {
            out: &mut *self.out,
            type_pos: Some(type_pos),
        })
    }

    fn finish(self) -> Result<()> {
        end_document(self.out, self.start)?;
        match self.outer {
            Some(outer) => end_document(self.out, outer),
            None => Ok(()),
        }
    }
}

macro_rules! compound_impls {
    ($($trait:ident::$method:ident($($key:ident: $key_ty:ty,)?) => $write:ident),* $(,)?) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = BsonError;

            fn $method<T: Serialize + ?Sized>(&mut self, $($key: $key_ty,)? value: &T) -> Result<()> {
                self.$write($($key,)? value)
            }

            fn end(self) -> Result<()> {
                self.finish()
            }
        }
    )*};
}

compound_impls! {
    SerializeSeq::serialize_element() => array_element,
    SerializeTuple::serialize_element() => array_element,
    SerializeTupleStruct::serialize_field() => array_element,
    SerializeTupleVariant::serialize_field() => array_element,
    SerializeStruct::serialize_field(key: &'static str,) => field,
    SerializeStructVariant::serialize_field(key: &'static str,) => field,
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = BsonError;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<()> {
        self.type_pos = self.out.len();
        self.out.push(0);
        key.serialize(KeySerializer {
            out: &mut *self.out,
        })
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        value.serialize(ValueSerializer {
            out: &mut *self.out,
            type_pos: Some(self.type_pos),
        })
    }

    fn end(self) -> Result<()> {
        self.finish()
    }
}

/// Writes a map key as a C string. Accepts strings, chars, unit variants and
/// integers; anything else is [`BsonError::KeyMustBeString`].
struct KeySerializer<'a> {
    out: &'a mut Vec<u8>,
}

macro_rules! integer_keys {
    ($($method:ident($ty:ty)),* $(,)?) => {$(
        fn $method(self, v: $ty) -> Result<()> {
            write_decimal_key(self.out, v.into());
            Ok(())
        }
    )*};
}

macro_rules! reject_keys {
    ($($method:ident($($arg:ty),*) -> $ret:ty),* $(,)?) => {$(
        fn $method(self, $(_: $arg),*) -> Result<$ret> {
            Err(BsonError::KeyMustBeString)
        }
    )*};
}

impl ser::Serializer for KeySerializer<'_> {
    type Ok = ();
    type Error = BsonError;
    type SerializeSeq = Impossible<(), BsonError>;
    type SerializeTuple = Impossible<(), BsonError>;
    type SerializeTupleStruct = Impossible<(), BsonError>;
    type SerializeTupleVariant = Impossible<(), BsonError>;
    type SerializeMap = Impossible<(), BsonError>;
    type SerializeStruct = Impossible<(), BsonError>;
    type SerializeStructVariant = Impossible<(), BsonError>;

    fn serialize_str(self, v: &str) -> Result<()> {
        write_cstring(self.out, v)
    }

    fn serialize_char(self, v: char) -> Result<()> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<()> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<()> {
        value.serialize(self)
    }

    integer_keys! {
        serialize_i8(i8), serialize_i16(i16), serialize_i32(i32), serialize_i64(i64),
        serialize_u8(u8), serialize_u16(u16), serialize_u32(u32), serialize_u64(u64),
    }

    fn serialize_i128(self, v: i128) -> Result<()> {
        write_decimal_key(self.out, v);
        Ok(())
    }

    reject_keys! {
        serialize_bool(bool) -> (), serialize_u128(u128) -> (), serialize_f32(f32) -> (),
        serialize_f64(f64) -> (), serialize_bytes(&[u8]) -> (), serialize_none() -> (),
        serialize_unit() -> (), serialize_unit_struct(&'static str) -> (),
        serialize_seq(Option<usize>) -> Self::SerializeSeq,
        serialize_tuple(usize) -> Self::SerializeTuple,
        serialize_tuple_struct(&'static str, usize) -> Self::SerializeTupleStruct,
        serialize_tuple_variant(&'static str, u32, &'static str, usize)
            -> Self::SerializeTupleVariant,
        serialize_map(Option<usize>) -> Self::SerializeMap,
        serialize_struct(&'static str, usize) -> Self::SerializeStruct,
        serialize_struct_variant(&'static str, u32, &'static str, usize)
            -> Self::SerializeStructVariant,
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<()> {
        Err(BsonError::KeyMustBeString)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<()> {
        Err(BsonError::KeyMustBeString)
    }
}

#[cfg(test)]
mod tests {
    use super::super::BsonError;
    use super::to_vec;
    use serde::Serialize;
    use serde_json::json;
    use std::collections::BTreeMap;

    #[test]
    fn spec_examples() {
        let hello = to_vec(&json!({"hello": "world"})).unwrap();
        assert_eq!(
            hello,
            b"\x16\x00\x00\x00\x02hello\x00\x06\x00\x00\x00world\x00\x00"
        );

        #[derive(Serialize)]
        #[allow(non_snake_case)]
        struct Example {
            BSON: (&'static str, f64, i32),
        }
        let bytes = to_vec(&Example {
            BSON: ("awesome", 5.05, 1986),
        })
        .unwrap();
        let expected =
            b"\x31\x00\x00\x00\x04BSON\x00\x26\x00\x00\x00\x020\x00\x08\x00\x00\x00awesome\x00\
            \x011\x00\x33\x33\x33\x33\x33\x33\x14\x40\x102\x00\xc2\x07\x00\x00\x00\x00";
        assert_eq!(bytes, expected);
    }

    /// Serializes `{"k": value}` and returns the element's type byte and payload.
    fn single<T: Serialize>(value: T) -> (u8, Vec<u8>) {
        let bytes = to_vec(&BTreeMap::from([("k", value)])).unwrap();
        assert_eq!(bytes[..4], (bytes.len() as i32).to_le_bytes());
        assert_eq!(&bytes[5..7], b"k\0");
        (bytes[4], bytes[7..bytes.len() - 1].to_vec())
    }

    #[test]
    fn scalar_mapping() {
        assert_eq!(single(-1i8), (0x10, vec![0xff; 4]));
        assert_eq!(single(7u16), (0x10, vec![7, 0, 0, 0]));
        assert_eq!(single(i32::MIN), (0x10, i32::MIN.to_le_bytes().to_vec()));
        assert_eq!(single(5u32), (0x10, vec![5, 0, 0, 0]));
        assert_eq!(
            single(u32::MAX),
            (0x12, i64::from(u32::MAX).to_le_bytes().to_vec())
        );
        assert_eq!(single(5i64), (0x12, 5i64.to_le_bytes().to_vec()));
        assert_eq!(
            single(i64::MAX as u64),
            (0x12, i64::MAX.to_le_bytes().to_vec())
        );
        assert_eq!(single(0.5f32), (0x01, 0.5f64.to_le_bytes().to_vec()));
        assert_eq!(single(true), (0x08, vec![1]));
        assert_eq!(single(None::<i32>), (0x0A, vec![]));
        assert_eq!(single(()), (0x0A, vec![]));
        assert_eq!(
            single('é'),
            (0x02, b"\x03\x00\x00\x00\xc3\xa9\x00".to_vec())
        );
        // A plain `Vec<u8>` is a sequence (an array); only `serialize_bytes` makes binary.
        assert_eq!(single(vec![1u8]).0, 0x04);
        struct Raw;
        impl Serialize for Raw {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(b"\x01\x02")
            }
        }
        assert_eq!(single(Raw), (0x05, vec![2, 0, 0, 0, 0, 1, 2]));
    }

    #[test]
    fn enum_encodings() {
        #[derive(Serialize)]
        enum E {
            Unit,
            New(i32),
            Tuple(i32, i32),
            Struct { x: i32 },
        }
        assert_eq!(
            single(E::Unit),
            (0x02, b"\x05\x00\x00\x00Unit\x00".to_vec())
        );
        let (ty, payload) = single(E::New(1));
        assert_eq!(ty, 0x03);
        assert_eq!(payload, b"\x0e\x00\x00\x00\x10New\x00\x01\x00\x00\x00\x00");
        let (ty, payload) = single(E::Tuple(1, 2));
        assert_eq!(
            (ty, payload[4], &payload[5..11]),
            (0x03, 0x04, &b"Tuple\0"[..])
        );
        let (ty, payload) = single(E::Struct { x: 3 });
        assert_eq!(
            (ty, payload[4], &payload[5..12]),
            (0x03, 0x03, &b"Struct\0"[..])
        );
        // Non-unit variants are documents and may stand at the top level.
        assert_eq!(
            to_vec(&E::New(1)).unwrap(),
            b"\x0e\x00\x00\x00\x10New\x00\x01\x00\x00\x00\x00"
        );
        assert!(matches!(
            to_vec(&E::Unit),
            Err(BsonError::NotADocument { .. })
        ));
    }

    #[test]
    fn errors() {
        for value in [json!(1), json!("s"), json!([1]), json!(null), json!(true)] {
            let err = to_vec(&value).unwrap_err();
            assert!(matches!(err, BsonError::NotADocument { .. }), "{err}");
        }
        let err = to_vec(&json!({"a\0b": 1})).unwrap_err();
        assert!(matches!(err, BsonError::KeyContainsNul { .. }), "{err}");
        let err = to_vec(&BTreeMap::from([("big", u64::MAX)])).unwrap_err();
        assert_eq!(
            err,
            BsonError::IntegerOutOfRange {
                value: u64::MAX.to_string()
            }
        );
        let err = to_vec(&BTreeMap::from([((1, 2), 1)])).unwrap_err();
        assert_eq!(err, BsonError::KeyMustBeString);
        let err = to_vec(&BTreeMap::from([(true, 1)])).unwrap_err();
        assert_eq!(err, BsonError::KeyMustBeString);
    }

    #[test]
    fn integer_keys_and_array_indexes() {
        let bytes = to_vec(&BTreeMap::from([(-12i64, 0u8), (i64::MAX, 1)])).unwrap();
        let needle = |s: &[u8]| bytes.windows(s.len()).any(|w| w == s);
        assert!(needle(b"\x10-12\0") && needle(b"\x109223372036854775807\0"));
        let bytes = to_vec(&json!({"a": vec![0; 12]})).unwrap();
        let needle = |s: &[u8]| bytes.windows(s.len()).any(|w| w == s);
        assert!(needle(b"\x129\0") && needle(b"\x1211\0"));
    }
}
