//! Local writes, as an app makes them.
//!
//! An app writes through the views `powersync_replace_schema` creates; their
//! triggers update the data table and queue the change. [`write`] does that
//! when a view named after the type exists. For a type without one (no
//! schema yet, or a type the schema does not list) it does the bookkeeping
//! the triggers would do itself (observed on the reference core,
//! REFERENCE.md section 3e-1), on the row in `ps_untyped`:
//!
//! - one `ps_crud` entry `{"op","id","type","data"?}` with `tx_id` =
//!   `ps_tx.next_tx`, and `next_tx` moves on;
//! - `(type, id)` goes into `ps_updated_rows`;
//! - `ps_kv.target_checkpoint_request_id` becomes i64::MAX, and the last
//!   seen / applied checkpoint request ids are deleted.
//!
//! The demo and the end-to-end tests use it.

use rusqlite::{params, Connection, OptionalExtension};
use serde::Serialize;
use serde_json::{Map, Value};

/// A `ps_crud` entry, with the reference's key order.
#[derive(Serialize)]
struct CrudEntry<'a> {
    op: &'static str,
    id: &'a str,
    #[serde(rename = "type")]
    row_type: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Map<String, Value>>,
}

/// A local change.
#[derive(Clone, Debug, PartialEq)]
pub enum LocalWrite {
    /// Insert or replace a row with these columns.
    Put(Map<String, Value>),
    /// Change these columns.
    Patch(Map<String, Value>),
    /// Delete the row.
    Delete,
}

