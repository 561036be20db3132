//! Every SQL function and table-valued function the reference core 0.5.3
//! registers reads each of its arguments as the reference does, for every
//! SQLite value type (issue 29: `powersync_clear(1.0)`, which the Node SDK's
//! `disconnectAndClear()` sends, kept local-only rows).
//!
//! The functions come from the two cores' own lists (`pragma_function_list`,
//! `pragma_module_list`): each one with arguments must have a row in
//! [`CALLS`]. For each row, each argument in turn is replaced by every value
//! of [`KINDS`] (INTEGER, REAL whole and fractional, numeric and other TEXT,
//! BLOB, NULL) while the others keep the row's valid values; both cores run
//! the call on identical fresh databases (a schema with synced and
//! local-only rows, queued uploads, views), and must return the same value
//! or fail with the same extended code, and leave the same rows behind.

mod common;

use std::collections::BTreeSet;

use common::diff::{normalise, rows};
use common::*;
use rusqlite::types::ValueRef;
use rusqlite::Connection;

/// The values each argument is tried with, as SQL literals.
const KINDS: &[&str] = &[
    "1", "0", "2", "-1", "3", "4294967297", "1.0", "1.5", "2.0", "-0.5", "1e300", "'1'", "'1.5'", "'2abc'", "' 3'",
    "'abc'", "''", "'9223372036854775808'", "x'31'", "x''", "NULL",
];

const SCHEMA: &str = r#"{"tables":[
  {"name":"items","columns":[{"name":"name","type":"text"},{"name":"n","type":"integer"}]},
  {"name":"drafts","local_only":true,"columns":[{"name":"body","type":"text"}]}
]}"#;

/// What a database holds before each call: synced rows (through a sync
/// iteration), local writes queued for upload, local-only rows, views
/// named as coerced arguments read (for `powersync_drop_view`).
fn prepare(db: &Connection) {
    db.execute_batch("BEGIN; SELECT powersync_init();
         UPDATE ps_kv SET value = '00000000-0000-4000-8000-000000000000' WHERE key = 'client_id'; COMMIT;")
        .unwrap();
    db.execute_batch("BEGIN").unwrap();
    db.query_row("SELECT powersync_replace_schema(?1)", [SCHEMA], |_| Ok(())).unwrap();
    db.execute_batch("COMMIT").unwrap();
    let lines = [
        r#"{"checkpoint":{"last_op_id":"2","write_checkpoint":null,"buckets":[{"bucket":"b","checksum":3,"priority":3}]}}"#,
        r#"{"data":{"bucket":"b","has_more":false,"after":null,"next_after":null,"data":[
          {"op_id":"1","op":"PUT","object_type":"items","object_id":"s1","checksum":1,"data":"{\"name\":\"synced\",\"n\":1}"},
          {"op_id":"2","op":"PUT","object_type":"items","object_id":"s2","checksum":2,"data":"{\"name\":\"other\",\"n\":2}"}]}}"#,
        r#"{"checkpoint_complete":{"last_op_id":"2"}}"#,
    ];
    db.execute_batch("BEGIN").unwrap();
    db.query_row("SELECT powersync_control('start', NULL)", [], |_| Ok(())).unwrap();
    for line in lines {
        db.query_row("SELECT powersync_control('line_text', ?1)", [line], |_| Ok(())).unwrap();
    }
    db.query_row("SELECT powersync_control('stop', NULL)", [], |_| Ok(())).unwrap();
    db.execute_batch(
        "COMMIT;
         INSERT INTO items(id, name, n) VALUES ('l1', 'local', 3);
         INSERT INTO drafts(id, body) VALUES ('d1', 'draft');
         CREATE VIEW \"1\" AS SELECT 1; CREATE VIEW \"1.0\" AS SELECT 1; CREATE VIEW \"1.5\" AS SELECT 1;
         CREATE VIEW \"abc\" AS SELECT 1; CREATE VIEW \"2abc\" AS SELECT 1;
         CREATE TABLE raw_target(id TEXT PRIMARY KEY, a TEXT);",
    )
    .unwrap();
}

