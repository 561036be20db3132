//! `oplite_undeclared(data, key, ...)`: the members of a JSON object that
//! the schema does not declare, or NULL when there are none.
//!
//! Every synced row written to a typed table needs this for its
//! `ps_undeclared` column. `json_remove(data, <declared paths>)` gives the
//! same members, but copies, edits and re-renders the whole object for
//! every row, and measured as much as all the `json_extract` calls of the
//! row together (100k rows of 5 fields: 105 ms of extraction, 112 ms of
//! json_remove). Usually the server sends only declared fields, so a single
//! scan of the top-level keys answers "none" without building anything;
//! when there are others, their members are copied as they arrived.
//!
//! Text that is not a JSON object is returned as it is (as `json_remove`
//! returns an array); text that is not JSON at all is an error, so callers
//! treat it like `json_extract` does.

use std::ops::Range;

use rusqlite::types::{Value, ValueRef};
use rusqlite::Connection;

use crate::error::{OpliteError, Result};
use crate::sqlite::{register_function, Purity};

/// Calls `member(key, span)` for each top-level member of the JSON object
/// `text` (`key` raw, without quotes; `span` covers `"key":value`), in
/// order. `Ok(false)` if `text` is JSON but not an object.
fn for_each_member(text: &[u8], mut member: impl FnMut(&[u8], Range<usize>)) -> std::result::Result<bool, ()> {
    let bytes = text;
    let mut i = skip_ws(bytes, 0);
    match bytes.get(i) {
        Some(b'{') => {}
        // Not an object: valid JSON is kept whole (rare, so serde checks it).
        Some(_) => return serde_json::from_slice::<serde::de::IgnoredAny>(text).map(|_| false).map_err(|_| ()),
        None => return Err(()),
    }
    i += 1;
    let mut first = true;
    loop {
        i = skip_ws(bytes, i);
        match bytes.get(i) {
            Some(b'}') if first => break,
            Some(b'"') => {}
            _ => return Err(()),
        }
        first = false;
        let start = i;
        let key_end = skip_string(bytes, i)?;
        i = skip_ws(bytes, key_end);
        if bytes.get(i) != Some(&b':') {
            return Err(());
        }
        i = skip_ws(bytes, i + 1);
        let end = skip_value(bytes, i)?;
        member(&bytes[start + 1..key_end - 1], start..end);
        i = skip_ws(bytes, end);
        match bytes.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => break,
            _ => return Err(()),
        }
    }
    if skip_ws(bytes, i + 1) != bytes.len() {
        return Err(());
    }
    Ok(true)
}

pub(super) fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while matches!(bytes.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// The index after the string starting at `i` (a `"`).
fn skip_string(bytes: &[u8], mut i: usize) -> std::result::Result<usize, ()> {
    i += 1;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => return Ok(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    Err(())
}

/// The index after the value starting at `i` (checks only its brackets
/// and quotes).
pub(super) fn skip_value(bytes: &[u8], mut i: usize) -> std::result::Result<usize, ()> {
    match bytes.get(i) {
        Some(b'"') => skip_string(bytes, i),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            while let Some(&b) = bytes.get(i) {
                match b {
                    b'"' => {
                        i = skip_string(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            Err(())
        }
        Some(_) => {
            let start = i;
            while let Some(&b) = bytes.get(i) {
                if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                    break;
                }
                i += 1;
            }
            if i == start {
                Err(())
            } else {
                Ok(i)
            }
        }
        None => Err(()),
    }
}

/// True if the raw (still escaped) key `raw` is one of `declared`.
fn is_declared(raw: &[u8], declared: &[&[u8]]) -> bool {
    if !raw.contains(&b'\\') {
        return declared.contains(&raw);
    }
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    serde_json::from_slice::<String>(&quoted).is_ok_and(|key| declared.contains(&key.as_bytes()))
}

/// The members of `data` whose keys are not in `declared`, as a JSON
/// object text, or None if there are none.
pub fn undeclared_members(data: &[u8], declared: &[&[u8]]) -> Result<Option<String>> {
    let malformed = || OpliteError::StoredData { what: "synced row", message: "malformed JSON".into() };
    let mut extra: Option<Vec<u8>> = None;
    let is_object = for_each_member(data, |key, span| {
        if !is_declared(key, declared) {
            let out = extra.get_or_insert_with(|| {
                let mut v = Vec::with_capacity(data.len());
                v.push(b'{');
                v
            });
            if out.len() > 1 {
                out.push(b',');
            }
            out.extend_from_slice(&data[span]);
        }
    })
    .map_err(|_| malformed())?;
    if !is_object {
        return Ok(Some(String::from_utf8_lossy(data).into_owned()));
    }
    Ok(extra.map(|mut out| {
        out.push(b'}');
        String::from_utf8_lossy(&out).into_owned()
    }))
}

pub(super) fn register(db: &Connection) -> Result<()> {
    register_function(
        db,
        "oplite_undeclared",
        -1,
        Purity::Deterministic,
        Box::new(|_, args| {
            let Some(ValueRef::Text(data)) = args.first() else { return Ok(Value::Null) };
            let mut declared: [&[u8]; 120] = [&[]; 120];
            let mut count = 0;
            for arg in args[1..].iter().take(declared.len()) {
                if let ValueRef::Text(t) = arg {
                    declared[count] = t;
                    count += 1;
                }
            }
            Ok(undeclared_members(data, &declared[..count])?.map_or(Value::Null, Value::Text))
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::undeclared_members;

    #[test]
    fn keeps_only_undeclared_members_as_they_came() {
        let d: [&[u8]; 3] = [b"a", b"b.c", b"q\"k"];
        let undeclared_members = |data: &str, d: &[&[u8]]| undeclared_members(data.as_bytes(), d);
        assert_eq!(undeclared_members(r#"{"a":1,"b.c":[1,{"x":"}"}]}"#, &d).unwrap(), None);
        assert_eq!(
            undeclared_members(r#" { "a" : 1 , "x" : [1, 2] , "y":{"z":"\"}"},"b.c":null } "#, &d).unwrap().as_deref(),
            Some(r#"{"x" : [1, 2],"y":{"z":"\"}"}}"#)
        );
        assert_eq!(undeclared_members(r#"{"q\"k":1,"\u0061":2,"n":-1.5e3}"#, &d).unwrap().as_deref(), Some(r#"{"n":-1.5e3}"#));
        assert_eq!(undeclared_members("{}", &d).unwrap(), None);
        assert_eq!(undeclared_members("[1,2]", &d).unwrap().as_deref(), Some("[1,2]"));
        for bad in ["", "not json", "{", r#"{"a":}"#, r#"{"a" 1}"#, r#"{"a":1,}"#, r#"{"a":"x}"#, "{} x"] {
            assert!(undeclared_members(bad, &d).is_err(), "{bad:?}");
        }
    }
}
