//! Where applied rows go: the table for the row's type, or `ps_untyped`.
//!
//! This is the layout of the reference core (`ps_data__<type>(id, data)`),
//! used until the schema module provides typed tables.

use std::collections::HashMap;

use rusqlite::{Connection, Statement};

use crate::error::{Result, SqliteResultExt};

/// SQL: a row of a type without a table. An upsert updates the row in
/// place; INSERT OR REPLACE would delete it and insert it again at the end
/// of the table, touching twice the pages.
const UPSERT_UNTYPED: &str = "INSERT INTO ps_untyped(type, id, data) VALUES (?1, ?2, ?3)
     ON CONFLICT(type, id) DO UPDATE SET data = excluded.data";

/// Writes applied rows, with statements prepared once per table per apply.
pub struct RowSink<'c> {
    db: &'c Connection,
    tables: HashMap<String, Option<TableStatements<'c>>>,
    untyped_put: Statement<'c>,
    untyped_delete: Statement<'c>,
}

struct TableStatements<'c> {
    put: Statement<'c>,
    delete: Statement<'c>,
}

fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl<'c> RowSink<'c> {
    /// Prepares the statements shared by every type.
    pub fn new(db: &'c Connection) -> Result<Self> {
        Ok(RowSink {
            db,
            tables: HashMap::new(),
            untyped_put: db
                .prepare(UPSERT_UNTYPED)
                .context("preparing ps_untyped writes")?,
            untyped_delete: db
                .prepare("DELETE FROM ps_untyped WHERE type = ?1 AND id = ?2")
                .context("preparing ps_untyped writes")?,
        })
    }

    fn table(&mut self, row_type: &str) -> Result<Option<&mut TableStatements<'c>>> {
        if !self.tables.contains_key(row_type) {
            let name = format!("ps_data__{row_type}");
            let exists: bool = self
                .db
                .query_row(
                    "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
                    [&name],
                    |r| r.get(0),
                )
                .context("looking up a data table")?;
            let statements = if exists {
                let table = quote_identifier(&name);
                Some(TableStatements {
                    put: self
                        .db
                        .prepare(&format!(
                            "INSERT INTO {table}(id, data) VALUES (?1, ?2)
                             ON CONFLICT(id) DO UPDATE SET data = excluded.data"
                        ))
                        .context("preparing a data table write")?,
                    delete: self
                        .db
                        .prepare(&format!("DELETE FROM {table} WHERE id = ?1"))
                        .context("preparing a data table write")?,
                })
            } else {
                None
            };
            self.tables.insert(row_type.to_owned(), statements);
        }
        Ok(self.tables.get_mut(row_type).and_then(Option::as_mut))
    }

    /// SQL that upserts every row of `source` (a SELECT with columns `id`
    /// and `data`, NULL data meaning a delete) into `row_type`'s table, for
    /// set-wise applies. Parameter `:type` carries the row type.
    pub fn upsert_from_select_sql(&mut self, row_type: &str, source: &str) -> Result<String> {
        Ok(match self.table(row_type)? {
            Some(_) => format!(
                "INSERT INTO {}(id, data) SELECT id, data FROM ({source}) WHERE data IS NOT NULL
                 ON CONFLICT(id) DO UPDATE SET data = excluded.data",
                quote_identifier(&format!("ps_data__{row_type}"))
            ),
            None => format!(
                "INSERT INTO ps_untyped(type, id, data)
                 SELECT :type, id, data FROM ({source}) WHERE data IS NOT NULL
                 ON CONFLICT(type, id) DO UPDATE SET data = excluded.data"
            ),
        })
    }

    /// Makes the row hold `data`.
    pub fn put(&mut self, row_type: &str, id: &str, data: &str) -> Result<()> {
        match self.table(row_type)? {
            Some(table) => table.put.execute([id, data]).context("writing a synced row")?,
            None => self.untyped_put.execute([row_type, id, data]).context("writing an untyped row")?,
        };
        Ok(())
    }

    /// Deletes the row.
    pub fn delete(&mut self, row_type: &str, id: &str) -> Result<()> {
        match self.table(row_type)? {
            Some(table) => table.delete.execute([id]).context("deleting a synced row")?,
            None => self.untyped_delete.execute([row_type, id]).context("deleting an untyped row")?,
        };
        Ok(())
    }
}
