//! `oplite_field(data, keys, i)` and `oplite_row(data, keys)`: the columns
//! of a synced row, with the row's JSON decoded once for all of them
//! (`oplite_row` is the table-valued form set-wise applies join; see
//! `sqlite/row_function.rs`).
//!
//! Writing a synced row into a typed table needs the value of every declared
//! key and the members the schema does not declare. With `json_extract` per
//! column SQLite looks each path up in its parse of the row, and
//! `oplite_undeclared` scans the row once more: an `INSERT ... SELECT` of
//! 1M rows of 12 fields took 3.5 s that way, against 1.75 s for copying the
//! JSON text and 2.75 s with this function. Here the first call for a row
//! scans its text once, keeps every declared value and the undeclared
//! members, and the other calls of that row only compare the text and hand
//! out a value.
//!
//! `keys` is the JSON array of the table's declared keys (a constant of the
//! statement). For `i` below its length the result is what
//! `json_extract(data, '$."<key i>"')` returns; for `i` equal to it, what
//! `oplite_undeclared(data, <keys>)` returns. The cache holds the last row and
//! is compared by content, so the order in which SQLite evaluates the calls
//! does not matter.
//!
//! Only plain JSON takes the fast path: an object whose keys have no escapes
//! and whose values follow RFC 8259. Anything else (JSON5, a key with
//! escapes, a string holding `\u0000`, an array, text that is not JSON) is
//! answered by SQLite's own `json_extract` through a nested query, so
//! values and errors never differ from the reference core's view; the
//! undeclared members then come from [`undeclared_members`], or from
//! `json_remove` for JSON5 rows it cannot read (before, such a row was
//! stored as unreadable, with every column NULL, while the reference's view
//! reads its values).

use std::cell::RefCell;

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::Connection;

use super::quote::{json_path_text, PATHS_PER_CALL};
use super::undeclared::{skip_value, skip_ws, undeclared_members};
use crate::error::{OpliteError, Result};
use crate::sqlite::{register_emitting_function, register_row_function, CallContext, Emit, Purity, RowSource};

/// Buffers above this size are freed when rows get small again.
const LARGE_BUFFER: usize = 1 << 20;

/// A byte range of the row's text or of the decoder's scratch buffer.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Text {
    Data(usize, usize),
    Scratch(usize, usize),
}

/// A declared key's value in the last row.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Field {
    Missing,
    Null,
    Integer(i64),
    Real(f64),
    Text(Text),
}

/// A value SQLite computed, kept byte for byte (a lone surrogate escape
/// makes `json_extract` return text that is not UTF-8, which must reach the
/// table unchanged, as it did when the INSERT called `json_extract`).
#[derive(Clone, Debug, PartialEq)]
enum Raw {
    Null,
    Integer(i64),
    Real(f64),
    Text(Vec<u8>),
    Blob(Vec<u8>),
}

impl Raw {
    fn from_ref(value: ValueRef<'_>) -> Raw {
        match value {
            ValueRef::Null => Raw::Null,
            ValueRef::Integer(i) => Raw::Integer(i),
            ValueRef::Real(r) => Raw::Real(r),
            ValueRef::Text(t) => Raw::Text(t.to_vec()),
            ValueRef::Blob(b) => Raw::Blob(b.to_vec()),
        }
    }

    fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Raw::Null => ValueRef::Null,
            Raw::Integer(i) => ValueRef::Integer(*i),
            Raw::Real(r) => ValueRef::Real(*r),
            Raw::Text(t) => ValueRef::Text(t),
            Raw::Blob(b) => ValueRef::Blob(b),
        }
    }
}

/// The row is not plain JSON: SQLite's own functions must answer.
#[derive(Debug)]
struct NotPlain;

type Scan<T> = std::result::Result<T, NotPlain>;

/// The last row decoded, and the key list it was decoded for.
#[derive(Default)]
pub struct RowDecoder {
    keys_text: Vec<u8>,
    keys: Vec<Vec<u8>>,
    data: Vec<u8>,
    /// False until a row is decoded, and after the keys change.
    cached: bool,
    /// The cached row took the fast path.
    plain: bool,
    fields: Vec<Field>,
    scratch: Vec<u8>,
    /// `{...}` of the undeclared members, or empty for none.
    undeclared: Vec<u8>,
}

