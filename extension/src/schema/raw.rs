//! Raw tables: what the sync apply binds to their statements, the
//! statements inferred for raw tables that give only a `table_name`, and
//! `powersync_create_raw_table_crud_trigger`; and where the last schema's
//! raw tables are kept (`ps_oplite_raw_tables`).
//!
//! The reference core's (0.5.4) observable behaviour decides every detail
//! here: how synced values are bound (booleans as 0/1, numbers that fit an
//! i64 as INTEGER and other numbers as REAL, strings as text, anything else
//! NULL; `Rest` is an object of the unmatched fields in key order, or NULL
//! when none is left; `Row` is the row's data text as received, and a
//! statement binding only `Id` and `Row` never parses it), the SQL of
//! inferred statements and of the triggers, and the error messages.

use std::collections::BTreeMap;

use rusqlite::types::Value;
use rusqlite::Connection;
use serde_json::Value as Json;

use super::model::{IncludeOld, RawParam, RawStatement, RawTable};
use super::quote::{identifier, string};
use crate::error::{OpliteError, Result, SqliteResultExt};

fn invalid(function: &'static str, message: String) -> OpliteError {
    OpliteError::InvalidArgument { function, message, type_mismatch: false }
}

/// The local table's name, required to infer statements or triggers.
fn table_name<'a>(raw: &'a RawTable, function: &'static str) -> Result<&'a str> {
    raw.table_name.as_deref().ok_or_else(|| invalid(function, format!("Raw table {} has no local name", raw.name)))
}

/// The local table's columns besides `id` (only the synced ones when
/// `synced_columns` is given), in table order.
fn local_columns(db: &Connection, raw: &RawTable, function: &'static str) -> Result<(String, Vec<String>)> {
    let table = table_name(raw, function)?;
    let mut stmt = db.prepare("SELECT name FROM pragma_table_info(?1)").context("reading a raw table's columns")?;
    let names: Vec<String> =
        stmt.query_map([table], |r| r.get(0)).context("reading a raw table's columns")?.collect::<rusqlite::Result<_>>().context("reading a raw table's columns")?;
    let has_id = names.iter().any(|n| n == "id");
    let columns: Vec<String> = names
        .into_iter()
        .filter(|n| n != "id")
        .filter(|n| raw.synced_columns.as_ref().is_none_or(|s| s.contains(n)))
        .collect();
    if !has_id && columns.is_empty() {
        return Err(invalid(function, format!("Could not find {table} in local schema.")));
    }
    if !has_id {
        return Err(invalid(function, format!("Table {table} has no id column.")));
    }
    Ok((table.to_owned(), columns))
}

/// The put statement: the raw table's own, or an upsert of the synced
/// columns into its local table.
pub fn put_statement(db: &Connection, raw: &RawTable) -> Result<RawStatement> {
    if let Some(put) = &raw.put {
        return Ok(put.clone());
    }
    let (table, columns) = local_columns(db, raw, "powersync_control")?;
    let quoted: Vec<String> = columns.iter().map(|c| identifier(c)).collect();
    let mut sql = format!("INSERT INTO {} (id", identifier(&table));
    for q in &quoted {
        sql.push_str(&format!(", {q}"));
    }
    sql.push_str(") VALUES (?1");
    for i in 0..columns.len() {
        sql.push_str(&format!(", ?{}", i + 2));
    }
    // With no column besides `id` there is nothing to update: DO NOTHING
    // (an empty `DO UPDATE SET` would not even prepare).
    if quoted.is_empty() {
        sql.push_str(") ON CONFLICT (id) DO NOTHING");
    } else {
        let updates: Vec<String> = quoted.iter().enumerate().map(|(i, q)| format!("{q} = ?{}", i + 2)).collect();
        sql.push_str(&format!(") ON CONFLICT (id) DO UPDATE SET {}", updates.join(", ")));
    }
    let params = std::iter::once(RawParam::Id).chain(columns.into_iter().map(RawParam::Column)).collect();
    Ok(RawStatement { sql, params })
}

