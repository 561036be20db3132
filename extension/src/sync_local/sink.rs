//! Where applied rows go: the synced table of the row's type (typed or JSON
//! layout, as [`crate::schema`] installed it), a raw table's statements, or
//! `ps_untyped` for types the schema does not know.
//!
//! Row-at-a-time writes go through the schema's [`RowWriter`]; set-wise
//! writes get their SQL from [`RowSink::upsert_from_select_sql`].

use rusqlite::Connection;

use crate::error::Result;
use crate::schema::{DataTables, RawTable, RowTypeKind, RowWriter};

/// SQL: every row of `source` (columns `id`, `data`) into ps_untyped under
/// `:type`. An upsert updates a row in place; INSERT OR REPLACE would delete
/// it and insert it again at the end of the table.
fn upsert_untyped_from_select(source: &str) -> String {
    format!(
        "INSERT INTO ps_untyped(type, id, data)
         SELECT :type, id, data FROM ({source}) WHERE data IS NOT NULL
         ON CONFLICT(type, id) DO UPDATE SET data = excluded.data"
    )
}

/// Writes applied rows for one apply.
pub struct RowSink<'c> {
    tables: DataTables,
    writer: RowWriter<'c>,
}

impl<'c> RowSink<'c> {
    /// Loads the installed tables (with `raw_tables` in place of the
    /// recorded raw tables when given) and prepares a writer.
    pub fn new(db: &'c Connection, raw_tables: Option<&[RawTable]>) -> Result<Self> {
        let mut tables = DataTables::load(db)?;
        if let Some(raw) = raw_tables {
            tables = tables.with_raw_tables(raw.to_vec());
        }
        let writer = tables.writer(db)?;
        Ok(RowSink { tables, writer })
    }

    /// SQL that upserts every row of `source` (a SELECT with columns `id`
    /// and `data`; NULL data means a delete and is skipped here) into
    /// `row_type`'s table, for set-wise applies; parameter `:type` carries
    /// the row type. None for raw tables, whose statements run per row.
    pub fn upsert_from_select_sql(&self, row_type: &str, source: &str) -> Option<String> {
        let puts = format!("SELECT id, data FROM ({source}) WHERE data IS NOT NULL");
        match self.tables.kind(row_type) {
            RowTypeKind::Table => self.tables.upsert_from_select_sql(row_type, &puts),
            RowTypeKind::Untyped => Some(upsert_untyped_from_select(source)),
            RowTypeKind::RawTable => None,
        }
    }

    /// True if the app has triggers on a synced data table.
    pub fn app_triggers(&self) -> bool {
        self.tables.app_triggers()
    }

    /// Makes the row hold `data`.
    pub fn put(&mut self, row_type: &str, id: &str, data: &str) -> Result<()> {
        self.writer.put(row_type, id, data)
    }

    /// Deletes the row.
    pub fn delete(&mut self, row_type: &str, id: &str) -> Result<()> {
        self.writer.delete(row_type, id)
    }
}
