//! Values crossing between JS and SQLite.
//!
//! | JS | SQLite | back to JS |
//! |---|---|---|
//! | `null`, `undefined` | NULL | `null` |
//! | `boolean` | INTEGER 0/1 | `number` |
//! | integral `number` within ±2^53 | INTEGER | `number` |
//! | other `number` | REAL | `number` |
//! | `bigint` | INTEGER | `number` within ±2^53, else `bigint` |
//! | `string` | TEXT | `string` |
//! | `Uint8Array`, `ArrayBuffer` | BLOB | `Uint8Array` |
//!
//! Parameters are an array (positional `?`, `?NNN`) or an object (named
//! `:name`, `@name`, `$name`; the key is the name without its prefix).
//! Parameters given no value are NULL, as in SQLite's own API and the SDK's
//! database; array values past the statement's parameters are not bound.

use js_sys::{Array, ArrayBuffer, Object, Reflect, Uint8Array};
use rusqlite::types::{Value, ValueRef};
use rusqlite::Statement;
use wasm_bindgen::{JsCast, JsValue};

const MAX_SAFE: i64 = (1 << 53) - 1;

/// Converts one JS value to a SQLite value.
pub fn to_sql(value: &JsValue) -> Result<Value, String> {
    if value.is_null() || value.is_undefined() {
        return Ok(Value::Null);
    }
    if let Some(b) = value.as_bool() {
        return Ok(Value::Integer(i64::from(b)));
    }
    if let Some(n) = value.as_f64() {
        if n.fract() == 0.0 && n.abs() <= MAX_SAFE as f64 {
            return Ok(Value::Integer(n as i64));
        }
        return Ok(Value::Real(n));
    }
    if let Some(s) = value.as_string() {
        return Ok(Value::Text(s));
    }
    if value.is_bigint() {
        let n = i64::try_from(value.clone()).map_err(|_| "a bigint parameter does not fit in 64 bits".to_owned())?;
        return Ok(Value::Integer(n));
    }
    if let Some(bytes) = value.dyn_ref::<Uint8Array>() {
        return Ok(Value::Blob(bytes.to_vec()));
    }
    if let Some(buffer) = value.dyn_ref::<ArrayBuffer>() {
        return Ok(Value::Blob(Uint8Array::new(buffer).to_vec()));
    }
    Err(format!("cannot bind a parameter of type {}", value.js_typeof().as_string().unwrap_or_default()))
}

/// Converts one SQLite value to JS.
pub fn to_js(value: ValueRef<'_>) -> JsValue {
    match value {
        ValueRef::Null => JsValue::NULL,
        ValueRef::Integer(i) if (-MAX_SAFE..=MAX_SAFE).contains(&i) => JsValue::from_f64(i as f64),
        ValueRef::Integer(i) => JsValue::from(i),
        ValueRef::Real(r) => JsValue::from_f64(r),
        ValueRef::Text(t) => JsValue::from_str(&String::from_utf8_lossy(t)),
        ValueRef::Blob(b) => Uint8Array::from(b).into(),
    }
}

/// Binds `params` (an array, an object, `null` or `undefined`) to `stmt`.
pub fn bind(stmt: &mut Statement<'_>, params: &JsValue) -> Result<(), String> {
    let expected = stmt.parameter_count();
    if params.is_null() || params.is_undefined() {
        return Ok(());
    }
    if let Some(array) = params.dyn_ref::<Array>() {
        // As SQLite's own API and the SDK's database: parameters not given
        // stay NULL, values past the statement's parameters are not bound.
        let given = (array.length() as usize).min(expected);
        for i in 0..given {
            let value = to_sql(&array.get(i as u32)).map_err(|e| format!("parameter {}: {e}", i + 1))?;
            stmt.raw_bind_parameter(i + 1, value).map_err(|e| e.to_string())?;
        }
        return Ok(());
    }
    if params.is_object() {
        for i in 1..=expected {
            let name = stmt
                .parameter_name(i)
                .ok_or_else(|| format!("parameter {i} has no name; pass an array for positional parameters"))?
                .to_owned();
            let key = JsValue::from_str(&name[1..]);
            let object: &Object = params.unchecked_ref();
            if !Reflect::has(object, &key).unwrap_or(false) {
                continue;
            }
            let value = Reflect::get(object, &key).map_err(|_| format!("cannot read parameter {name}"))?;
            let value = to_sql(&value).map_err(|e| format!("parameter {name}: {e}"))?;
            stmt.raw_bind_parameter(i, value).map_err(|e| e.to_string())?;
        }
        return Ok(());
    }
    Err("parameters must be an array or an object".to_owned())
}
