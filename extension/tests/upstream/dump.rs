//! Text dumps of a database as the Dart migration tests compare them: the
//! schema (tables, indexes, views, triggers in a fixed order), the
//! `ps_migration` rows and the rows of the sync tables, each statement
//! prefixed with `;` so the fixtures can be executed as they are.

use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;

/// Tables, indexes, views and triggers, one `;`-prefixed statement a line.
pub fn schema(db: &Connection) -> String {
    let mut stmt = db
        .prepare(
            "SELECT name, sql FROM sqlite_master ORDER BY
               CASE
                 WHEN type = 'table' AND name LIKE 'ps_data_%' THEN 3
                 WHEN type = 'table' THEN 1
                 WHEN type = 'index' THEN 2
                 WHEN type = 'view' THEN 4
                 WHEN type = 'trigger' THEN 5
               END ASC, name ASC",
        )
        .unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))).unwrap();
    let mut out = Vec::new();
    for row in rows {
        let (name, sql) = row.unwrap();
        if name.starts_with("__") || name == "sqlite_sequence" {
            continue;
        }
        if let Some(sql) = sql {
            out.push(format!(";{}", sql.trim()));
        }
    }
    out.join("\n")
}

/// The rows of `ps_migration` as INSERT statements.
pub fn migrations(db: &Connection) -> String {
    let mut stmt = db.prepare("SELECT id, down_migrations FROM ps_migration ORDER BY id ASC").unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Option<String>>(1)?))).unwrap();
    rows.map(|row| {
        let (id, down) = row.unwrap();
        let down = down.map_or("null".to_string(), |d| quote(&d));
        format!(";INSERT INTO ps_migration(id, down_migrations) VALUES({id}, {down})")
    })
    .collect::<Vec<_>>()
    .join("\n")
}

/// `schema` and `migrations`, as the fixtures' states are written.
pub fn schema_and_migrations(db: &Connection) -> String {
    format!("{}\n{}", schema(db), migrations(db))
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn literal(value: SqlValue) -> String {
    match value {
        SqlValue::Null => "null".into(),
        SqlValue::Integer(i) => i.to_string(),
        SqlValue::Text(t) => quote(&t),
        other => panic!("no literal for {other:?} in the Dart fixtures"),
    }
}

/// The rows of the sync tables (and `lists` / `todos` data) as INSERTs.
pub fn data(db: &Connection) -> String {
    data_with_buckets(db, "SELECT * FROM ps_buckets ORDER BY name")
}

/// [`data`], with ps_buckets read by `buckets` (a query of chosen columns).
pub fn data_with_buckets(db: &Connection, buckets: &str) -> String {
    let queries = [
        ("ps_buckets", buckets),
        ("ps_oplog", "SELECT * FROM ps_oplog ORDER BY bucket, op_id"),
        ("ps_updated_rows", "SELECT * FROM ps_updated_rows ORDER BY row_type, row_id"),
        ("ps_data__lists", "SELECT * FROM ps_data__lists ORDER BY id"),
        ("ps_data__todos", "SELECT * FROM ps_data__todos ORDER BY id"),
    ];
    let mut out = Vec::new();
    for (table, sql) in queries {
        let mut stmt = match db.prepare(sql) {
            Ok(stmt) => stmt,
            Err(e) if e.to_string().contains("no such table") => continue,
            Err(e) => panic!("{sql}: {e}"),
        };
        let names: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
        let n = names.len();
        let rows: Vec<String> = stmt
            .query_map([], |r| {
                let values: rusqlite::Result<Vec<String>> = (0..n).map(|i| Ok(literal(r.get(i)?))).collect();
                Ok(format!("({})", values?.join(", ")))
            })
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        if rows.is_empty() {
            continue;
        }
        out.push(format!(";INSERT INTO {table}({}) VALUES", names.join(", ")));
        out.push(format!("  {}", rows.join(",\n  ")));
    }
    out.join("\n")
}
