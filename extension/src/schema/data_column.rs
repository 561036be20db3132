//! The `data` column of typed data tables: the reference core's contract.
//!
//! PowerSync documents `ps_data__<table>.data` (the row as JSON text) as the
//! place apps hang their own triggers and queries (the SDKs' diff triggers,
//! the full-text-search recipe). Typed tables keep it as a VIRTUAL generated
//! column built by SQLite's own JSON functions from the typed columns and
//! [`UNDECLARED_COLUMN`]: it costs nothing unless read, needs no extension
//! to read, and SQLite computes it for `NEW.data` / `OLD.data` in triggers.
//! The text is the declared columns in schema order (NULL as `null`, as the
//! reference's own local writes render them), then the undeclared fields.
//! Objects are concatenated as text rather than merged with `json_patch`,
//! which would drop undeclared fields whose value is null.
//!
//! SQLite computes every generated column, VIRTUAL ones too, for each row
//! an INSERT or UPDATE writes (a trigger or index might read it), then
//! throws a VIRTUAL value away: with a plain `json_object` a typed apply
//! cost about 1.7x. So the expression starts with `oplite_data_skipped()`,
//! true only while a sync apply writes tables that nothing observes (no app
//! triggers or indexes on any synced data table, no raw tables: see
//! [`SkipDataGuard`]); the value computed then is never seen. Everywhere
//! else, reads included, it is false. The cost: reading `data` needs the
//! extension (the other columns do not).
//!
//! Changing a generated column means dropping and re-adding it, which
//! SQLite refuses while the app's triggers or indexes refer to it, so
//! [`set_aside_app_objects`] drops those around the change and recreates
//! them after.

use std::sync::atomic::Ordering;

use rusqlite::types::Value;
use rusqlite::Connection;

use super::model::{Table, UNDECLARED_COLUMN};
use super::quote::{identifier, string};
use crate::error::{OpliteError, Result, SqliteResultExt};
use crate::sqlite::{client_data, register_function, ClientDataKey, Purity, ScopeCounter, ScopeGuard};

static SKIPPING: ClientDataKey<ScopeCounter> = ClientDataKey::new(c"oplite.data_skipped");

/// While alive, writes to typed tables on the connection do not render
/// `data` (the generated value reads NULL). Only for writes nothing can
/// observe: the sync apply holds one when no synced data table has the
/// app's triggers or indexes and there are no raw tables.
pub struct SkipDataGuard<'c>(#[allow(dead_code)] ScopeGuard<'c>);

impl<'c> SkipDataGuard<'c> {
    /// Starts skipping on `db`.
    pub fn enter(db: &'c Connection) -> Self {
        SkipDataGuard(ScopeGuard::enter(db, &SKIPPING))
    }
}

/// Registers `oplite_data_skipped()`. Declared deterministic, as generated
/// columns require: its value only changes between statements of oplite's
/// own apply, where nothing reads the column.
pub fn register(db: &Connection) -> Result<()> {
    let depth = client_data(db, &SKIPPING).shared();
    register_function(
        db,
        "oplite_data_skipped",
        0,
        Purity::Deterministic,
        Box::new(move |_, _| Ok(Value::Integer(i64::from(depth.load(Ordering::SeqCst) > 0)))),
    )
}

/// The generated column's name, as in the reference core's layout.
pub const DATA_COLUMN: &str = "data";
/// Key-value pairs per `json_object` call (SQLite before 3.48 allows 127
/// arguments).
const PAIRS_PER_CALL: usize = 50;
/// Columns a typed table adds to the declared ones: id, the undeclared
/// fields and `data`.
const TYPED_EXTRA_COLUMNS: usize = 3;

/// Switches to the JSON layout every typed table that cannot hold the
/// contract: more declared columns than `column_limit` (the connection's
/// `SQLITE_LIMIT_COLUMN`) leaves room for, or a declared column named
/// `data`, which would hide the row's JSON.
pub fn settle_layouts(tables: &mut [Table], column_limit: usize) {
    for table in tables.iter_mut().filter(|t| !t.oplite_json_storage) {
        let too_wide = table.columns.len() + TYPED_EXTRA_COLUMNS > column_limit;
        let named_data = table.columns.iter().any(|c| c.name.eq_ignore_ascii_case(DATA_COLUMN));
        if too_wide || named_data {
            table.oplite_json_storage = true;
        }
    }
}

/// The column definition: `data TEXT GENERATED ALWAYS AS (...) VIRTUAL`.
pub fn definition<S: AsRef<str>>(columns: &[S]) -> String {
    format!("{DATA_COLUMN} TEXT GENERATED ALWAYS AS ({}) VIRTUAL", expression(columns))
}

