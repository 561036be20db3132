//! `powersync_remove_duplicate_key_encoding(key)`: the JS SDKs' one-time
//! repair of `ps_oplog.key`.
//!
//! Old JS clients JSON-encoded the subkey a second time, so a key stored as
//! `type/id/"subkey"` instead of `type/id/subkey`. On its first connect the
//! Node and web SDKs run
//! `UPDATE ps_oplog SET key = powersync_remove_duplicate_key_encoding(key)`
//! once (remembered in ps_kv as `powersync_js_migrated_subkeys`), so every
//! core they load needs the function.
//!
//! Behaviour, checked against the reference core 0.5.3 (see the tests): a
//! key ending in a JSON string literal that starts after the first
//! character has that literal decoded (`a/b/"c"` → `a/b/c`,
//! `t/i/"x\"y"` → `t/i/x"y`); a non-text argument is an error. The opening
//! quote is found walking back from the closing one, a quote counting as
//! escaped when exactly one backslash precedes it (the reference's rule,
//! which differs from JSON's backslash parity only for keys no SDK writes,
//! such as ones ending in `\""`).
//!
//! One deliberate difference (see docs/differences.md): any other key (`a/b/c`, every key a current
//! client writes) comes back unchanged, where the reference returns NULL.
//! The SDKs' UPDATE has no WHERE clause, so with the reference a database
//! first synced by another host loses every oplog key to that repair, and a
//! later REMOVE no longer finds the op it supersedes (the row is never
//! deleted). Keeping the key makes the repair harmless.

use rusqlite::types::{Value, ValueRef};
use rusqlite::Connection;

use crate::error::{OpliteError, Result};
use crate::sqlite::{register_scalar, Purity};

const NAME: &str = "powersync_remove_duplicate_key_encoding";

/// The key with its trailing JSON string literal decoded, or `None` when it
/// does not end in one.
pub fn remove_duplicate_key_encoding(key: &str) -> Option<String> {
    let body = key.strip_suffix('"')?;
    let bytes = body.as_bytes();
    // Walk back from the closing quote to the opening one, looking at the
    // two characters before each quote as the reference does (not at the
    // parity of a whole run of backslashes).
    let mut end = bytes.len();
    let start = loop {
        let quote = bytes[..end].iter().rposition(|&b| b == b'"')?;
        match (quote.checked_sub(1).map(|i| bytes[i]), quote.checked_sub(2).map(|i| bytes[i])) {
            // A quote that opens the key is not a subkey.
            (None, _) | (Some(b'\\'), None) => return None,
            // `\\"`: the quote is not escaped.
            (Some(b'\\'), Some(b'\\')) => break quote,
            // `x\"`: an escaped quote; the search goes on before `x`.
            (Some(b'\\'), Some(_)) => end = quote - 2,
            (Some(_), _) => break quote,
        }
    };
    let decoded: String = serde_json::from_str(&key[start..]).ok()?;
    Some(format!("{}{decoded}", &key[..start]))
}

pub(super) fn register(db: &Connection) -> Result<()> {
    register_scalar(
        db,
        NAME,
        1,
        Purity::Deterministic,
        Box::new(|_, args| match args[0] {
            ValueRef::Text(bytes) => {
                let key = std::str::from_utf8(bytes).map_err(|_| OpliteError::InvalidArgument {
                    function: NAME,
                    message: "argument 1 is not valid UTF-8".into(),
                    type_mismatch: false,
                })?;
                Ok(Value::Text(remove_duplicate_key_encoding(key).unwrap_or_else(|| key.to_owned())))
            }
            other => Err(OpliteError::InvalidArgument {
                function: NAME,
                message: format!("argument 1 (key) must be text, got {}", other.data_type()),
                type_mismatch: true,
            }),
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::remove_duplicate_key_encoding as fix;

    /// Inputs and the reference core 0.5.3's answers (None is NULL).
    const REFERENCE: &[(&str, Option<&str>)] = &[
        (r#"a/b/"c""#, Some("a/b/c")),
        ("a/b/c", None),
        (r#"a/"b""#, Some("a/b")),
        (r#""a""#, None),
        ("a", None),
        ("", None),
        (r#"a/b/"c/d""#, Some("a/b/c/d")),
        (r#"a/b/"c"/"d""#, Some(r#"a/b/"c"/d"#)),
        (r#"a/b/"c\"x""#, Some(r#"a/b/c"x"#)),
        (r#"a/b/"c\u0041""#, Some("a/b/cA")),
        (r#"a/b/"c"#, None),
        (r#"a/b/"""#, Some("a/b/")),
        (r#"/"x""#, Some("/x")),
        (r#"a/b/"\n""#, Some("a/b/\n")),
        (r#"a/b/ "c""#, Some("a/b/ c")),
        (r#"a/b/"c" "#, None),
        (r#"a/b/"c"x""#, Some(r#"a/b/"cx"#)),
        (r#"ab"c""#, Some("abc")),
        (r#""a/b""#, None),
        (r#"x/"a\""#, None),
        (r#"x/"a\\""#, Some(r"x/a\")),
        (r#"x/"a\"b""#, Some(r#"x/a"b"#)),
        (r#"x/"a"b"c""#, Some(r#"x/"a"bc"#)),
        (r#"a/"\ud83d\ude00""#, Some("a/😀")),
        (r#"a/"\ud83d""#, None),
        (r#"a/b/"c\x""#, None),
        (r#"a/"b"""#, Some(r#"a/"b"#)),
        (r#"a/b/"é""#, Some("a/b/é")),
        ("a/b/", None),
        ("a/b/null", None),
    ];

    #[test]
    fn matches_the_reference_core() {
        for (key, expected) in REFERENCE {
            assert_eq!(fix(key).as_deref(), *expected, "{key}");
        }
    }

    #[test]
    fn follows_the_reference_after_an_escaped_quote_at_the_end() {
        // Probed on the reference core 0.5.3: an escaped quote right before
        // the closing one is skipped together with the character before it.
        assert_eq!(fix(r#"x/"\"""#), None);
        assert_eq!(fix(r#"a/b/"\\\"""#).as_deref(), Some(r#"a/b/"\\\"#));
    }
}