/// The delete statement: the raw table's own, or a delete by id.
pub fn delete_statement(db: &Connection, raw: &RawTable) -> Result<RawStatement> {
    if let Some(delete) = &raw.delete {
        return Ok(delete.clone());
    }
    let (table, _) = local_columns(db, raw, "powersync_control")?;
    Ok(RawStatement { sql: format!("DELETE FROM {} WHERE id = ?", identifier(&table)), params: vec![RawParam::Id] })
}

/// Fails unless the prepared statement has one parameter per source.
pub fn check_parameter_count(statement: &RawStatement, count: usize) -> Result<()> {
    if count != statement.params.len() {
        return Err(invalid(
            "powersync_control",
            format!(
                "Statement {} has {} parameters, but {} values were provided as sources.",
                statement.sql,
                count,
                statement.params.len()
            ),
        ));
    }
    Ok(())
}

/// The values of a put statement's parameters for the synced row.
pub fn put_values(statement: &RawStatement, id: &str, data: &str) -> Result<Vec<Value>> {
    // Only `Column` and `Rest` read the row's fields: a statement binding
    // nothing but `Id` and `Row` takes the data text as it is, whatever it
    // holds, as the reference does.
    let reads_fields = statement.params.iter().any(|p| matches!(p, RawParam::Column(_) | RawParam::Rest));
    let object = if reads_fields { Some(data_object(data)?) } else { None };
    let rest = match &object {
        Some(object) if statement.params.contains(&RawParam::Rest) => rest_value(statement, object)?,
        _ => Value::Null,
    };
    Ok(statement
        .params
        .iter()
        .map(|p| match p {
            RawParam::Id => Value::Text(id.to_owned()),
            RawParam::Column(c) => object.as_ref().and_then(|o| o.get(c)).map_or(Value::Null, bound_field),
            RawParam::Rest => rest.clone(),
            RawParam::Row => Value::Text(data.to_owned()),
        })
        .collect())
}

/// The row's data as a JSON object.
fn data_object(data: &str) -> Result<serde_json::Map<String, Json>> {
    // Data serde_json cannot read (e.g. a number beyond a double's range)
    // is local data SQLite's JSON accepted: SQLITE_CORRUPT, as in the
    // reference.
    let parsed: Json = serde_json::from_str(data).map_err(|e| {
        let code = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT);
        OpliteError::sqlite("reading a raw table row's data", rusqlite::Error::SqliteFailure(code, Some(e.to_string())))
    })?;
    match parsed {
        Json::Object(object) => Ok(object),
        _ => Err(invalid("powersync_control", "expected oplog data to be an object".into())),
    }
}

/// The `Rest` value: an object of the fields no `Id` or `Column` parameter
/// names (`Row` names none), or NULL when every field is named.
fn rest_value(statement: &RawStatement, object: &serde_json::Map<String, Json>) -> Result<Value> {
    let named: Vec<&str> = statement
        .params
        .iter()
        .filter_map(|p| match p {
            RawParam::Id => Some("id"),
            RawParam::Column(c) => Some(c.as_str()),
            RawParam::Rest | RawParam::Row => None,
        })
        .collect();
    let unmatched: BTreeMap<&String, &Json> = object.iter().filter(|(k, _)| !named.contains(&k.as_str())).collect();
    if unmatched.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::to_string(&unmatched).map(Value::Text).map_err(|e| OpliteError::Internal(e.to_string()))
}

/// A field bound to a `Column` parameter: booleans as 0/1, numbers that
/// fit an i64 as INTEGER and other numbers as REAL, strings as text,
/// arrays, objects and null as NULL.
fn bound_field(field: &Json) -> Value {
    match field {
        Json::Bool(b) => Value::Integer(*b as i64),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::Integer(i),
            None => n.as_f64().map_or(Value::Null, Value::Real),
        },
        Json::String(s) => Value::Text(s.clone()),
        _ => Value::Null,
    }
}

/// The values of a delete statement's parameters: only `Id` is allowed.
pub fn delete_values(statement: &RawStatement, id: &str) -> Result<Vec<Value>> {
    statement
        .params
        .iter()
        .map(|p| match p {
            RawParam::Id => Ok(Value::Text(id.to_owned())),
            _ => Err(invalid("powersync_control", "Raw delete statement parameters must only reference id".into())),
        })
        .collect()
}