impl RowDecoder {
    /// Value `index` of the row `data` for the key list `keys`, or None if
    /// the row is not plain JSON (what `oplite_field` does, for the tests).
    #[cfg(test)]
    pub fn field(&mut self, keys: &[u8], data: &[u8], index: usize) -> Result<Option<ValueRef<'_>>> {
        if !self.load(keys, data)? {
            return Ok(None);
        }
        if index > self.keys.len() {
            return Err(bad_call(format!("column {index} of a row with {} keys", self.keys.len())));
        }
        Ok(Some(self.value(index)))
    }

    /// The declared keys the JSON array `keys` names, parsed when it is
    /// not the list in use.
    pub fn use_keys(&mut self, keys: &[u8]) -> Result<&[Vec<u8>]> {
        if keys != self.keys_text.as_slice() {
            let parsed: Vec<String> = serde_json::from_slice(keys)
                .map_err(|e| bad_call(format!("keys must be a JSON array of strings: {e}")))?;
            self.keys = parsed.into_iter().map(String::into_bytes).collect();
            self.keys_text.clear();
            self.keys_text.extend_from_slice(keys);
            self.cached = false;
        }
        Ok(&self.keys)
    }

    /// Decodes `data` for the key list `keys` unless it is the cached row;
    /// false if the row is not plain JSON.
    pub fn load(&mut self, keys: &[u8], data: &[u8]) -> Result<bool> {
        self.use_keys(keys)?;
        if !self.cached || data != self.data.as_slice() {
            self.decode(data);
        }
        Ok(self.plain)
    }

    /// Value `index` of the row loaded last (plain rows only): a declared
    /// key's value, the undeclared members for the index after the keys,
    /// NULL beyond.
    pub fn value(&self, index: usize) -> ValueRef<'_> {
        let field = match self.fields.get(index) {
            Some(field) => *field,
            None if index == self.keys.len() && !self.undeclared.is_empty() => {
                return ValueRef::Text(&self.undeclared);
            }
            None => Field::Null,
        };
        match field {
            Field::Missing | Field::Null => ValueRef::Null,
            Field::Integer(i) => ValueRef::Integer(i),
            Field::Real(r) => ValueRef::Real(r),
            Field::Text(Text::Data(start, end)) => ValueRef::Text(&self.data[start..end]),
            Field::Text(Text::Scratch(start, end)) => ValueRef::Text(&self.scratch[start..end]),
        }
    }

    fn decode(&mut self, data: &[u8]) {
        // The cache lives as long as the connection: a huge row's buffers
        // are let go once rows are small again.
        for buffer in [&mut self.data, &mut self.scratch, &mut self.undeclared] {
            if buffer.capacity() > LARGE_BUFFER && data.len() < LARGE_BUFFER / 16 {
                *buffer = Vec::new();
            }
            buffer.clear();
        }
        self.data.extend_from_slice(data);
        self.fields.clear();
        self.fields.resize(self.keys.len(), Field::Missing);
        self.cached = true;
        let RowDecoder { keys, data, fields, scratch, undeclared, .. } = self;
        self.plain = scan_object(data, keys, fields, scratch, undeclared).is_ok();
    }
}

fn bad_call(message: String) -> OpliteError {
    OpliteError::Malformed { what: "oplite_field() arguments", message }
}

fn expect(bytes: &[u8], i: usize, byte: u8) -> Scan<usize> {
    if bytes.get(i) == Some(&byte) {
        Ok(i + 1)
    } else {
        Err(NotPlain)
    }
}

