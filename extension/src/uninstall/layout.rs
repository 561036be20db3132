//! The PowerSync core's internal tables and indexes, statement for statement
//! (`sql/uninstall/layout.sql`), and the rebuild that gives a database
//! exactly those.
//!
//! oplite's internal tables have the core's columns (plus two of its own in
//! `ps_buckets`) but not its text: its CREATE statements are spaced its own
//! way, and SQLite keeps the text. A table whose text differs is rebuilt
//! under the core's statement: renamed aside, created, filled with the
//! core's columns, dropped. `ps_crud`'s AUTOINCREMENT counter is carried
//! over, so the ids of uploads still to come never repeat one the service
//! has seen.

use rusqlite::Connection;

use super::run;
use crate::error::{OpliteError, Result, SqliteResultExt};
use crate::schema::quote::identifier;
use crate::schema::replace::rename_table;

/// SQL: the core's internal tables and indexes, one statement per block.
const LAYOUT: &str = include_str!("../../../sql/uninstall/layout.sql");

/// One table or index of the core's layout.
#[derive(Debug, Clone, PartialEq)]
pub struct Object {
    /// `table` or `index`.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// Its CREATE statement, as sqlite_master holds it.
    pub sql: String,
}

/// The core's internal tables, then its indexes.
pub fn objects() -> Vec<Object> {
    LAYOUT
        .split("\n;\n")
        .map(|block| block.lines().filter(|l| !l.starts_with("--")).collect::<Vec<_>>().join("\n"))
        .filter(|sql| !sql.trim().is_empty())
        .map(|sql| {
            let words: Vec<&str> = sql.split(|c: char| c.is_whitespace() || c == '(').filter(|w| !w.is_empty()).collect();
            let (kind, name) = match words.as_slice() {
                ["CREATE", "TABLE", name, ..] => ("table", *name),
                ["CREATE", "INDEX", name, ..] | ["CREATE", "UNIQUE", "INDEX", name, ..] => ("index", *name),
                _ => ("", ""),
            };
            Object { kind, name: name.to_owned(), sql }
        })
        .collect()
}

/// The text sqlite_master holds for `name`, if it exists.
fn stored_sql(db: &Connection, kind: &str, name: &str) -> Result<Option<String>> {
    match db.query_row("SELECT sql FROM main.sqlite_master WHERE type = ?1 AND name = ?2", [kind, name], |r| r.get(0)) {
        Ok(sql) => Ok(sql),
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
        Err(e) => Err(OpliteError::sqlite("reading sqlite_master", e)),
    }
}

/// Gives every internal table and index the core's text. Returns the
/// tables rebuilt and the indexes created, in that order.
pub fn restore(db: &Connection) -> Result<(Vec<String>, Vec<String>)> {
    let objects = objects();
    let mut rebuilt = Vec::new();
    for table in objects.iter().filter(|o| o.kind == "table") {
        if stored_sql(db, "table", &table.name)?.as_deref() != Some(table.sql.as_str()) {
            rebuild(db, table)?;
            rebuilt.push(table.name.clone());
        }
    }
    let mut indexes = Vec::new();
    for index in objects.iter().filter(|o| o.kind == "index") {
        if stored_sql(db, "index", &index.name)?.as_deref() != Some(index.sql.as_str()) {
            run(db, &format!("DROP INDEX IF EXISTS {}", identifier(&index.name)))?;
            run(db, &index.sql)?;
            indexes.push(index.name.clone());
        }
    }
    Ok((rebuilt, indexes))
}

/// Rebuilds `table` (which must exist) under the core's statement.
fn rebuild(db: &Connection, table: &Object) -> Result<()> {
    let aside = format!("{}__oplite_old", table.name);
    let sequence: Option<i64> = db
        .query_row("SELECT seq FROM sqlite_sequence WHERE name = ?1", [&table.name], |r| r.get(0))
        .or_else(|e| match e {
            // No row yet, or no AUTOINCREMENT table at all.
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            rusqlite::Error::SqliteFailure(_, Some(ref m)) if m.contains("no such table") => Ok(None),
            e => Err(e),
        })
        .context("reading sqlite_sequence")?;
    rename_table(db, &table.name, &aside)?;
    run(db, &table.sql)?;
    let columns: Vec<String> = {
        let mut stmt = db.prepare("SELECT name FROM pragma_table_info(?1)").context("reading a table's columns")?;
        let names = stmt.query_map([&table.name], |r| r.get::<_, String>(0)).and_then(|rows| rows.collect());
        names.context("reading a table's columns")?
    };
    let list = columns.iter().map(|c| identifier(c)).collect::<Vec<_>>().join(", ");
    run(db, &format!("INSERT INTO {}({list}) SELECT {list} FROM {}", identifier(&table.name), identifier(&aside)))?;
    run(db, &format!("DROP TABLE {}", identifier(&aside)))?;
    if table.sql.contains("AUTOINCREMENT") {
        // The copy leaves a row (seq 0 when it copied none): put back what
        // was there.
        db.execute("DELETE FROM sqlite_sequence WHERE name = ?1", [&table.name]).context("writing sqlite_sequence")?;
        if let Some(seq) = sequence {
            db.execute("INSERT INTO sqlite_sequence(name, seq) VALUES (?1, ?2)", rusqlite::params![table.name, seq])
                .context("writing sqlite_sequence")?;
        }
    }
    Ok(())
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_parses_into_the_cores_tables_and_indexes() {
        let objects = objects();
        let names: Vec<(&str, &str)> = objects.iter().map(|o| (o.kind, o.name.as_str())).collect();
        assert_eq!(names.len(), 14, "{names:?}");
        assert!(names.iter().all(|(kind, _)| !kind.is_empty()), "{names:?}");
        assert!(names.contains(&("table", "ps_crud")) && names.contains(&("index", "ps_buckets_name")));
        let crud = objects.iter().find(|o| o.name == "ps_crud").unwrap();
        assert_eq!(crud.sql, "CREATE TABLE ps_crud (id INTEGER PRIMARY KEY AUTOINCREMENT, data TEXT, tx_id INTEGER)");
    }
}