/// The write a trigger of `powersync_create_raw_table_crud_trigger` is for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Write {
    Insert,
    Update,
    Delete,
}

const TRIGGER_FUNCTION: &str = "powersync_create_raw_table_crud_trigger";

/// `powersync_create_raw_table_crud_trigger(raw_table_json, trigger_name,
/// 'INSERT' | 'UPDATE' | 'DELETE')`: creates a trigger on the raw table's
/// local table that queues the app's writes for upload, as the reference
/// core's does (same SQL, same ps_crud entries). A trigger with nothing to
/// do is not created: the INSERT and DELETE triggers of a `local_only` raw
/// table, which queues nothing.
pub fn create_crud_trigger(db: &Connection, definition: &str, trigger_name: &str, write: &str) -> Result<()> {
    let raw: RawTable =
        serde_json::from_str(definition).map_err(|e| invalid(TRIGGER_FUNCTION, e.to_string()))?;
    let write = match write {
        "INSERT" => Write::Insert,
        "UPDATE" => Write::Update,
        "DELETE" => Write::Delete,
        other => return Err(invalid(TRIGGER_FUNCTION, format!("unexpected write type {other}"))),
    };
    match trigger_sql(db, &raw, trigger_name, write)? {
        Some(sql) => db.execute_batch(&sql).context("creating a raw table's trigger"),
        None => Ok(()),
    }
}

/// The trigger's SQL, or `None` when it would have no statement. Rejected
/// writes use `RAISE(ABORT)`, which (unlike FAIL) also undoes the write the
/// AFTER trigger runs for.
fn trigger_sql(db: &Connection, raw: &RawTable, trigger_name: &str, write: Write) -> Result<Option<String>> {
    let (table, columns) = local_columns(db, raw, TRIGGER_FUNCTION)?;
    let options = &raw.options;
    let keyword = match write {
        Write::Insert => "INSERT",
        Write::Update => "UPDATE",
        Write::Delete => "DELETE",
    };
    let mut sql = format!(
        "CREATE TRIGGER {} AFTER {keyword} ON {} FOR EACH ROW WHEN NOT powersync_in_sync_operation()",
        identifier(trigger_name),
        identifier(&table)
    );
    if write == Write::Update && raw.synced_columns.is_some() {
        let changed: Vec<String> =
            columns.iter().map(|c| format!("OLD.{q} IS NOT NEW.{q}", q = identifier(c))).collect();
        sql.push_str(&format!(" AND\n({})", changed.join(" OR ")));
    }
    sql.push_str(" BEGIN\n");
    // insert_only is ignored on a local_only table.
    let insert_only = options.insert_only && !options.local_only;
    let all: Vec<&str> = columns.iter().map(String::as_str).collect();
    if insert_only {
        if write != Write::Insert {
            sql.push_str("SELECT RAISE(ABORT, 'Unexpected update on insert-only table');\n");
        } else {
            sql.push_str(&format!(
                "INSERT INTO powersync_crud_(data) VALUES(json_object('op', 'PUT', 'type', {}, 'id', NEW.id, 'data', json(powersync_diff('{{}}', {}))));",
                string(&raw.name),
                columns_object("NEW", &all)?
            ));
        }
    } else {
        if write == Write::Update {
            sql.push_str("SELECT CASE WHEN (OLD.id != NEW.id) THEN RAISE (ABORT, 'Cannot update id') END;\n");
        } else if options.local_only {
            // A local-only table queues nothing; only updates keep a check.
            return Ok(None);
        }
        if options.local_only {
            sql.push_str("END");
            return Ok(Some(sql));
        }
        let new_object = columns_object("NEW", &all)?;
        let data = match write {
            Write::Delete => None,
            Write::Insert => Some(format!("json(powersync_diff('{{}}', {new_object}))")),
            Write::Update => Some(format!("json(powersync_diff({}, {new_object}))", columns_object("OLD", &all)?)),
        };
        let old_values = match (write, &options.include_old) {
            (Write::Insert, _) | (_, IncludeOld::No) => None,
            (_, include) => {
                let kept: Vec<&str> = match include {
                    IncludeOld::Columns(only) => all.iter().copied().filter(|c| only.iter().any(|o| o == c)).collect(),
                    _ => all.clone(),
                };
                let old = columns_object("OLD", &kept)?;
                if write == Write::Update && options.include_old_only_when_changed {
                    Some(format!("json(powersync_diff({}, {old}))", columns_object("NEW", &kept)?))
                } else {
                    Some(old)
                }
            }
        };
        let flags = (options.local_only as i64)
            | (options.insert_only as i64) << 1
            | (options.include_metadata as i64) << 2
            | (options.include_old_only_when_changed as i64) << 3
            | (options.ignore_empty_update as i64) << 4;
        let (op, id) = match write {
            Write::Insert => ("PUT", "NEW.id"),
            Write::Update => ("PATCH", "NEW.id"),
            Write::Delete => ("DELETE", "OLD.id"),
        };
        let mut names = String::from("op,id,type");
        let mut values = format!("{}, {id}, {}", string(op), string(&raw.name));
        if let Some(data) = data {
            names.push_str(",data");
            values.push_str(&format!(", {data}"));
        }
        if let Some(old) = old_values {
            names.push_str(",old_values");
            values.push_str(&format!(", {old}"));
        }
        if write == Write::Update {
            names.push_str(",options");
            values.push_str(&format!(", {flags}"));
        }
        sql.push_str(&format!("INSERT INTO powersync_crud({names}) VALUES ({values});\n"));
    }
    sql.push_str("END");
    Ok(Some(sql))
}