/// Applies a local write to `row_type`/`id` in one transaction, with the
/// bookkeeping of the schema's triggers.
pub fn write(db: &Connection, row_type: &str, id: &str, change: &LocalWrite) -> rusqlite::Result<()> {
    db.execute_batch("BEGIN IMMEDIATE")?;
    let result = write_in_transaction(db, row_type, id, change);
    match result {
        Ok(()) => db.execute_batch("COMMIT"),
        Err(e) => {
            let _ = db.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A JSON value as an SQL value (objects and arrays as JSON text).
fn sql_value(value: &Value) -> rusqlite::types::Value {
    use rusqlite::types::Value as Sql;
    match value {
        Value::Null => Sql::Null,
        Value::Bool(b) => Sql::Integer(*b as i64),
        Value::Number(n) => n.as_i64().map(Sql::Integer).unwrap_or_else(|| Sql::Real(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => Sql::Text(s.clone()),
        other => Sql::Text(other.to_string()),
    }
}

/// Writes through the schema's view; its triggers do the bookkeeping.
fn write_through_view(db: &Connection, view: &str, id: &str, change: &LocalWrite) -> rusqlite::Result<()> {
    let view = quote(view);
    let exists = |db: &Connection| -> rusqlite::Result<bool> {
        db.query_row(&format!("SELECT EXISTS (SELECT 1 FROM {view} WHERE id = ?1)"), [id], |r| r.get(0))
    };
    let set = |data: &Map<String, Value>| -> rusqlite::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let assignments: Vec<String> = data.keys().enumerate().map(|(i, k)| format!("{} = ?{}", quote(k), i + 2)).collect();
        let mut values = vec![rusqlite::types::Value::Text(id.to_owned())];
        values.extend(data.values().map(sql_value));
        db.execute(&format!("UPDATE {view} SET {} WHERE id = ?1", assignments.join(", ")), rusqlite::params_from_iter(values))
            .map(|_| ())
    };
    match change {
        LocalWrite::Put(data) if exists(db)? => set(data),
        LocalWrite::Put(data) => {
            let columns: Vec<String> = std::iter::once("id".to_owned()).chain(data.keys().map(|k| quote(k))).collect();
            let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
            let mut values = vec![rusqlite::types::Value::Text(id.to_owned())];
            values.extend(data.values().map(sql_value));
            db.execute(
                &format!("INSERT INTO {view}({}) VALUES ({})", columns.join(", "), marks.join(", ")),
                rusqlite::params_from_iter(values),
            )
            .map(|_| ())
        }
        LocalWrite::Patch(data) => set(data),
        LocalWrite::Delete => db.execute(&format!("DELETE FROM {view} WHERE id = ?1"), [id]).map(|_| ()),
    }
}

fn write_in_transaction(db: &Connection, row_type: &str, id: &str, change: &LocalWrite) -> rusqlite::Result<()> {
    let has_view: bool = db.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'view' AND name = ?1)",
        [row_type],
        |r| r.get(0),
    )?;
    if has_view {
        return write_through_view(db, row_type, id, change);
    }
    let current: Option<String> =
        db.query_row("SELECT data FROM ps_untyped WHERE type = ?1 AND id = ?2", [row_type, id], |r| r.get(0)).optional()?;
    fn entry<'a>(op: &'static str, id: &'a str, row_type: &'a str, data: Option<&'a Map<String, Value>>) -> CrudEntry<'a> {
        CrudEntry { op, id, row_type, data }
    }
    let (entry, new_data) = match change {
        LocalWrite::Put(data) => (entry("PUT", id, row_type, Some(data)), Some(Value::Object(data.clone()).to_string())),
        LocalWrite::Patch(data) => {
            let mut row: Map<String, Value> =
                current.as_deref().and_then(|c| serde_json::from_str(c).ok()).unwrap_or_default();
            for (k, v) in data {
                row.insert(k.clone(), v.clone());
            }
            (entry("PATCH", id, row_type, Some(data)), Some(Value::Object(row).to_string()))
        }
        LocalWrite::Delete => (entry("DELETE", id, row_type, None), None),
    };
    db.execute("DELETE FROM ps_untyped WHERE type = ?1 AND id = ?2", params![row_type, id])?;
    if let Some(data) = &new_data {
        db.execute("INSERT INTO ps_untyped(type, id, data) VALUES (?1, ?2, ?3)", params![row_type, id, data])?;
    }
    let tx_id: i64 = db.query_row("SELECT next_tx FROM ps_tx WHERE id = 1", [], |r| r.get(0))?;
    let entry = serde_json::to_string(&entry).expect("crud entries serialise");
    db.execute("INSERT INTO ps_crud(data, tx_id) VALUES (?1, ?2)", params![entry, tx_id])?;
    db.execute("UPDATE ps_tx SET next_tx = next_tx + 1 WHERE id = 1", [])?;
    db.execute("INSERT OR IGNORE INTO ps_updated_rows(row_type, row_id) VALUES (?1, ?2)", params![row_type, id])?;
    db.execute(
        "INSERT OR REPLACE INTO ps_kv(key, value) VALUES ('target_checkpoint_request_id', ?1)",
        [i64::MAX],
    )?;
    db.execute(
        "DELETE FROM ps_kv WHERE key IN ('last_seen_checkpoint_request_id', 'last_applied_checkpoint_request_id')",
        [],
    )?;
    Ok(())
}

/// The columns of a JSON object (convenience for callers).
pub fn columns(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn records_what_the_triggers_record() {
        let (dir, db) = crate::engine::scratch_database("local");
        let conn = db.conn();
        write(conn, "todos", "t1", &LocalWrite::Put(columns(json!({"a": 1})))).unwrap();
        write(conn, "todos", "t1", &LocalWrite::Patch(columns(json!({"b": 2})))).unwrap();
        write(conn, "todos", "t1", &LocalWrite::Delete).unwrap();
        let crud: Vec<(String, i64)> = conn
            .prepare("SELECT data, tx_id FROM ps_crud ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            crud,
            vec![
                (r#"{"op":"PUT","id":"t1","type":"todos","data":{"a":1}}"#.to_owned(), 1),
                (r#"{"op":"PATCH","id":"t1","type":"todos","data":{"b":2}}"#.to_owned(), 2),
                (r#"{"op":"DELETE","id":"t1","type":"todos"}"#.to_owned(), 3),
            ]
        );
        let target: i64 = conn
            .query_row("SELECT value FROM ps_kv WHERE key = 'target_checkpoint_request_id'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(target, i64::MAX);
        let updated: i64 = conn.query_row("SELECT count(*) FROM ps_updated_rows", [], |r| r.get(0)).unwrap();
        assert_eq!(updated, 1);
        let rows: i64 = conn.query_row("SELECT count(*) FROM ps_untyped", [], |r| r.get(0)).unwrap();
        assert_eq!(rows, 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn writes_go_through_the_schema_view_when_there_is_one() {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE TABLE items_data(id TEXT PRIMARY KEY, name TEXT, qty INTEGER);
             CREATE VIEW items AS SELECT id, name, qty FROM items_data;
             CREATE TRIGGER items_insert INSTEAD OF INSERT ON items
               BEGIN INSERT INTO items_data VALUES (NEW.id, NEW.name, NEW.qty); END;
             CREATE TRIGGER items_update INSTEAD OF UPDATE ON items
               BEGIN UPDATE items_data SET name = NEW.name, qty = NEW.qty WHERE id = OLD.id; END;
             CREATE TRIGGER items_delete INSTEAD OF DELETE ON items
               BEGIN DELETE FROM items_data WHERE id = OLD.id; END;",
        )
        .unwrap();
        let rows = |db: &Connection| -> Vec<(String, Option<String>, Option<i64>)> {
            db.prepare("SELECT id, name, qty FROM items_data ORDER BY id")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        write(&db, "items", "a", &LocalWrite::Put(columns(json!({"name": "x", "qty": 1})))).unwrap();
        write(&db, "items", "b", &LocalWrite::Put(columns(json!({"name": "y"})))).unwrap();
        write(&db, "items", "a", &LocalWrite::Patch(columns(json!({"qty": 5})))).unwrap();
        write(&db, "items", "b", &LocalWrite::Put(columns(json!({"name": "z", "qty": 2})))).unwrap();
        assert_eq!(rows(&db), vec![("a".into(), Some("x".into()), Some(5)), ("b".into(), Some("z".into()), Some(2))]);
        write(&db, "items", "a", &LocalWrite::Delete).unwrap();
        assert_eq!(rows(&db).len(), 1);
    }
}
