//! Direct tables (core 0.5.4's table option `"direct": true`): the app's
//! table is a real STRICT table named as the table, with no view and no
//! `ps_data__` table in between.
//!
//! Apps and SDKs read these tables straight from `sqlite_master`, and the
//! reference core recognises its own by the text it wrote, so every
//! statement here is the reference's text: `id TEXT PRIMARY KEY NOT NULL`
//! marked `/* ps-managed */` (or `/* ps-managed local-only */`), one `ANY`
//! column per declared column, indexes marked `/* ps-managed */`, and AFTER
//! triggers that queue local writes through `powersync_crud` unless a sync
//! operation is writing. A database either core wrote therefore reads the
//! same to the other, and oplite keeps no layout of its own for them.
//!
//! The sync apply writes them as the reference does: an upsert over the
//! declared columns (`INSERT ... ON CONFLICT (id) DO UPDATE`), values bound
//! as the reference binds a raw table's columns (booleans 0/1, numbers as
//! INTEGER when they fit, strings as text, anything else NULL), fields the
//! schema does not declare dropped, and deletes by id.

use rusqlite::{params_from_iter, Connection};

use super::model::{Column, IncludeOld, Index, RawParam, RawStatement, Table};
use super::quote::{identifier, json_path, string};
use super::raw;
use crate::error::{OpliteError, Result, SqliteResultExt};

/// Starts the marker comment of a direct table's `id` column (and ends up
/// in its indexes' SQL).
pub const MARKER: &str = "/* ps-managed";
/// The marker of a direct table's indexes.
const INDEX_MARKER: &str = "/* ps-managed */";
/// Key-value pairs per `json_object` call, as in the reference (so wide
/// tables get the same trigger text).
const PAIRS_PER_OBJECT: usize = 50;

/// True for the `CREATE TABLE` text of a direct table.
pub fn is_direct_table_sql(sql: &str) -> bool {
    sql.contains(MARKER)
}

/// True for the `CREATE TABLE` text of a local-only direct table.
pub fn is_local_only_sql(sql: &str) -> bool {
    sql.contains("local-only */")
}

/// True for the `CREATE INDEX` text of a direct table's index.
pub fn is_direct_index_sql(sql: &str) -> bool {
    sql.contains(" ps-managed ")
}

/// `CREATE TABLE` of a direct table, as the reference writes it.
pub fn create_table(table: &Table) -> String {
    create_table_named(&table.name, table.local_only, &table.columns)
}

/// [`create_table`] from its parts.
pub fn create_table_named(name: &str, local_only: bool, columns: &[Column]) -> String {
    let marker = if local_only { "/* ps-managed local-only */" } else { "/* ps-managed */" };
    let mut sql = format!("CREATE TABLE {}(id TEXT PRIMARY KEY NOT NULL {marker}", identifier(name));
    for column in columns {
        sql.push_str(&format!(",{} ANY", identifier(&column.name)));
    }
    sql.push_str(") STRICT");
    sql
}

/// `(name, CREATE INDEX)` of each index: named after the `ps_data__` table
/// the table would have had, as in the reference.
pub fn create_indexes(table: &Table) -> Vec<(String, String)> {
    let prefix = if table.local_only { "ps_data_local__" } else { "ps_data__" };
    table
        .indexes
        .iter()
        .map(|index: &Index| {
            let name = format!("{prefix}{}__{}", table.name, index.name);
            let parts: Vec<String> = index
                .columns
                .iter()
                .map(|c| format!("{}{}", identifier(&c.name), if c.ascending { "" } else { " DESC" }))
                .collect();
            let sql =
                format!("CREATE INDEX {}{INDEX_MARKER} ON {}({})", identifier(&name), identifier(&table.name), parts.join(", "));
            (name, sql)
        })
        .collect()
}

/// The triggers' names, whether or not the table has them.
pub fn trigger_names(table_name: &str) -> [String; 3] {
    ["insert", "update", "delete"].map(|kind| format!("ps_view_{kind}_{table_name}"))
}