/// `json_object('c', powersync_strip_subtype(PREFIX."c"), ...)` over
/// `columns`, in groups of 50 pairs joined by `powersync_json_merge` when
/// there are more (SQLite's default limit of 100 function arguments).
fn columns_object(prefix: &str, columns: &[&str]) -> Result<String> {
    if columns.len() > 1999 {
        return Err(invalid(TRIGGER_FUNCTION, "too many parameters to json_object_fragment".into()));
    }
    let chunk = |names: &[&str]| {
        let pairs: Vec<String> = names
            .iter()
            .map(|c| format!("{}, powersync_strip_subtype({prefix}.{})", string(c), identifier(c)))
            .collect();
        format!("json_object({})", pairs.join(", "))
    };
    if columns.len() <= 50 {
        return Ok(chunk(columns));
    }
    let parts: Vec<String> = columns.chunks(50).map(chunk).collect();
    Ok(format!("powersync_json_merge({})", parts.join(", ")))
}

/// SQL: the raw tables of the last schema, for the sync apply.
const READ_RAW_TABLES: &str = "SELECT definition FROM ps_oplite_raw_tables ORDER BY name";

/// Records the schema's raw tables (only if they changed).
pub(super) fn store_raw_tables(db: &Connection, raw_tables: &[RawTable]) -> Result<()> {
    let stored = load_raw_tables(db)?;
    let mut sorted: Vec<&RawTable> = raw_tables.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    if stored.iter().collect::<Vec<_>>() == sorted {
        return Ok(());
    }
    db.execute_batch("DELETE FROM ps_oplite_raw_tables").context("storing raw tables")?;
    for raw in raw_tables {
        let definition = serde_json::to_string(raw).map_err(|e| OpliteError::Internal(e.to_string()))?;
        db.execute("INSERT INTO ps_oplite_raw_tables(name, definition) VALUES (?1, ?2)", [&raw.name, &definition])
            .context("storing raw tables")?;
    }
    Ok(())
}

/// The raw tables recorded by the last `powersync_replace_schema`.
pub fn load_raw_tables(db: &Connection) -> Result<Vec<RawTable>> {
    let mut stmt = db.prepare_cached(READ_RAW_TABLES).context("reading raw tables")?;
    let definitions: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .and_then(|rows| rows.collect())
        .context("reading raw tables")?;
    definitions
        .iter()
        .map(|json| serde_json::from_str(json).map_err(|e| OpliteError::Internal(format!("stored raw table: {e}"))))
        .collect()
}