/// The JSON text of a row, from built-in functions only.
fn expression<S: AsRef<str>>(columns: &[S]) -> String {
    let u = UNDECLARED_COLUMN;
    if columns.is_empty() {
        return format!("coalesce({u}, '{{}}')");
    }
    // Each json_object's text without its closing brace (and, after the
    // first, its opening one): a column's value never carries a JSON
    // subtype, so the text ends in exactly one `}`.
    let open: Vec<String> = columns
        .chunks(PAIRS_PER_CALL)
        .enumerate()
        .map(|(i, chunk)| {
            let pairs: Vec<String> =
                chunk.iter().map(|c| format!("{}, {}", string(c.as_ref()), identifier(c.as_ref()))).collect();
            let object = format!("rtrim(json_object({}), '}}')", pairs.join(", "));
            if i == 0 {
                object
            } else {
                format!("substr({object}, 2)")
            }
        })
        .collect();
    let open = open.join(" || ',' || ");
    format!(
        "CASE WHEN oplite_data_skipped() THEN NULL \
         WHEN {u} IS NULL OR {u} = '{{}}' THEN {open} || '}}' \
         WHEN NOT json_valid({u}) THEN {u} \
         WHEN json_type({u}) = 'object' THEN {open} || ',' || substr({u}, 2) \
         ELSE {u} END"
    )
}

/// True if `table_sql` (the typed table's CREATE TABLE) ends with the
/// `data` column for `columns`.
pub fn is_current<S: AsRef<str>>(table_sql: Option<&str>, columns: &[S]) -> bool {
    table_sql.is_some_and(|sql| sql.trim_end().ends_with(&format!(", {})", definition(columns))))
}

/// The CREATE TABLE of `table`.
pub fn table_sql(db: &Connection, table: &str) -> Result<Option<String>> {
    db.query_row("SELECT sql FROM main.sqlite_master WHERE type = 'table' AND name = ?1", [table], |r| r.get(0))
        .or_else(|e| if e == rusqlite::Error::QueryReturnedNoRows { Ok(None) } else { Err(e) })
        .context("reading a data table's definition")
}

fn run(db: &Connection, sql: &str) -> Result<()> {
    db.execute_batch(sql).map_err(|e| OpliteError::sqlite(format!("powersync_replace_schema: {sql}"), e))
}

/// Drops the `data` column of `table` if it has one.
pub fn drop_column(db: &Connection, table: &str) -> Result<()> {
    let has: bool = db
        .query_row(
            "SELECT EXISTS(SELECT 1 FROM pragma_table_xinfo(?1) WHERE name = ?2 COLLATE NOCASE AND hidden IN (2, 3))",
            [table, DATA_COLUMN],
            |r| r.get(0),
        )
        .context("reading a data table's columns")?;
    if has {
        run(db, &format!("ALTER TABLE {} DROP COLUMN {DATA_COLUMN}", identifier(table)))?;
    }
    Ok(())
}

/// Adds the `data` column for `columns` to `table` (last, so
/// [`is_current`] recognises it).
pub fn add_column<S: AsRef<str>>(db: &Connection, table: &str, columns: &[S]) -> Result<()> {
    run(db, &format!("ALTER TABLE {} ADD COLUMN {}", identifier(table), definition(columns)))
}

/// SQL: the triggers and indexes on table ?1, in the main schema and
/// (triggers the SDKs make) the temporary one.
const APP_OBJECTS: &str = "SELECT 'main', type, name, sql FROM main.sqlite_master WHERE tbl_name = ?1 COLLATE NOCASE \
     AND type IN ('trigger', 'index') AND sql IS NOT NULL \
     UNION ALL SELECT 'temp', type, name, sql FROM temp.sqlite_master WHERE tbl_name = ?1 COLLATE NOCASE \
     AND type = 'trigger' AND sql IS NOT NULL";