/// What a database shows the app after a call.
const OBSERVED: &[&str] = &[
    "SELECT id, name, n FROM items ORDER BY id",
    "SELECT id, body FROM drafts ORDER BY id",
    "SELECT data, tx_id FROM ps_crud ORDER BY id",
    "SELECT key, CAST(value AS TEXT) FROM ps_kv ORDER BY 1",
    "SELECT name, last_applied_op, last_op FROM ps_buckets ORDER BY 1",
    "SELECT count(*) FROM ps_oplog",
    "SELECT priority FROM ps_sync_state ORDER BY 1",
    "SELECT type, name FROM sqlite_schema WHERE type IN ('view', 'trigger') AND name NOT LIKE 'ps_%'
       AND name NOT IN ('items', 'drafts') ORDER BY 1, 2",
];

/// A raw table as `powersync_create_raw_table_crud_trigger` takes it.
const RAW_TABLE: &str = r#"'{"name":"raw","table_name":"raw_target","put":{"sql":"SELECT 1","params":[]}}'"#;

/// One row of calls: a label, SQL with `{0}`, `{1}`, ... for the arguments,
/// their valid values, and statements run first in the same transaction
/// (for calls that need a sync iteration).
struct Call {
    function: &'static str,
    sql: &'static str,
    valid: &'static [&'static str],
    before: &'static [&'static str],
}

const START: &str = "SELECT powersync_control('start', NULL)";

const fn call(function: &'static str, sql: &'static str, valid: &'static [&'static str]) -> Call {
    Call { function, sql, valid, before: &[] }
}

const fn in_iteration(function: &'static str, sql: &'static str, valid: &'static [&'static str]) -> Call {
    Call { function, sql, valid, before: &[START] }
}

