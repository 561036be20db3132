//! The JSON text of upload-queue entries, built from native SQLite values.
//!
//! The reference core builds an entry by rendering the row with SQLite's
//! `json_object`, parsing that again in `powersync_diff` and serialising the
//! result: keys come out sorted, nulls dropped from PUT data, numbers in
//! serde_json's shortest form (`1e+20`, `2.0`). oplite renders the values
//! directly in that final form, once, from the values the trigger passes
//! (see [`super::triggers`] for the argument layout): no JSON is parsed on
//! the write path.
//!
//! Equality for PATCH follows the reference too: two values are the same
//! when they would be the same JSON value, so `1` and `1.0` differ, and text
//! compares by content.
//!
//! Triggers pass columns as `name, value` pairs (PUT) or `name, old, new`
//! triples (PATCH). SQLite limits a call to 127 arguments on older builds,
//! so wide tables pass BLOB chunks made by `oplite_crud_chunk` in place of a
//! name; [`read_items`] reads both forms.

use std::borrow::Cow;

use rusqlite::types::ValueRef;

use crate::error::{OpliteError, Result};

/// Flag for `oplite_put_entry`: the key order of insert-only tables
/// (`op, type, id, data`).
pub const PUT_INSERT_ONLY: i64 = 1;
/// Flag for `oplite_patch_entry`: `old` holds the old values of changed
/// columns only (`include_old_only_when_changed`).
pub const PATCH_OLD_WHEN_CHANGED: i64 = 1;

/// Appends `value` as JSON. BLOBs and infinite reals have no JSON form.
pub fn write_value(out: &mut String, value: ValueRef<'_>) -> Result<()> {
    use std::fmt::Write;
    match value {
        ValueRef::Null => out.push_str("null"),
        ValueRef::Integer(i) => {
            let _ = write!(out, "{i}");
        }
        ValueRef::Real(r) => {
            if !r.is_finite() {
                return Err(json_error("JSON cannot hold infinite values"));
            }
            // serde_json's own formatter: `1e+20`, `2.0`, `0.3333333333333333`.
            out.push_str(zmij::Buffer::new().format_finite(r));
        }
        ValueRef::Text(bytes) => write_string(out, &String::from_utf8_lossy(bytes)),
        ValueRef::Blob(_) => return Err(json_error("JSON cannot hold BLOB values")),
    }
    Ok(())
}

/// Appends `text` as a JSON string, escaped as serde_json does: `"` and
/// `\`, the short escapes `\b \f \n \r \t`, other control characters as
/// `\u00xx`; everything else (DEL and non-ASCII included) as it is.
pub fn write_string(out: &mut String, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(text.len() + 2);
    out.push('"');
    let mut start = 0;
    for (i, byte) in text.bytes().enumerate() {
        let escape: &str = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&text[start..i]);
        if escape.is_empty() {
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0xf)]));
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&text[start..]);
    out.push('"');
}

fn json_error(message: &str) -> OpliteError {
    OpliteError::InvalidArgument { function: "upload queue", message: message.to_owned(), type_mismatch: true }
}

/// True when `a` and `b` are the same JSON value.
pub fn same_value(a: ValueRef<'_>, b: ValueRef<'_>) -> bool {
    match (a, b) {
        (ValueRef::Null, ValueRef::Null) => true,
        (ValueRef::Integer(x), ValueRef::Integer(y)) => x == y,
        (ValueRef::Real(x), ValueRef::Real(y)) => x == y,
        (ValueRef::Text(x), ValueRef::Text(y)) => x == y,
        (ValueRef::Blob(x), ValueRef::Blob(y)) => x == y,
        _ => false,
    }
}

/// One column as a trigger passes it: its name and one value (PUT) or the
/// old and the new value (PATCH).
pub struct Item<'a> {
    /// The column name.
    pub name: Cow<'a, str>,
    /// One or two values.
    pub values: [ValueRef<'a>; 2],
}

