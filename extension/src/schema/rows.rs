//! SQL that turns a synced row's JSON into a data-table row and back.
//!
//! Decoding set-wise joins `oplite_row(data, keys)` (`schema/decode.rs`),
//! whose columns are the declared values and then [`UNDECLARED_COLUMN`]'s;
//! a single row (and tables wider than `oplite_row` allows) calls
//! `oplite_field` per column. Both parse the row once and give
//! exactly what the reference core's view would have extracted with
//! `json_extract` (strings stay text, `1.0` stays real, objects and arrays
//! become their JSON text). Filling a column from stored undeclared fields
//! uses `json_extract` and `oplite_undeclared` directly.
//!
//! Encoding (for rows that move to ps_untyped, or to the JSON layout) is
//! `json_object` of the columns joined with the undeclared fields.

use super::decode::ROW_KEYS;
use super::model::UNDECLARED_COLUMN;
use super::quote::{identifier, json_path, string, PATHS_PER_CALL};

/// Keys per `oplite_undeclared` call.
const UNDECLARED_KEYS_PER_CALL: usize = 120;
/// Pairs per `json_object` call.
const PAIRS_PER_CALL: usize = 60;

/// The value of key `column` in the JSON text `data` (an SQL expression).
pub fn extract(data: &str, column: &str) -> String {
    format!("json_extract({data}, {})", json_path(column))
}

/// The fields of `data` that `columns` do not declare, or NULL if none
/// (see [`super::undeclared`]; `json_remove` for very wide tables).
pub fn undeclared(data: &str, columns: &[String]) -> String {
    if columns.len() <= UNDECLARED_KEYS_PER_CALL {
        let keys: String = columns.iter().map(|c| format!(", {}", string(c))).collect();
        return format!("oplite_undeclared({data}{keys})");
    }
    let mut expr = data.to_owned();
    for chunk in columns.chunks(PATHS_PER_CALL) {
        let paths: Vec<String> = chunk.iter().map(|c| json_path(c)).collect();
        expr = format!("json_remove({expr}, {})", paths.join(", "));
    }
    format!("NULLIF({expr}, '{{}}')")
}

/// The column list, decoded values (`value(i)` for column `i`, then for
/// [`UNDECLARED_COLUMN`]) and upsert clause shared by the typed statements
/// below.
fn typed_parts(columns: &[String], id: &str, value: impl Fn(usize) -> String) -> (String, String, String) {
    let mut names = vec!["id".to_owned()];
    let mut values = vec![id.to_owned()];
    let mut sets = Vec::new();
    for (i, column) in columns.iter().enumerate() {
        let quoted = identifier(column);
        names.push(quoted.clone());
        values.push(value(i));
        sets.push(format!("{quoted} = excluded.{quoted}"));
    }
    names.push(UNDECLARED_COLUMN.to_owned());
    values.push(value(columns.len()));
    sets.push(format!("{UNDECLARED_COLUMN} = excluded.{UNDECLARED_COLUMN}"));
    (names.join(", "), values.join(", "), sets.join(", "))
}

/// The declared keys as the SQL literal of a JSON array, the `keys`
/// argument of `oplite_field` and `oplite_row`.
pub fn keys_literal(columns: &[String]) -> String {
    string(&serde_json::to_string(columns).unwrap_or_else(|_| "[]".to_owned()))
}

/// Upserts one row into a typed table: `?1` the id, `?2` the JSON data.
/// One `oplite_field` call per column: for a single row, opening a cursor
/// of `oplite_row` per execution costs more than the calls (200k rows one
/// at a time: 563 ms against 421 ms).
pub fn upsert_typed_row(table: &str, columns: &[String], replace: bool) -> String {
    let keys = keys_literal(columns);
    let (names, values, sets) = typed_parts(columns, "?1", |i| format!("oplite_field(?2, {keys}, {i})"));
    upsert(&identifier(table), &names, &format!("VALUES ({values})"), &sets, replace)
}

/// `INSERT INTO table(names) source` that updates a row with the same id:
/// in place (ON CONFLICT DO UPDATE), or, with `replace`, as the reference
/// core writes synced rows, INSERT OR REPLACE, so the app's triggers on the
/// data table see a DELETE (under `recursive_triggers`) and an INSERT.
fn upsert(table: &str, names: &str, source: &str, sets: &str, replace: bool) -> String {
    if replace {
        format!("INSERT OR REPLACE INTO {table}({names}) {source}")
    } else {
        // `WHERE true` tells SQLite's parser a SELECT's ON belongs to the
        // upsert, not a join.
        let filter = if source.starts_with("SELECT") { " WHERE true" } else { "" };
        format!("INSERT INTO {table}({names}) {source}{filter} ON CONFLICT(id) DO UPDATE SET {sets}")
    }
}

/// Upserts every row of `source` (a SELECT yielding `id` and `data`) into a
/// typed table.
pub fn upsert_typed_from_select(table: &str, columns: &[String], source: &str, replace: bool) -> String {
    let table = identifier(table);
    let keys = keys_literal(columns);
    if columns.len() > ROW_KEYS {
        let (names, values, sets) = typed_parts(columns, "id", |i| format!("oplite_field(data, {keys}, {i})"));
        return upsert(&table, &names, &format!("SELECT {values} FROM ({source})"), &sets, replace);
    }
    let (names, values, sets) = typed_parts(columns, "s.id", |i| format!("d.v{i}"));
    let select = format!("SELECT {values} FROM ({source}) AS s, oplite_row(s.data, {keys}) AS d");
    upsert(&table, &names, &select, &sets, replace)
}