/// Every call tried. `powersync_control`'s op is tried with each payload
/// kind and each op's payload with every kind.
const CALLS: &[Call] = &[
    call("powersync_clear", "SELECT powersync_clear({0})", &["1"]),
    call("powersync_clear", "SELECT powersync_clear({0})", &["2"]),
    call("powersync_trigger_resync", "SELECT powersync_trigger_resync({0})", &["1"]),
    call("powersync_diff", "SELECT powersync_diff({0}, {1})", &[r#"'{"a":1}'"#, r#"'{"a":2,"b":1}'"#]),
    call("powersync_json_merge", "SELECT powersync_json_merge({0}, {1})", &[r#"'{"a":1}'"#, r#"'{"b":2}'"#]),
    call("powersync_json_merge", "SELECT powersync_json_merge({0})", &[r#"'{"a":1}'"#]),
    call("powersync_strip_subtype", "SELECT powersync_strip_subtype({0})", &["'x'"]),
    call("powersync_drop_view", "SELECT powersync_drop_view({0})", &["'abc'"]),
    call("powersync_update_hooks", "SELECT powersync_update_hooks({0})", &["'install'"]),
    call("powersync_update_hooks", "SELECT powersync_update_hooks({0})", &["'get'"]),
    call("powersync_replace_schema", "SELECT powersync_replace_schema({0})", &[SCHEMA_LITERAL]),
    call(
        "powersync_remove_duplicate_key_encoding",
        "SELECT powersync_remove_duplicate_key_encoding({0})",
        &[r#"'items/s1/"s1"'"#],
    ),
    call(
        "powersync_create_raw_table_crud_trigger",
        "SELECT powersync_create_raw_table_crud_trigger({0}, {1}, {2})",
        &[RAW_TABLE, "'raw_trigger'", "'INSERT'"],
    ),
    call("powersync_control", "SELECT powersync_control({0}, {1})", &["'stop'", "NULL"]),
    call("powersync_control", "SELECT powersync_control({0}, {1})", &["'start'", "NULL"]),
    call("powersync_control", "SELECT powersync_control('start', {0})", &[r#"'{"parameters":{}}'"#]),
    in_iteration("powersync_control", "SELECT powersync_control('stop', {0})", &["NULL"]),
    in_iteration("powersync_control", "SELECT powersync_control('line_text', {0})", &[r#"'{"token_expires_in":60}'"#]),
    in_iteration("powersync_control", "SELECT powersync_control('line_binary', {0})", &["x'1b00000010746f6b656e5f657870697265735f696e003c00000000'"]),
    in_iteration("powersync_control", "SELECT powersync_control('connection', {0})", &["'established'"]),
    in_iteration("powersync_control", "SELECT powersync_control('refreshed_token', {0})", &["NULL"]),
    in_iteration("powersync_control", "SELECT powersync_control('completed_upload', {0})", &["NULL"]),
    in_iteration("powersync_control", "SELECT powersync_control('update_subscriptions', {0})", &["'[]'"]),
    call(
        "powersync_control",
        "SELECT powersync_control('subscriptions', {0})",
        &[r#"'{"subscribe":{"stream":{"name":"s"}}}'"#],
    ),
    in_iteration("powersync_control", "SELECT powersync_control('seed_checkpoint_request_id', {0})", &["5"]),
    call("powersync_control", "SELECT powersync_control('target_checkpoint_request_id', {0})", &["5"]),
    call("powersync_control", "SELECT powersync_control('current_checkpoint_request_id', {0})", &["NULL"]),
    call(
        "powersync_crud_",
        "INSERT INTO powersync_crud_(data, options) VALUES ({0}, {1})",
        &[r#"'{"op":"PUT","type":"items","id":"v1","data":{"name":"x"}}'"#, "0"],
    ),
    call(
        "powersync_crud",
        "INSERT INTO powersync_crud(op, id, type, data, old_values, metadata, options) \
         VALUES ({0}, {1}, {2}, {3}, {4}, {5}, {6})",
        &["'PATCH'", "'s1'", "'items'", r#"'{"name":"y"}'"#, r#"'{"name":"synced"}'"#, "'meta'", "0"],
    ),
];

const SCHEMA_LITERAL: &str = r#"'{"tables":[
  {"name":"items","columns":[{"name":"name","type":"text"},{"name":"n","type":"integer"}]},
  {"name":"drafts","local_only":true,"columns":[{"name":"body","type":"text"}]}
]}'"#;

/// A value as the comparison shows it: JSON normalised (timestamps), other
/// values by type.
fn shown(value: ValueRef<'_>) -> String {
    if let ValueRef::Text(text) = value {
        let text = String::from_utf8_lossy(text);
        if let Ok(mut json) = serde_json::from_str::<serde_json::Value>(&text) {
            if json.is_array() || json.is_object() {
                normalise(&mut json);
                return format!("json {json}");
            }
        }
        return format!("text {text:?}");
    }
    format!("{:?}", value)
}

/// Runs `sql` (after `before`) in a transaction on a prepared database:
/// the value shown, or the extended error code; then what the app sees.
fn outcome(db: &Connection, before: &[&str], sql: &str) -> (Result<String, i32>, Vec<Vec<String>>) {
    prepare(db);
    db.execute_batch("BEGIN").unwrap();
    for statement in before {
        db.query_row(statement, [], |_| Ok(())).unwrap();
    }
    let result = if sql.starts_with("INSERT") {
        db.execute(sql, []).map(|n| format!("{n} row"))
    } else {
        db.query_row(sql, [], |row| Ok(shown(row.get_ref(0)?)))
    };
    let result = match result {
        Ok(value) => {
            db.execute_batch("COMMIT").unwrap();
            Ok(value)
        }
        Err(err) => {
            db.execute_batch("ROLLBACK").unwrap();
            Err(error_code(&err))
        }
    };
    (result, OBSERVED.iter().map(|query| rows(db, query)).collect())
}

fn substitute(sql: &str, args: &[&str]) -> String {
    args.iter().enumerate().fold(sql.to_owned(), |sql, (i, arg)| sql.replace(&format!("{{{i}}}"), arg))
}

fn names(db: &Connection, sql: &str) -> BTreeSet<String> {
    let mut stmt = db.prepare(sql).unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect()
}

/// Every reference function and module that takes arguments has a row in
/// [`CALLS`], so a function cannot be left out of the comparison.
#[test]
fn every_function_with_arguments_is_tried() {
    let plain = Connection::open_in_memory().unwrap();
    let functions = "SELECT name FROM pragma_function_list WHERE narg != 0";
    let modules = "SELECT name FROM pragma_module_list";
    let reference = reference();
    let theirs: BTreeSet<String> = names(&reference, functions)
        .difference(&names(&plain, functions))
        .chain(names(&reference, modules).difference(&names(&plain, modules)))
        .cloned()
        .collect();
    let tried: BTreeSet<String> = CALLS.iter().map(|c| c.function.to_owned()).collect();
    // powersync_test_migration is not registered by oplite (function_parity.rs);
    // powersync_internal_close takes no values.
    let untried: Vec<_> = theirs
        .iter()
        .filter(|name| !tried.contains(*name))
        .filter(|name| !["powersync_test_migration", "powersync_internal_close"].contains(&name.as_str()))
        .collect();
    assert!(untried.is_empty(), "functions with arguments no row of CALLS tries: {untried:?}");
    let ours = oplite();
    for name in &tried {
        let known = names(&ours, &format!("SELECT name FROM pragma_function_list WHERE name = '{name}'
                                            UNION SELECT name FROM pragma_module_list WHERE name = '{name}'"));
        assert!(!known.is_empty(), "{name} is tried but oplite does not register it");
    }
}

/// The reference's answer where oplite answers otherwise on purpose
/// (docs/differences.md): the function, the argument's value, and why.
const DIFFERENT_BY_DESIGN: &[(&str, &str, &str)] = &[
    ("powersync_crud_", "NULL", "a NULL entry, which no SDK can upload, is refused; the reference stores it"),
    ("powersync_remove_duplicate_key_encoding", "'1'", UNCHANGED_KEY),
    ("powersync_remove_duplicate_key_encoding", "'1.5'", UNCHANGED_KEY),
    ("powersync_remove_duplicate_key_encoding", "'2abc'", UNCHANGED_KEY),
    ("powersync_remove_duplicate_key_encoding", "' 3'", UNCHANGED_KEY),
    ("powersync_remove_duplicate_key_encoding", "'abc'", UNCHANGED_KEY),
    ("powersync_remove_duplicate_key_encoding", "''", UNCHANGED_KEY),
    ("powersync_remove_duplicate_key_encoding", "'9223372036854775808'", UNCHANGED_KEY),
];

const UNCHANGED_KEY: &str = "a key it does not change is returned as it was, where the reference returns NULL";

/// Runs every row of [`CALLS`] for which `pick` holds; returns how many
/// calls were made, and the differences found.
fn compare(pick: impl Fn(&Call) -> bool) -> (usize, Vec<String>) {
    let mut differing = Vec::new();
    let mut tried = 0;
    for call in CALLS.iter().filter(|call| pick(call)) {
        for position in 0..call.valid.len() {
            for kind in KINDS {
                let mut args = call.valid.to_vec();
                args[position] = kind;
                let sql = substitute(call.sql, &args);
                let ours = outcome(&oplite(), call.before, &sql);
                let theirs = outcome(&reference(), call.before, &sql);
                tried += 1;
                let by_design = DIFFERENT_BY_DESIGN.iter().any(|(f, k, _)| *f == call.function && k == kind);
                if ours != theirs && !by_design {
                    differing.push(format!(
                        "{sql}\n    oplite:    {:?}\n    reference: {:?}{}",
                        ours.0,
                        theirs.0,
                        if ours.1 == theirs.1 { String::new() } else { format!("\n    rows: {:?}\n    vs    {:?}", ours.1, theirs.1) }
                    ));
                }
            }
        }
    }
    (tried, differing)
}

#[test]
fn every_argument_of_powersync_control_is_read_as_the_reference_reads_it() {
    let (tried, differing) = compare(|call| call.function == "powersync_control");
    assert!(tried > 300, "only {tried} calls tried");
    assert!(differing.is_empty(), "{} of {tried} calls differ:\n{}", differing.len(), differing.join("\n"));
}

#[test]
fn every_argument_of_the_other_functions_is_read_as_the_reference_reads_it() {
    let (tried, differing) = compare(|call| call.function != "powersync_control");
    assert!(tried > 300, "only {tried} calls tried");
    assert!(differing.is_empty(), "{} of {tried} calls differ:\n{}", differing.len(), differing.join("\n"));
}
