//! The errors this module hands to JS: SQLite's, as a JS `Error` named
//! `SqliteError` carrying the extended result code (what the adapter and
//! apps test), and the caller's mistakes, as a plain `Error`.

use js_sys::Reflect;
use wasm_bindgen::JsValue;

/// A JS `Error` named `SqliteError` with the extended result `code`.
pub(crate) fn sqlite_error(err: &rusqlite::Error) -> JsValue {
    let error = js_sys::Error::new(&err.to_string());
    error.set_name("SqliteError");
    let code = match err {
        rusqlite::Error::SqliteFailure(e, _) => Some(e.extended_code),
        rusqlite::Error::SqlInputError { error, .. } => Some(error.extended_code),
        _ => None,
    };
    if let Some(code) = code {
        let _ = Reflect::set(&error, &"code".into(), &JsValue::from(code));
    }
    error.into()
}

/// A plain JS `Error`: a bad argument or a call at the wrong time.
pub(crate) fn usage_error(message: &str) -> JsValue {
    js_sys::Error::new(message).into()
}