/// Upserts one row into a JSON-layout table: `?1` the id, `?2` the data.
pub fn upsert_json_row(table: &str) -> String {
    format!("INSERT OR REPLACE INTO {}(id, data) VALUES (?1, ?2)", identifier(table))
}

/// Upserts every row of `source` into a JSON-layout table.
pub fn upsert_json_from_select(table: &str, source: &str) -> String {
    format!("INSERT OR REPLACE INTO {}(id, data) SELECT id, data FROM ({source})", identifier(table))
}

/// Stores a row whose data is not a JSON text SQLite can read: no column
/// values, the text kept in [`UNDECLARED_COLUMN`] as it came.
pub fn upsert_typed_unreadable(table: &str, columns: &[String], replace: bool) -> String {
    let mut names = vec!["id".to_owned()];
    let mut values = vec!["?1".to_owned()];
    let mut sets = Vec::new();
    for column in columns {
        names.push(identifier(column));
        values.push("NULL".into());
        sets.push(format!("{} = NULL", identifier(column)));
    }
    names.push(UNDECLARED_COLUMN.into());
    values.push("?2".into());
    sets.push(format!("{UNDECLARED_COLUMN} = ?2"));
    upsert(&identifier(table), &names.join(", "), &format!("VALUES ({})", values.join(", ")), &sets.join(", "), replace)
}

/// The JSON text of a typed row: `(key, column)` pairs rendered with
/// `json_object`, joined with the undeclared fields. `columns` maps JSON
/// keys to the SQL column holding them.
pub fn typed_row_json(columns: &[(String, String)]) -> String {
    let objects: Vec<String> = columns
        .chunks(PAIRS_PER_CALL)
        .map(|chunk| {
            let pairs: Vec<String> = chunk.iter().map(|(key, col)| format!("{}, {}", string(key), identifier(col))).collect();
            format!("json_object({})", pairs.join(", "))
        })
        .collect();
    let object = match objects.len() {
        0 => "json_object()".to_owned(),
        1 => objects[0].clone(),
        _ => format!("oplite_json_merge({})", objects.join(", ")),
    };
    format!(
        "CASE WHEN {u} IS NULL THEN {object} \
         WHEN json_valid({u}) AND json_type({u}) = 'object' THEN oplite_json_merge({object}, {u}) \
         ELSE {u} END",
        u = UNDECLARED_COLUMN
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_upsert() {
        assert_eq!(
            upsert_typed_row("ps_data__t", &["a".into(), "b c".into()], false),
            "INSERT INTO \"ps_data__t\"(id, \"a\", \"b c\", ps_undeclared) VALUES (?1, oplite_field(?2, '[\"a\",\"b c\"]', 0), \
             oplite_field(?2, '[\"a\",\"b c\"]', 1), oplite_field(?2, '[\"a\",\"b c\"]', 2)) \
             ON CONFLICT(id) DO UPDATE SET \"a\" = excluded.\"a\", \"b c\" = excluded.\"b c\", ps_undeclared = excluded.ps_undeclared"
        );
        assert!(upsert_typed_from_select("t", &[], "SELECT 1", false).contains("SELECT s.id, d.v0 FROM (SELECT 1) AS s, oplite_row(s.data, '[]') AS d"));
        let wide: Vec<String> = (0..=ROW_KEYS).map(|i| format!("c{i}")).collect();
        let sql = upsert_typed_from_select("t", &wide, "SELECT 1", false);
        assert!(sql.contains(&format!("oplite_field(data, {}, {})", string(&serde_json::to_string(&wide).unwrap()), ROW_KEYS + 1)));
        assert!(!sql.contains("oplite_row"));
    }

    #[cfg(feature = "bundled")]
    #[test]
    fn decode_and_encode_round_trip() {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        db.execute_batch(r#"CREATE TABLE t(id TEXT PRIMARY KEY NOT NULL, "a", "b.c", ps_undeclared TEXT)"#).unwrap();
        crate::schema::register(&db).unwrap();
        let cols = vec!["a".to_owned(), "b.c".to_owned()];
        let sql = upsert_typed_row("t", &cols, false);
        db.execute(&sql, ["1", r#"{"a":1.0,"b.c":[1, 2],"x":{"y":null},"z":"s"}"#]).unwrap();
        db.execute(&sql, ["2", r#"{"a":"text"}"#]).unwrap();
        let row: (String, String, String, Option<String>) = db
            .query_row(r#"SELECT typeof("a"), quote("a"), "b.c", ps_undeclared FROM t WHERE id = '1'"#, [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .unwrap();
        assert_eq!(row, ("real".into(), "1.0".into(), "[1,2]".into(), Some(r#"{"x":{"y":null},"z":"s"}"#.into())));
        let pairs: Vec<(String, String)> = cols.iter().map(|c| (c.clone(), c.clone())).collect();
        let json: String = db
            .query_row(&format!("SELECT {} FROM t WHERE id = '2'", typed_row_json(&pairs)), [], |r| r.get(0))
            .unwrap();
        assert_eq!(json, r#"{"a":"text","b.c":null}"#);
    }
}
