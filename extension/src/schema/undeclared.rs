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

use std::borrow::Cow;
use std::ops::Range;

use rusqlite::types::{Value, ValueRef};
use rusqlite::Connection;

use crate::error::{OpliteError, Result};
use crate::sqlite::{register_function, Purity};

/// One top-level member: its key and where `"key":value` is in the text.
struct Member<'a> {
    key: Cow<'a, str>,
    span: Range<usize>,
}

/// The top-level members of the JSON object `text`; `Ok(None)` if `text`
/// is JSON but not an object.
fn members(text: &str) -> std::result::Result<Option<Vec<Member<'_>>>, ()> {
    let bytes = text.as_bytes();
    let mut i = skip_ws(bytes, 0);
    match bytes.get(i) {
        Some(b'{') => {}
        // Not an object: valid JSON is kept whole (rare, so serde checks it).
        Some(_) => return serde_json::from_str::<serde::de::IgnoredAny>(text).map(|_| None).map_err(|_| ()),
        None => return Err(()),
    }
    i += 1;
    let mut out = Vec::new();
    loop {
        i = skip_ws(bytes, i);
        match bytes.get(i) {
            Some(b'}') if out.is_empty() => break,
            Some(b'"') => {}
            _ => return Err(()),
        }
        let start = i;
        let key_end = skip_string(bytes, i)?;
        let raw_key = &text[start + 1..key_end - 1];
        let key = if raw_key.contains('\\') {
            Cow::Owned(serde_json::from_str::<String>(&text[start..key_end]).map_err(|_| ())?)
        } else {
            Cow::Borrowed(raw_key)
        };
        i = skip_ws(bytes, key_end);
        if bytes.get(i) != Some(&b':') {
            return Err(());
        }
        i = skip_ws(bytes, i + 1);
        let end = skip_value(bytes, i)?;
        out.push(Member { key, span: start..end });
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
    Ok(Some(out))
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
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

/// The index after the value starting at `i`.
fn skip_value(bytes: &[u8], mut i: usize) -> std::result::Result<usize, ()> {
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

/// The members of `data` whose keys are not in `declared`, as a JSON
/// object text, or None if there are none.
pub fn undeclared_members(data: &str, declared: &[&str]) -> Result<Option<String>> {
    let malformed = || OpliteError::Malformed { what: "synced row", message: "malformed JSON".into() };
    let Some(members) = members(data).map_err(|_| malformed())? else {
        return Ok(Some(data.to_owned()));
    };
    let extra: Vec<&Member<'_>> = members.iter().filter(|m| !declared.contains(&m.key.as_ref())).collect();
    if extra.is_empty() {
        return Ok(None);
    }
    let mut out = String::with_capacity(data.len());
    out.push('{');
    for (n, member) in extra.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push_str(&data[member.span.clone()]);
    }
    out.push('}');
    Ok(Some(out))
}

pub(super) fn register(db: &Connection) -> Result<()> {
    register_function(
        db,
        "oplite_undeclared",
        -1,
        Purity::Deterministic,
        Box::new(|_, args| {
            let data = match args.first() {
                Some(ValueRef::Text(t)) => String::from_utf8_lossy(t),
                _ => return Ok(Value::Null),
            };
            let declared: Vec<&str> = args[1..]
                .iter()
                .filter_map(|v| if let ValueRef::Text(t) = v { std::str::from_utf8(t).ok() } else { None })
                .collect();
            Ok(undeclared_members(&data, &declared)?.map_or(Value::Null, Value::Text))
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::undeclared_members;

    #[test]
    fn keeps_only_undeclared_members_as_they_came() {
        let d = ["a", "b.c", "q\"k"];
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