/// Reads the variadic tail of the crud functions: `arity` values per name,
/// or BLOB chunks from [`encode_chunk`].
pub fn read_items<'a>(args: &[ValueRef<'a>], arity: usize) -> Result<Vec<Item<'a>>> {
    let mut items = Vec::with_capacity(args.len() / (arity + 1) + 1);
    let mut i = 0;
    while i < args.len() {
        match args[i] {
            ValueRef::Text(name) => {
                if i + arity >= args.len() {
                    return Err(OpliteError::Internal(format!("column {} has no value", String::from_utf8_lossy(name))));
                }
                let name = String::from_utf8_lossy(name);
                let values = if arity == 1 { [args[i + 1], ValueRef::Null] } else { [args[i + 1], args[i + 2]] };
                items.push(Item { name, values });
                i += arity + 1;
            }
            ValueRef::Blob(chunk) => {
                decode_chunk(chunk, arity, &mut items)?;
                i += 1;
            }
            _ => return Err(OpliteError::Internal("a column name must be text".into())),
        }
    }
    // Triggers pass columns sorted already; only chunks need sorting.
    if !items.windows(2).all(|w| w[0].name <= w[1].name) {
        items.sort_by(|a, b| a.name.cmp(&b.name));
    }
    Ok(items)
}

/// Encodes `name, value...` groups of `arity` values into one BLOB, for
/// tables too wide for one function call.
pub fn encode_chunk(args: &[ValueRef<'_>], arity: usize) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for group in args.chunks(arity + 1) {
        if group.len() != arity + 1 {
            return Err(OpliteError::Internal("oplite_crud_chunk: incomplete column".into()));
        }
        let ValueRef::Text(name) = group[0] else {
            return Err(OpliteError::Internal("oplite_crud_chunk: a column name must be text".into()));
        };
        put_bytes(&mut out, name);
        for value in &group[1..] {
            match *value {
                ValueRef::Null => out.push(0),
                ValueRef::Integer(i) => {
                    out.push(1);
                    out.extend_from_slice(&i.to_le_bytes());
                }
                ValueRef::Real(r) => {
                    out.push(2);
                    out.extend_from_slice(&r.to_le_bytes());
                }
                ValueRef::Text(t) => {
                    out.push(3);
                    put_bytes(&mut out, t);
                }
                ValueRef::Blob(_) => return Err(json_error("JSON cannot hold BLOB values")),
            }
        }
    }
    Ok(out)
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

fn decode_chunk<'a>(mut chunk: &'a [u8], arity: usize, items: &mut Vec<Item<'a>>) -> Result<()> {
    let corrupt = || OpliteError::Internal("corrupt column chunk".into());
    fn take<'b>(chunk: &mut &'b [u8], n: usize) -> Option<&'b [u8]> {
        if chunk.len() < n {
            return None;
        }
        let (head, tail) = chunk.split_at(n);
        *chunk = tail;
        Some(head)
    }
    fn take_bytes<'b>(chunk: &mut &'b [u8]) -> Option<&'b [u8]> {
        let len = u32::from_le_bytes(take(chunk, 4)?.try_into().ok()?) as usize;
        take(chunk, len)
    }
    while !chunk.is_empty() {
        let name = String::from_utf8_lossy(take_bytes(&mut chunk).ok_or_else(corrupt)?);
        let mut values = [ValueRef::Null, ValueRef::Null];
        for value in values.iter_mut().take(arity) {
            let tag = take(&mut chunk, 1).ok_or_else(corrupt)?[0];
            *value = match tag {
                0 => ValueRef::Null,
                1 => ValueRef::Integer(i64::from_le_bytes(take(&mut chunk, 8).ok_or_else(corrupt)?.try_into().map_err(|_| corrupt())?)),
                2 => ValueRef::Real(f64::from_le_bytes(take(&mut chunk, 8).ok_or_else(corrupt)?.try_into().map_err(|_| corrupt())?)),
                3 => ValueRef::Text(take_bytes(&mut chunk).ok_or_else(corrupt)?),
                _ => return Err(corrupt()),
            };
        }
        items.push(Item { name, values });
    }
    Ok(())
}

/// Appends `{"name":value,...}` for the items `keep` selects, value
/// `values[which]`.
fn write_object(out: &mut String, items: &[Item<'_>], which: usize, keep: impl Fn(&Item<'_>) -> bool) -> Result<()> {
    out.push('{');
    let mut first = true;
    for item in items.iter().filter(|item| keep(item)) {
        if !first {
            out.push(',');
        }
        first = false;
        write_string(out, &item.name);
        out.push(':');
        write_value(out, item.values[which])?;
    }
    out.push('}');
    Ok(())
}

