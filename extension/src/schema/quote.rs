//! Quoting for names that come from the app's schema.
//!
//! Every table, view, column and index name oplite puts into SQL comes from
//! JSON the app sent, so none is ever spliced in raw: identifiers go through
//! [`identifier`], text through [`string`], and JSON object keys through
//! [`json_path`] (quoted path labels, so names with dots, brackets or quotes
//! address the key they name).

/// JSON paths per `json_extract` or `json_remove` call built from these
/// quotes (SQLite before 3.48 allows 127 arguments).
pub const PATHS_PER_CALL: usize = 100;

/// `name` as an SQL identifier: `"name"`, with `"` doubled.
pub fn identifier(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for c in name.chars() {
        if c == '"' {
            out.push('"');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// `text` as an SQL string literal: `'text'`, with `'` doubled.
pub fn string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        if c == '\'' {
            out.push('\'');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// The SQL string literal of the JSON path that selects the top-level key
/// `key`: `'$."key"'`, the label escaped as a JSON string (SQLite decodes
/// quoted labels as JSON strings).
pub fn json_path(key: &str) -> String {
    string(&json_path_text(key))
}

/// The JSON path `$."key"` itself, for binding as a parameter.
pub fn json_path_text(key: &str) -> String {
    let label = serde_json::to_string(key).unwrap_or_else(|_| "\"\"".to_owned());
    format!("$.{label}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_double_quotes() {
        assert_eq!(identifier("t"), r#""t""#);
        assert_eq!(identifier(r#"we"ird'name"#), r#""we""ird'name""#);
        assert_eq!(identifier(""), r#""""#);
    }

    #[test]
    fn strings_double_apostrophes() {
        assert_eq!(string("it's"), "'it''s'");
        assert_eq!(string(r#"a"b"#), r#"'a"b'"#);
    }

    #[test]
    fn json_paths_quote_labels() {
        assert_eq!(json_path("a"), r#"'$."a"'"#);
        assert_eq!(json_path("a.b"), r#"'$."a.b"'"#);
        assert_eq!(json_path(r#"c"ol'x"#), r#"'$."c\"ol''x"'"#);
        assert_eq!(json_path("a\\b"), r#"'$."a\\b"'"#);
    }

    #[cfg(feature = "bundled")]
    #[test]
    fn json_paths_select_the_key_they_name() {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        for key in ["a", "a.b", "a[0]", r#"c"ol'x"#, "a\\b", "é", "a b", "$", "\u{1}"] {
            let object = serde_json::json!({ key: 42, "other": 1 }).to_string();
            let sql = format!("SELECT json_extract(?1, {}), json_remove(?1, {})", json_path(key), json_path(key));
            let (value, rest): (i64, String) = db.query_row(&sql, [&object], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
            assert_eq!(value, 42, "key {key:?}");
            assert_eq!(rest, r#"{"other":1}"#, "key {key:?}");
        }
    }
}