/// Scans the top-level object `data`, filling `fields` (first occurrence
/// of a key wins, as with `json_extract`) and `undeclared` (members copied
/// as they arrived, as `oplite_undeclared` does).
fn scan_object(
    data: &[u8],
    keys: &[Vec<u8>],
    fields: &mut [Field],
    scratch: &mut Vec<u8>,
    undeclared: &mut Vec<u8>,
) -> Scan<()> {
    let mut i = expect(data, skip_ws(data, 0), b'{')?;
    i = skip_ws(data, i);
    let mut hint = 0;
    if data.get(i) == Some(&b'}') {
        i += 1;
    } else {
        loop {
            let member_start = i;
            let key_end = plain_string_end(data, expect(data, i, b'"')?)?;
            let key = &data[member_start + 1..key_end];
            i = expect(data, skip_ws(data, key_end + 1), b':')?;
            i = skip_ws(data, i);
            let (field, end) = value(data, i, scratch)?;
            let slot = if keys.get(hint).is_some_and(|k| k.as_slice() == key) {
                Some(hint)
            } else {
                keys.iter().position(|k| k.as_slice() == key)
            };
            match slot {
                Some(k) => {
                    hint = k + 1;
                    if fields[k] == Field::Missing {
                        fields[k] = field;
                    }
                }
                None => {
                    undeclared.push(if undeclared.is_empty() { b'{' } else { b',' });
                    undeclared.extend_from_slice(&data[member_start..end]);
                }
            }
            i = skip_ws(data, end);
            match data.get(i) {
                Some(b',') => i = skip_ws(data, i + 1),
                Some(b'}') => {
                    i += 1;
                    break;
                }
                _ => return Err(NotPlain),
            }
        }
    }
    if skip_ws(data, i) != data.len() {
        return Err(NotPlain);
    }
    if !undeclared.is_empty() {
        undeclared.push(b'}');
    }
    Ok(())
}

/// The index of the closing quote of a string whose content starts at `i`
/// and holds no escapes or control characters.
fn plain_string_end(data: &[u8], mut i: usize) -> Scan<usize> {
    while let Some(&b) = data.get(i) {
        match b {
            b'"' => return Ok(i),
            b'\\' => return Err(NotPlain),
            0..=0x1f => return Err(NotPlain),
            _ => i += 1,
        }
    }
    Err(NotPlain)
}

/// The value starting at `i`, and the index after it.
fn value(data: &[u8], i: usize, scratch: &mut Vec<u8>) -> Scan<(Field, usize)> {
    match data.get(i) {
        Some(b'"') => string(data, i, scratch),
        Some(b'{' | b'[') => nested(data, i, scratch),
        Some(b't') => literal(data, i, b"true", Field::Integer(1)),
        Some(b'f') => literal(data, i, b"false", Field::Integer(0)),
        Some(b'n') => literal(data, i, b"null", Field::Null),
        Some(b'-' | b'0'..=b'9') => number(data, i),
        _ => Err(NotPlain),
    }
}

fn literal(data: &[u8], i: usize, word: &[u8], field: Field) -> Scan<(Field, usize)> {
    if data[i..].starts_with(word) {
        Ok((field, i + word.len()))
    } else {
        Err(NotPlain)
    }
}

/// A string value: its content as it is when there are no escapes,
/// decoded into `scratch` otherwise.
fn string(data: &[u8], i: usize, scratch: &mut Vec<u8>) -> Scan<(Field, usize)> {
    let mut j = i + 1;
    let mut escaped = false;
    loop {
        match data.get(j) {
            Some(b'"') => break,
            Some(b'\\') => {
                escaped = true;
                j += 2;
            }
            Some(0..=0x1f) | None => return Err(NotPlain),
            Some(_) => j += 1,
        }
    }
    if !escaped {
        return Ok((Field::Text(Text::Data(i + 1, j)), j + 1));
    }
    let decoded: String = serde_json::from_slice(&data[i..=j]).map_err(|_| NotPlain)?;
    if decoded.contains('\0') {
        return Err(NotPlain);
    }
    let start = scratch.len();
    scratch.extend_from_slice(decoded.as_bytes());
    Ok((Field::Text(Text::Scratch(start, scratch.len())), j + 1))
}

