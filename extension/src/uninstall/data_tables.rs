//! Typed data tables back to the PowerSync core's layout: `id` and the row
//! as JSON text in `data`.
//!
//! The core keeps a synced row as the text the server sent (the newest op
//! of the row in `ps_oplog`) until a local write replaces it with the
//! `json_object` of the view's columns. A typed table keeps values, not
//! text, so each row gets the newest op's text back when that text decodes
//! to exactly the values the row holds (same values, same storage classes,
//! same undeclared members), and otherwise (a local write since, a
//! local-only table, no op) the text oplite renders from its values, which
//! is what a local write through the core's view would have stored. Either
//! way the core's view reads the same values oplite's did.
//!
//! No typed row holds a BLOB, which JSON cannot hold: the `data` column is
//! computed on every write, and fails for one.

use rusqlite::Connection;
use serde::Serialize;

use super::run;
use crate::error::{Result, SqliteResultExt};
use crate::schema::data_column::set_aside_app_objects;
use crate::schema::ddl::{create_data_table, Layout};
use crate::schema::installed::DataTable;
use crate::schema::model::UNDECLARED_COLUMN;
use crate::schema::quote::{identifier, string};
use crate::schema::replace::rename_table;
use crate::schema::rows::{keys_literal, typed_row_json};

/// What became of one data table.
#[derive(Debug, Serialize, PartialEq)]
pub struct Converted {
    /// The data table.
    pub table: String,
    /// Rows it holds.
    pub rows: i64,
    /// Rows whose `data` is the server's text (the rest are rendered).
    pub server_text: i64,
}

/// Converts the typed table `table` to the JSON layout in place, keeping the
/// app's triggers and indexes on it.
pub fn convert(db: &Connection, table: &DataTable) -> Result<Converted> {
    let old = format!("{}__oplite_typed", table.name);
    set_aside_app_objects(db, &table.name, || {
        rename_table(db, &table.name, &old)?;
        run(db, &create_data_table(&table.name, Layout::Json, &[]))?;
        run(db, &fill(table, &old))?;
        run(db, &format!("DROP TABLE {}", identifier(&old)))
    })?;
    let name = identifier(&table.name);
    let rows: i64 = db.query_row(&format!("SELECT count(*) FROM {name}"), [], |r| r.get(0)).context("counting rows")?;
    let server_text = if table.local {
        0
    } else {
        let sql = format!("SELECT count(*) FROM {name} AS t JOIN ({}) AS n ON n.id = t.id AND n.data = t.data", newest(table));
        db.query_row(&sql, [], |r| r.get(0)).context("counting rows with the server's text")?
    };
    Ok(Converted { table: table.name.clone(), rows, server_text })
}

/// SQL: the newest op of each row of `table`'s type (`id`, `data`).
fn newest(table: &DataTable) -> String {
    format!(
        "SELECT row_id AS id, data, max(op_id) FROM ps_oplog WHERE row_type = {} GROUP BY row_id",
        string(&table.row_type)
    )
}

/// SQL: fills the new JSON table `table.name` from the typed table `old`.
fn fill(table: &DataTable, old: &str) -> String {
    let pairs: Vec<(String, String)> = table.columns.iter().map(|c| (c.clone(), c.clone())).collect();
    let rendered = typed_row_json(&pairs);
    let target = identifier(&table.name);
    let source = identifier(old);
    if table.local {
        return format!("INSERT INTO {target}(id, data) SELECT id, {rendered} FROM {source}");
    }
    // The server's text counts only if it decodes to the row's values:
    // oplite_field gives what the sync apply stored from that text.
    let keys = keys_literal(&table.columns);
    let mut same: Vec<String> = table
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (stored, decoded) = (identifier(c), format!("oplite_field(oplite_n_.data, {keys}, {i})"));
            format!("({stored} IS {decoded} AND typeof({stored}) = typeof({decoded}))")
        })
        .collect();
    same.push(format!(
        "{UNDECLARED_COLUMN} IS oplite_field(oplite_n_.data, {keys}, {})",
        table.columns.len()
    ));
    format!(
        "INSERT INTO {target}(id, data) SELECT {source}.id, \
         CASE WHEN oplite_n_.data IS NOT NULL AND json_valid(oplite_n_.data) AND {} THEN oplite_n_.data ELSE {rendered} END \
         FROM {source} LEFT JOIN ({}) AS oplite_n_ ON oplite_n_.id = {source}.id",
        all_of(&same),
        newest(table)
    )
}

/// `terms` joined with AND, in parenthesised groups: a chain of 2000 terms
/// would pass SQLite's expression depth limit (1000), groups of 32 stay far
/// below it.
fn all_of(terms: &[String]) -> String {
    let groups: Vec<String> = terms.chunks(32).map(|group| format!("({})", group.join(" AND "))).collect();
    groups.join(" AND ")
}