/// `(name, CREATE TRIGGER)` for the upload triggers; a trigger with nothing
/// to do (a local-only table's INSERT and DELETE) is left out.
pub fn create_triggers(table: &Table) -> Vec<(String, String)> {
    [Write::Insert, Write::Update, Write::Delete].into_iter().filter_map(|w| trigger(table, w)).collect()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Write {
    Insert,
    Update,
    Delete,
}

fn trigger(table: &Table, write: Write) -> Option<(String, String)> {
    let (kind, keyword) = match write {
        Write::Insert => ("insert", "INSERT"),
        Write::Update => ("update", "UPDATE"),
        Write::Delete => ("delete", "DELETE"),
    };
    let name = format!("ps_view_{kind}_{}", table.name);
    let mut sql = format!(
        "CREATE TRIGGER {} AFTER {keyword} ON {} FOR EACH ROW WHEN NOT powersync_in_sync_operation() BEGIN\n",
        identifier(&name),
        identifier(&table.name)
    );
    let type_name = string(&table.name);
    let all: Vec<&Column> = table.columns.iter().collect();
    if table.insert_only {
        if write == Write::Insert {
            sql.push_str(&format!(
                "INSERT INTO powersync_crud_(data) VALUES(json_object('op', 'PUT', 'type', {type_name}, 'id', NEW.id, 'data', json(powersync_diff('{{}}', {}))));",
                object("NEW", &all)
            ));
        } else {
            sql.push_str("SELECT RAISE(ABORT, 'Unexpected update on insert-only table');\n");
        }
        sql.push_str("END");
        return Some((name, sql));
    }
    if write == Write::Update {
        sql.push_str("SELECT CASE WHEN (OLD.id != NEW.id) THEN RAISE (ABORT, 'Cannot update id') END;\n");
    } else if table.local_only {
        return None;
    }
    if !table.local_only {
        sql.push_str(&crud_insert(table, write, &all, &type_name));
    }
    sql.push_str("END");
    Some((name, sql))
}

/// The `INSERT INTO powersync_crud(...)` of one write.
fn crud_insert(table: &Table, write: Write, all: &[&Column], type_name: &str) -> String {
    let new = object("NEW", all);
    let (op, id) = match write {
        Write::Insert => ("PUT", "NEW.id"),
        Write::Update => ("PATCH", "NEW.id"),
        Write::Delete => ("DELETE", "OLD.id"),
    };
    let data = match write {
        Write::Insert => Some(format!("json(powersync_diff('{{}}', {new}))")),
        Write::Update => Some(format!("json(powersync_diff({}, {new}))", object("OLD", all))),
        Write::Delete => None,
    };
    let old_values = match (write, &table.include_old) {
        (Write::Insert, _) | (_, IncludeOld::No) => None,
        (_, include) => {
            let kept: Vec<&Column> = match include {
                IncludeOld::Columns(only) => all.iter().copied().filter(|c| only.iter().any(|o| *o == c.name)).collect(),
                _ => all.to_vec(),
            };
            let old = object("OLD", &kept);
            if write == Write::Update && table.include_old_only_when_changed {
                Some(format!("json(powersync_diff({}, {old}))", object("NEW", &kept)))
            } else {
                Some(old)
            }
        }
    };
    let options = (write == Write::Update).then(|| {
        (table.local_only as i64)
            | (table.insert_only as i64) << 1
            | (table.include_metadata as i64) << 2
            | (table.include_old_only_when_changed as i64) << 3
            | (table.ignore_empty_update as i64) << 4
    });
    let mut names = String::from("op,id,type");
    let mut values = format!("'{op}', {id}, {type_name}");
    if let Some(data) = data {
        names.push_str(",data");
        values.push_str(&format!(", {data}"));
    }
    if let Some(old) = old_values {
        names.push_str(",old_values");
        values.push_str(&format!(", {old}"));
    }
    if let Some(options) = options {
        names.push_str(",options");
        values.push_str(&format!(", {options}"));
    }
    format!("INSERT INTO powersync_crud({names}) VALUES ({values});\n")
}

/// `json_object('a', powersync_strip_subtype(ROW."a"), ...)` in column
/// order, merged from chunks of 50 pairs for wide tables, as the reference
/// writes it.
pub fn object(row: &str, columns: &[&Column]) -> String {
    let pair = |c: &&Column| format!("{}, powersync_strip_subtype({row}.{})", string(&c.name), identifier(&c.name));
    let chunks: Vec<String> = columns
        .chunks(PAIRS_PER_OBJECT)
        .map(|chunk| format!("json_object({})", chunk.iter().map(pair).collect::<Vec<_>>().join(", ")))
        .collect();
    match chunks.len() {
        0 => "json_object()".into(),
        1 => chunks.into_iter().next().unwrap_or_default(),
        _ => format!("powersync_json_merge({})", chunks.join(", ")),
    }
}

/// [`object`] over column names.
pub fn object_of(row: &str, columns: &[String]) -> String {
    let columns: Vec<Column> = columns.iter().map(|name| Column { name: name.clone(), type_name: String::new() }).collect();
    object(row, &columns.iter().collect::<Vec<_>>())
}

/// The sync apply's upsert of one row, as the reference infers it, with
/// what to bind.
pub fn put_statement(table: &str, columns: &[String]) -> RawStatement {
    let mut sql = format!("INSERT INTO {} (id", identifier(table));
    for c in columns {
        sql.push_str(&format!(", {}", identifier(c)));
    }
    sql.push_str(") VALUES (?1");
    for i in 0..columns.len() {
        sql.push_str(&format!(", ?{}", i + 2));
    }
    sql.push_str(") ON CONFLICT (id) DO ");
    if columns.is_empty() {
        sql.push_str("NOTHING");
    } else {
        let sets: Vec<String> = columns.iter().enumerate().map(|(i, c)| format!("{} = ?{}", identifier(c), i + 2)).collect();
        sql.push_str(&format!("UPDATE SET {}", sets.join(", ")));
    }
    let mut params = vec![RawParam::Id];
    params.extend(columns.iter().cloned().map(RawParam::Column));
    RawStatement { sql, params }
}

/// The sync apply's delete of one row.
pub fn delete_sql(table: &str) -> String {
    format!("DELETE FROM {} WHERE id = ?1", identifier(table))
}

/// The values of [`put_statement`] for a row (fails on data that is not a
/// JSON object, as the reference does).
pub fn put_values(statement: &RawStatement, id: &str, data: &str) -> Result<Vec<rusqlite::types::Value>> {
    raw::put_values(statement, id, data)
}

/// A column's value in a row's JSON `data`, as [`put_values`] binds it:
/// objects and arrays are NULL, `-0` the REAL -0.0 (as serde_json reads
/// it), everything else as `json_extract` reads it.
fn extracted(data: &str, column: &str) -> String {
    let path = json_path(column);
    format!(
        "CASE json_type({data}, {path}) WHEN 'object' THEN NULL WHEN 'array' THEN NULL \
         WHEN 'integer' THEN CASE WHEN ({data} -> {path}) = '-0' THEN -0.0 ELSE json_extract({data}, {path}) END \
         ELSE json_extract({data}, {path}) END"
    )
}

/// Set-wise: SQL that upserts every row of `source` (a SELECT of `id` and
/// `data`, JSON object text) into the direct table.
pub fn upsert_from_select(table: &str, columns: &[String], source: &str) -> String {
    let mut names = vec!["id".to_owned()];
    let mut values = vec!["id".to_owned()];
    for c in columns {
        names.push(identifier(c));
        values.push(extracted("data", c));
    }
    let conflict = if columns.is_empty() {
        "NOTHING".to_owned()
    } else {
        let sets: Vec<String> = columns.iter().map(|c| format!("{0} = excluded.{0}", identifier(c))).collect();
        format!("UPDATE SET {}", sets.join(", "))
    };
    format!(
        "INSERT INTO {}({}) SELECT {} FROM ({source}) WHERE true ON CONFLICT(id) DO {conflict}",
        identifier(table),
        names.join(", "),
        values.join(", ")
    )
}

/// Fills the direct table `table` (with `columns`) from `source` (a SELECT
/// of `id` and `data`), row by row as the sync apply writes, so a migrated
/// row holds what a synced one would.
pub fn fill_from_select(db: &Connection, table: &str, columns: &[String], source: &str) -> Result<()> {
    let statement = put_statement(table, columns);
    let mut read = db.prepare(source).map_err(|e| OpliteError::sqlite(format!("preparing {source}"), e))?;
    let rows: Vec<(String, Option<String>)> = read
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|rows| rows.collect())
        .context("reading rows for a direct table")?;
    let mut write = db.prepare(&statement.sql).map_err(|e| OpliteError::sqlite(format!("preparing {}", statement.sql), e))?;
    for (id, data) in rows {
        let Some(data) = data else { continue };
        let values = put_values(&statement, &id, &data)?;
        write.execute(params_from_iter(values)).map_err(|e| {
            OpliteError::sqlite_statement(statement.sql.clone(), format!("replacing into {table}, id = {id}, data = {data}"), e)
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::model::Schema;

    fn table(json: &str) -> Table {
        Schema::parse(&format!(r#"{{"tables":[{json}]}}"#)).unwrap().tables.remove(0)
    }

    #[test]
    fn ddl_is_the_reference_text() {
        let t = table(
            r#"{"name":"users","direct":true,"columns":[{"name":"name","type":"text"},{"name":"age","type":"integer"}],
            "indexes":[{"name":"ix","columns":[{"name":"age","ascending":false,"type":"integer"}]}]}"#,
        );
        assert_eq!(
            create_table(&t),
            r#"CREATE TABLE "users"(id TEXT PRIMARY KEY NOT NULL /* ps-managed */,"name" ANY,"age" ANY) STRICT"#
        );
        assert_eq!(
            create_indexes(&t),
            vec![(
                "ps_data__users__ix".to_owned(),
                r#"CREATE INDEX "ps_data__users__ix"/* ps-managed */ ON "users"("age" DESC)"#.to_owned()
            )]
        );
        assert_eq!(
            put_statement("users", &["name".into(), "age".into()]).sql,
            r#"INSERT INTO "users" (id, "name", "age") VALUES (?1, ?2, ?3) ON CONFLICT (id) DO UPDATE SET "name" = ?2, "age" = ?3"#
        );
    }

    #[test]
    fn local_only_tables_queue_nothing() {
        let t = table(r#"{"name":"l","direct":true,"local_only":true,"columns":[{"name":"a","type":"text"}]}"#);
        assert!(create_table(&t).contains("/* ps-managed local-only */"));
        let triggers = create_triggers(&t);
        assert_eq!(triggers.len(), 1);
        assert!(!triggers[0].1.contains("powersync_crud"));
    }
}