/// The common head of an entry: `{"op":..,"id":..,"type":..`.
fn write_head(out: &mut String, op: &str, id: ValueRef<'_>, row_type: &str, insert_only: bool) -> Result<()> {
    out.push_str("{\"op\":");
    write_string(out, op);
    if insert_only {
        out.push_str(",\"type\":");
        write_string(out, row_type);
        out.push_str(",\"id\":");
        write_value(out, id)?;
    } else {
        out.push_str(",\"id\":");
        write_value(out, id)?;
        out.push_str(",\"type\":");
        write_string(out, row_type);
    }
    Ok(())
}

/// Appends `,"old":<raw>` and `,"metadata":"..."` (metadata only when it is
/// text, as the reference does), then closes the entry.
fn write_tail(out: &mut String, old: Option<&str>, metadata: ValueRef<'_>) {
    if let Some(old) = old {
        out.push_str(",\"old\":");
        out.push_str(old);
    }
    if let ValueRef::Text(text) = metadata {
        out.push_str(",\"metadata\":");
        write_string(out, &String::from_utf8_lossy(text));
    }
    out.push('}');
}

/// A PUT entry: `data` holds the non-null columns.
pub fn put_entry(row_type: &str, id: ValueRef<'_>, metadata: ValueRef<'_>, flags: i64, items: &[Item<'_>]) -> Result<String> {
    let insert_only = flags & PUT_INSERT_ONLY != 0;
    let mut out = String::with_capacity(64 + items.len() * 16);
    write_head(&mut out, "PUT", id, row_type, insert_only)?;
    out.push_str(",\"data\":");
    write_object(&mut out, items, 0, |item| !matches!(item.values[0], ValueRef::Null))?;
    write_tail(&mut out, None, if insert_only { ValueRef::Null } else { metadata });
    Ok(out)
}

/// A PATCH entry: `data` holds the changed columns' new values. `old` is
/// either given (`old_values`, JSON text the trigger rendered) or, with
/// [`PATCH_OLD_WHEN_CHANGED`], the changed columns' old values, limited to
/// `old_columns` when that is set.
pub fn patch_entry(
    row_type: &str,
    id: ValueRef<'_>,
    metadata: ValueRef<'_>,
    flags: i64,
    old_values: Option<&str>,
    old_columns: Option<&[String]>,
    items: &[Item<'_>],
) -> Result<String> {
    let mut out = String::with_capacity(64 + items.len() * 16);
    write_head(&mut out, "PATCH", id, row_type, false)?;
    out.push_str(",\"data\":");
    let changed = |item: &Item<'_>| !same_value(item.values[0], item.values[1]);
    write_object(&mut out, items, 1, changed)?;
    let computed_old;
    let old = if flags & PATCH_OLD_WHEN_CHANGED != 0 {
        let mut text = String::new();
        write_object(&mut text, items, 0, |item| {
            changed(item) && old_columns.is_none_or(|names| names.iter().any(|n| *n == item.name))
        })?;
        computed_old = text;
        Some(computed_old.as_str())
    } else {
        old_values
    };
    write_tail(&mut out, old, metadata);
    Ok(out)
}

/// A DELETE entry.
pub fn delete_entry(row_type: &str, id: ValueRef<'_>, metadata: ValueRef<'_>, old_values: Option<&str>) -> Result<String> {
    let mut out = String::with_capacity(64);
    write_head(&mut out, "DELETE", id, row_type, false)?;
    write_tail(&mut out, old_values, metadata);
    Ok(out)
}

/// An entry from the reference's `powersync_crud(op, id, type, data,
/// old_values, metadata, options)` columns, where `data` and `old_values`
/// are JSON text already.
pub fn raw_entry(op: &str, id: ValueRef<'_>, row_type: &str, data: Option<&str>, old: Option<&str>, metadata: ValueRef<'_>) -> Result<String> {
    let mut out = String::with_capacity(64 + data.map_or(0, str::len));
    write_head(&mut out, op, id, row_type, false)?;
    if let Some(data) = data {
        out.push_str(",\"data\":");
        out.push_str(data);
    }
    write_tail(&mut out, old, metadata);
    Ok(out)
}

/// True for a complete ps_crud entry that is a PATCH with `data` `{}` (what
/// the `IGNORE_EMPTY_UPDATE` option of `powersync_crud_` skips). Entries
/// that are not JSON objects are not empty patches.
pub fn is_empty_patch(entry: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Entry<'a> {
        #[serde(borrow)]
        op: Option<Cow<'a, str>>,
        data: Option<serde_json::Map<String, serde_json::Value>>,
    }
    serde_json::from_str::<Entry<'_>>(entry).is_ok_and(|e| e.op.as_deref() == Some("PATCH") && e.data.is_some_and(|d| d.is_empty()))
}

/// Joins JSON object texts with disjoint keys into one object, keeping each
/// text as it is (for `old` values of wide tables, rendered in chunks).
pub fn merge_objects(objects: &[&str]) -> String {
    let mut out = String::from("{");
    for object in objects {
        let inner = object.trim().trim_start_matches('{').trim_end_matches('}').trim();
        if inner.is_empty() {
            continue;
        }
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(inner);
    }
    out.push('}');
    out
}

/// `powersync_json_merge(object, ...)` as the reference core does it: plain
/// concatenation of what lies between each argument's outer braces, with
/// no parsing (an empty object after the first argument leaves a trailing
/// comma, as there). NULL arguments (`None`) are skipped, as core 0.5.4
/// does, so `powersync_json_merge('{"a":1}', NULL)` is `{"a":1}` and an
/// all-NULL call `{}`. Any other argument that does not start with `{`
/// and end with `}` is an error.
pub fn concat_present_objects(objects: &[Option<&str>]) -> Result<String> {
    let mut out = String::from("{");
    for object in objects.iter().flatten() {
        let inner = object
            .strip_prefix('{')
            .and_then(|o| o.strip_suffix('}'))
            .ok_or_else(|| OpliteError::InvalidArgument {
                function: "powersync_json_merge",
                message: "Expected json object".into(),
                type_mismatch: false,
            })?;
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(inner);
    }
    out.push('}');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> ValueRef<'_> {
        ValueRef::Text(s.as_bytes())
    }

    fn render(v: ValueRef<'_>) -> String {
        let mut out = String::new();
        write_value(&mut out, v).unwrap();
        out
    }

    #[test]
    fn values_render_like_the_reference() {
        assert_eq!(render(ValueRef::Real(1e20)), "1e+20");
        assert_eq!(render(ValueRef::Real(2.0)), "2.0");
        assert_eq!(render(ValueRef::Real(1.0 / 3.0)), "0.3333333333333333");
        assert_eq!(render(ValueRef::Real(1.5e-7)), "1.5e-7");
        assert_eq!(render(ValueRef::Real(0.00001)), "0.00001");
        assert_eq!(render(ValueRef::Real(-0.0)), "-0.0");
        assert_eq!(render(ValueRef::Integer(-5)), "-5");
        assert_eq!(render(t("a\"b\\c\u{1}\té/")), r#""a\"b\\c\u0001\té/""#);
        let mut out = String::new();
        assert!(write_value(&mut out, ValueRef::Blob(b"x")).unwrap_err().to_string().contains("BLOB"));
        assert!(write_value(&mut out, ValueRef::Real(f64::INFINITY)).is_err());
    }

    #[test]
    fn strings_escape_like_serde_json() {
        for text in ["plain", "a\"b\\c", "\u{0}\u{1}\u{8}\u{c}\n\r\t\u{1f}\u{7f}", "é ü 😀", "</script>", ""] {
            let mut out = String::new();
            write_string(&mut out, text);
            assert_eq!(out, serde_json::to_string(text).unwrap(), "{text:?}");
        }
        for r in [0.1, 1e20, 1e16, 1e15, 1e-5, 1e-6, 2.5e-300, f64::MAX, f64::MIN_POSITIVE, 5e-324, -0.0, 123456.789] {
            let mut out = String::new();
            write_value(&mut out, ValueRef::Real(r)).unwrap();
            assert_eq!(out, serde_json::to_string(&r).unwrap(), "{r}");
        }
    }

    #[test]
    fn put_sorts_keys_and_drops_nulls() {
        let args = [t("c"), ValueRef::Integer(1), t("a"), ValueRef::Null, t("b"), t("x")];
        let items = read_items(&args, 1).unwrap();
        assert_eq!(
            put_entry("t", t("1"), t("m"), 0, &items).unwrap(),
            r#"{"op":"PUT","id":"1","type":"t","data":{"b":"x","c":1},"metadata":"m"}"#
        );
        assert_eq!(
            put_entry("t", t("1"), t("m"), PUT_INSERT_ONLY, &items).unwrap(),
            r#"{"op":"PUT","type":"t","id":"1","data":{"b":"x","c":1}}"#
        );
        assert_eq!(put_entry("t", t("1"), ValueRef::Integer(5), 0, &[]).unwrap(), r#"{"op":"PUT","id":"1","type":"t","data":{}}"#);
    }

    #[test]
    fn patch_keeps_changed_columns() {
        let args = [
            t("a"), t("x"), t("y"),
            t("b"), ValueRef::Integer(1), ValueRef::Real(1.0),
            t("c"), ValueRef::Null, ValueRef::Null,
            t("d"), ValueRef::Integer(2), ValueRef::Null,
        ];
        let items = read_items(&args, 2).unwrap();
        assert_eq!(
            patch_entry("t", t("1"), ValueRef::Null, 0, Some(r#"{"a":"x"}"#), None, &items).unwrap(),
            r#"{"op":"PATCH","id":"1","type":"t","data":{"a":"y","b":1.0,"d":null},"old":{"a":"x"}}"#
        );
        let only = vec!["a".to_string(), "c".to_string()];
        assert_eq!(
            patch_entry("t", t("1"), ValueRef::Null, PATCH_OLD_WHEN_CHANGED, None, Some(&only), &items).unwrap(),
            r#"{"op":"PATCH","id":"1","type":"t","data":{"a":"y","b":1.0,"d":null},"old":{"a":"x"}}"#
        );
        assert_eq!(
            patch_entry("t", t("1"), ValueRef::Null, PATCH_OLD_WHEN_CHANGED, None, None, &items).unwrap(),
            r#"{"op":"PATCH","id":"1","type":"t","data":{"a":"y","b":1.0,"d":null},"old":{"a":"x","b":1,"d":2}}"#
        );
    }

    #[test]
    fn chunks_read_like_arguments() {
        let args = [t("b"), ValueRef::Integer(1), t("a"), ValueRef::Real(2.5)];
        let chunk = encode_chunk(&args, 1).unwrap();
        let mixed = [ValueRef::Blob(&chunk), t("c"), t("z")];
        let items = read_items(&mixed, 1).unwrap();
        assert_eq!(
            put_entry("t", t("1"), ValueRef::Null, 0, &items).unwrap(),
            r#"{"op":"PUT","id":"1","type":"t","data":{"a":2.5,"b":1,"c":"z"}}"#
        );
    }

    #[test]
    fn json_merge_skips_null_arguments() {
        assert_eq!(concat_present_objects(&[None, Some(r#"{"a":1}"#), None, Some("{}")]).unwrap(), r#"{"a":1,}"#);
        assert_eq!(concat_present_objects(&[None, None]).unwrap(), "{}");
        assert!(concat_present_objects(&[None, Some("")]).is_err());
    }

    #[test]
    fn delete_and_merge() {
        assert_eq!(delete_entry("t", t("1"), t("m"), Some("{}")).unwrap(), r#"{"op":"DELETE","id":"1","type":"t","old":{},"metadata":"m"}"#);
        assert_eq!(merge_objects(&[r#"{"a":1}"#, "{}", r#"{"b":null}"#]), r#"{"a":1,"b":null}"#);
    }

    #[test]
    fn empty_patches_are_recognised() {
        assert!(is_empty_patch(r#"{"op":"PATCH","id":"1","type":"t","data":{}}"#));
        assert!(is_empty_patch(r#"{"data":{},"op":"PATCH"}"#));
        assert!(!is_empty_patch(r#"{"op":"PATCH","id":"1","type":"t","data":{"a":1}}"#));
        assert!(!is_empty_patch(r#"{"op":"PUT","id":"1","type":"t","data":{}}"#));
        assert!(!is_empty_patch(r#"{"op":"PATCH","id":"1","type":"t"}"#));
        assert!(!is_empty_patch("not json"));
        assert!(!is_empty_patch(r#"{"op":"PATCH","data":[]}"#));
    }
}