/// An object or array value: its JSON text without whitespace, which is
/// how `json_extract` renders it.
fn nested(data: &[u8], i: usize, scratch: &mut Vec<u8>) -> Scan<(Field, usize)> {
    let end = skip_value(data, i).map_err(|_| NotPlain)?;
    let text = &data[i..end];
    serde_json::from_slice::<serde::de::IgnoredAny>(text).map_err(|_| NotPlain)?;
    if !text.iter().any(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
        return Ok((Field::Text(Text::Data(i, end)), end));
    }
    // Whitespace inside strings stays; outside them it goes.
    let start = scratch.len();
    let mut in_string = false;
    let mut k = 0;
    while k < text.len() {
        let b = text[k];
        if in_string {
            scratch.push(b);
            if b == b'\\' {
                scratch.push(text[k + 1]);
                k += 1;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
            scratch.push(b);
        } else if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            scratch.push(b);
        }
        k += 1;
    }
    Ok((Field::Text(Text::Scratch(start, scratch.len())), end))
}

/// A number in RFC 8259's grammar: an integer when it has no fraction or
/// exponent and fits in 64 bits, a real otherwise (as `json_extract`).
fn number(data: &[u8], i: usize) -> Scan<(Field, usize)> {
    let digits = |mut j: usize| {
        while data.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        j
    };
    let mut j = i;
    if data[j] == b'-' {
        j += 1;
    }
    match data.get(j) {
        Some(b'0') => j += 1,
        Some(b'1'..=b'9') => j = digits(j),
        _ => return Err(NotPlain),
    }
    let mut integer = true;
    if data.get(j) == Some(&b'.') {
        integer = false;
        let after = digits(j + 1);
        if after == j + 1 {
            return Err(NotPlain);
        }
        j = after;
    }
    if matches!(data.get(j), Some(b'e' | b'E')) {
        integer = false;
        j += 1;
        if matches!(data.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let after = digits(j);
        if after == j {
            return Err(NotPlain);
        }
        j = after;
    }
    let negative = data[i] == b'-';
    let magnitude = &data[i + usize::from(negative)..j];
    // Up to 18 digits always fit in an i64: no text, no overflow check.
    if integer && magnitude.len() <= 18 {
        let n = magnitude.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
        return Ok((Field::Integer(if negative { -n } else { n }), j));
    }
    // The slice is ASCII digits and signs by construction.
    let text = std::str::from_utf8(&data[i..j]).map_err(|_| NotPlain)?;
    if integer {
        if let Ok(n) = text.parse::<i64>() {
            return Ok((Field::Integer(n), j));
        }
    }
    text.parse::<f64>().map(|r| (Field::Real(r), j)).map_err(|_| NotPlain)
}

/// Value `index` of a row that is not plain JSON, from SQLite's
/// `json_extract` (run as a nested query) or `oplite_undeclared`'s code.
fn fallback(db: &Connection, keys: &[Vec<u8>], data: ValueRef<'_>, index: usize) -> Result<Raw> {
    if let Some(key) = keys.get(index) {
        return query_one(db, "SELECT json_extract(?1, ?2)", &[data, ValueRef::Text(json_path(key).as_bytes())]);
    }
    let ValueRef::Text(text) = data else { return Ok(Raw::Null) };
    if index > keys.len() {
        return Ok(Raw::Null);
    }
    let declared: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    // undeclared_members reads strict JSON only; JSON5 that json_extract
    // reads gets its members from json_remove.
    match undeclared_members(text, &declared) {
        Ok(members) => Ok(members.map_or(Raw::Null, |m| Raw::Text(m.into_bytes()))),
        Err(_) => query_remove(db, data, keys),
    }
}

/// `$."key"`, the JSON path of a declared key.
fn json_path(key: &[u8]) -> String {
    json_path_text(&String::from_utf8_lossy(key))
}

/// `json_remove` of every declared key (in calls of [`PATHS_PER_CALL`]), or
/// NULL when nothing is left: the undeclared members of a JSON5 row.
fn query_remove(db: &Connection, data: ValueRef<'_>, keys: &[Vec<u8>]) -> Result<Raw> {
    let mut text = Raw::from_ref(data);
    for chunk in keys.chunks(PATHS_PER_CALL) {
        let paths: Vec<String> = chunk.iter().map(|key| json_path(key)).collect();
        let mut params = vec![text.as_ref()];
        params.extend(paths.iter().map(|p| ValueRef::Text(p.as_bytes())));
        let placeholders = vec!["?"; params.len()].join(", ");
        text = query_one(db, &format!("SELECT json_remove({placeholders})"), &params)?;
    }
    Ok(match text {
        Raw::Text(t) if t != b"{}" => Raw::Text(t),
        _ => Raw::Null,
    })
}

/// The one value `sql` returns for `params`, as SQLite computed it.
fn query_one(db: &Connection, sql: &str, params: &[ValueRef<'_>]) -> Result<Raw> {
    let params: Vec<ToSqlOutput<'_>> = params.iter().map(|p| ToSqlOutput::Borrowed(*p)).collect();
    db.query_row(sql, rusqlite::params_from_iter(params), |r| Ok(Raw::from_ref(r.get_ref(0)?)))
        .map_err(|e| OpliteError::sqlite("decoding a synced row", e))
}

pub(super) fn register(db: &Connection) -> Result<()> {
    let decoder = RefCell::new(RowDecoder::default());
    register_emitting_function(
        db,
        "oplite_field",
        3,
        Purity::Deterministic,
        Box::new(move |call, args, emit| {
            let [data, ValueRef::Text(keys), ValueRef::Integer(index)] = args else {
                return Err(bad_call("expected (data, keys JSON array, column index)".into()));
            };
            let index = usize::try_from(*index).map_err(|_| bad_call(format!("column index {index}")))?;
            if *data == ValueRef::Null {
                emit.value(ValueRef::Null);
                return Ok(());
            }
            // A nested call (none is known: the fallback's queries call
            // only SQLite's JSON functions) fails instead of sharing the cache.
            let mut decoder = decoder
                .try_borrow_mut()
                .map_err(|_| OpliteError::Internal("oplite_field() called from within itself".into()))?;
            let declared = decoder.use_keys(keys)?.len();
            if index > declared {
                return Err(bad_call(format!("column {index} of a row with {declared} keys")));
            }
            if let ValueRef::Text(text) = data {
                if decoder.load(keys, text)? {
                    emit.value(decoder.value(index));
                    return Ok(());
                }
            }
            let value = fallback(call.db()?, decoder.use_keys(keys)?, *data, index)?;
            emit.value(value.as_ref());
            Ok(())
        }),
    )
}

/// Keys a table may declare for `oplite_row`, whose columns are fixed when
/// it is registered (wider tables use `oplite_field`).
pub const ROW_KEYS: usize = 99;

/// A cursor of `oplite_row(data, keys)`: the row decoded once in `xFilter`,
/// its columns read by SQLite one `xColumn` call each.
#[derive(Default)]
struct DecodedRow {
    decoder: RowDecoder,
    /// The values of a row that is not plain JSON (or not text).
    fallback: Option<Vec<Raw>>,
}

impl RowSource for DecodedRow {
    fn load(&mut self, call: &CallContext, args: &[ValueRef<'_>]) -> Result<bool> {
        let [data, keys] = args else { return Err(OpliteError::Internal("oplite_row arguments".into())) };
        let ValueRef::Text(keys) = keys else {
            return Err(bad_call("oplite_row(data, keys): keys must be a JSON array text".into()));
        };
        self.fallback = None;
        match data {
            ValueRef::Null => self.fallback = Some(Vec::new()),
            ValueRef::Text(text) if self.decoder.load(keys, text)? => {}
            _ => {
                let db = call.db()?;
                let keys = self.decoder.use_keys(keys)?;
                self.fallback = Some((0..=keys.len()).map(|i| fallback(db, keys, *data, i)).collect::<Result<_>>()?);
            }
        }
        Ok(true)
    }

    fn column(&self, i: usize, emit: Emit<'_>) {
        match &self.fallback {
            Some(values) => {
                if let Some(value) = values.get(i) {
                    emit.value(value.as_ref());
                }
            }
            None => emit.value(self.decoder.value(i)),
        }
    }
}

pub(super) fn register_row(db: &Connection) -> Result<()> {
    let columns: Vec<String> = (0..=ROW_KEYS).map(|i| format!("v{i}")).collect();
    let declaration = format!("CREATE TABLE x({}, data HIDDEN, keys HIDDEN)", columns.join(", "));
    register_row_function(db, "oplite_row", &declaration, ROW_KEYS + 1, 2, Box::new(|| Box::new(DecodedRow::default())))
}

#[cfg(test)]
mod tests;