/// Runs `body` with the app's triggers (also TEMP ones) and indexes on
/// `table` dropped, then creates them again (on the table of the same name
/// `body` leaves). oplite's own indexes (`<table>__<index>`) are not the
/// app's.
pub fn set_aside_app_objects<T>(db: &Connection, table: &str, body: impl FnOnce() -> Result<T>) -> Result<T> {
    let ours = format!("{}__", table.to_lowercase());
    let mut stmt = db.prepare(APP_OBJECTS).context("reading the app's triggers")?;
    let objects: Vec<(String, String, String, String)> = stmt
        .query_map([table], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .and_then(|rows| rows.collect())
        .context("reading the app's triggers")?;
    let objects: Vec<_> = objects
        .into_iter()
        .filter(|(_, kind, name, _)| kind == "trigger" || !name.to_lowercase().starts_with(&ours))
        .map(|(schema, kind, name, sql)| (format!("{}.{}", schema, identifier(&name)), kind, sql))
        .collect();
    for (name, kind, _) in &objects {
        run(db, &format!("DROP {} {name}", kind.to_uppercase()))?;
    }
    let value = body()?;
    for (name, _, sql) in &objects {
        run(db, &recreate_sql(name, sql))?;
    }
    Ok(value)
}

/// The statement that makes `sql` (from `sqlite_master`) again as `name`'s
/// schema had it. SQLite stores a TEMP trigger's text as `CREATE TRIGGER`
/// (it drops TEMP when it stores the statement), and that text, run
/// again, would make a trigger in main, whose body resolves names in main
/// and no longer sees the app's TEMP tables.
fn recreate_sql(name: &str, sql: &str) -> String {
    match (name.starts_with("temp."), sql.strip_prefix("CREATE TRIGGER ")) {
        (true, Some(rest)) => format!("CREATE TEMP TRIGGER {rest}"),
        _ => sql.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_triggers_are_made_again_as_temp_triggers() {
        let stored = "CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; END";
        assert_eq!(recreate_sql("temp.\"t\"", stored), "CREATE TEMP TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; END");
        assert_eq!(recreate_sql("main.\"t\"", stored), stored);
        assert_eq!(recreate_sql("main.\"i\"", "CREATE INDEX i ON x(a)"), "CREATE INDEX i ON x(a)");
    }

    #[test]
    fn definition_and_recognition() {
        let def = definition(&["a", "b c"]);
        assert!(def.starts_with("data TEXT GENERATED ALWAYS AS (CASE WHEN oplite_data_skipped() THEN NULL WHEN ps_undeclared IS NULL"));
        assert!(def.contains(r#"rtrim(json_object('a', "a", 'b c', "b c"), '}')"#));
        let sql = format!("CREATE TABLE \"t\"(id TEXT PRIMARY KEY NOT NULL, \"a\", \"b c\", ps_undeclared TEXT, {def})");
        assert!(is_current(Some(&sql), &["a", "b c"]));
        assert!(!is_current(Some(&sql), &["b c", "a"]));
        assert!(!is_current(None, &["a"]));
        assert_eq!(definition::<&str>(&[]), "data TEXT GENERATED ALWAYS AS (coalesce(ps_undeclared, '{}')) VIRTUAL");
    }

    #[cfg(feature = "bundled")]
    #[test]
    fn renders_rows_as_json() {
        let columns: Vec<String> = (0..120).map(|i| format!("c{i}")).collect();
        let db = Connection::open_in_memory().unwrap();
        register(&db).unwrap();
        let names: Vec<String> = columns.iter().map(|c| identifier(c)).collect();
        db.execute_batch(&format!(
            "CREATE TABLE t(id TEXT PRIMARY KEY NOT NULL, {}, ps_undeclared TEXT, {})",
            names.join(", "),
            definition(&columns)
        ))
        .unwrap();
        db.execute("INSERT INTO t(id, c0, c1, c119, ps_undeclared) VALUES ('a', 1, 'x}', 2.5, '{\"u\":null}')", []).unwrap();
        db.execute("INSERT INTO t(id, ps_undeclared) VALUES ('b', 'not json')", []).unwrap();
        let data = |id: &str| -> String { db.query_row("SELECT data FROM t WHERE id = ?1", [id], |r| r.get(0)).unwrap() };
        let parsed: serde_json::Value = serde_json::from_str(&data("a")).unwrap();
        let object = parsed.as_object().unwrap();
        assert_eq!(object.len(), 121);
        assert_eq!(object.keys().next().map(String::as_str), Some("c0"));
        assert_eq!(object.keys().next_back().map(String::as_str), Some("u"));
        assert_eq!((&object["c0"], &object["c1"], &object["c119"], &object["c5"]), (&1.into(), &"x}".into(), &2.5.into(), &serde_json::Value::Null));
        assert_eq!(data("b"), "not json");
        // Written while skipping: the value is rendered when read.
        {
            let _skip = SkipDataGuard::enter(&db);
            db.execute("INSERT INTO t(id, c0) VALUES ('c', 'x')", []).unwrap();
        }
        assert!(data("c").starts_with(r#"{"c0":"x","c1":null"#));
    }
}
