//! Helpers for the schema tests.

use rusqlite::types::Value;
use rusqlite::Connection;

/// Applies `schema` in its own transaction; returns the error message.
pub fn replace_schema(db: &Connection, schema: &str) -> Result<(), String> {
    db.execute_batch("BEGIN").unwrap();
    let result = db.query_row("SELECT powersync_replace_schema(?1)", [schema], |_| Ok(()));
    match result {
        Ok(()) => {
            db.execute_batch("COMMIT").unwrap();
            Ok(())
        }
        Err(e) => {
            db.execute_batch("ROLLBACK").unwrap();
            Err(e.to_string())
        }
    }
}

/// Every row of `sql`, as values.
pub fn rows(db: &Connection, sql: &str) -> Vec<Vec<Value>> {
    let mut stmt = db.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let n = stmt.column_count();
    stmt.query_map([], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect())
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

/// The first column of every row of `sql`, as text (NULL as "NULL").
pub fn texts(db: &Connection, sql: &str) -> Vec<String> {
    rows(db, sql)
        .into_iter()
        .map(|r| match &r[0] {
            Value::Text(t) => t.clone(),
            Value::Integer(i) => i.to_string(),
            Value::Real(f) => f.to_string(),
            Value::Null => "NULL".into(),
            Value::Blob(_) => "BLOB".into(),
        })
        .collect()
}

/// The ps_crud JSON entries, in order.
pub fn crud(db: &Connection) -> Vec<String> {
    texts(db, "SELECT data FROM ps_crud ORDER BY id")
}

/// Empties the upload queue and the marks of a local write.
pub fn forget_uploads(db: &Connection) {
    db.execute_batch("DELETE FROM ps_crud; DELETE FROM ps_updated_rows; DELETE FROM ps_kv WHERE key != 'client_id';")
        .unwrap();
}

/// `sqlite_master` without internal tables, sorted.
pub fn schema_dump(db: &Connection) -> Vec<String> {
    texts(db, "SELECT type || ' ' || name || ': ' || ifnull(sql, '') FROM sqlite_master ORDER BY type, name")
}

/// `PRAGMA schema_version`.
pub fn schema_version(db: &Connection) -> i64 {
    db.query_row("PRAGMA schema_version", [], |r| r.get(0)).unwrap()
}

/// Writes synced rows through the interface the sync apply uses.
pub fn sync_rows(db: &Connection, rows: &[(&str, &str, Option<&str>)]) {
    db.execute_batch("BEGIN").unwrap();
    {
        let tables = oplite::schema::DataTables::load(db).unwrap();
        let mut writer = tables.writer(db).unwrap();
        for (row_type, id, data) in rows {
            match data {
                Some(data) => writer.put(row_type, id, data).unwrap(),
                None => writer.delete(row_type, id).unwrap(),
            }
        }
    }
    db.execute_batch("COMMIT").unwrap();
}
