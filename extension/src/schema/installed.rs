//! What the database holds now: data tables, generated views, their
//! triggers and indexes, read from `sqlite_master`.
//!
//! `powersync_replace_schema` diffs the new schema against this, not
//! against a stored copy of the last schema, so it also takes over
//! databases written by the reference core (JSON data tables) or changed by
//! hand, and [`super::apply::DataTables`] finds the synced tables the same
//! way.

use rusqlite::Connection;

use super::ddl::{Layout, LOCAL_PREFIX, SYNCED_PREFIX, VIEW_MARKER};
use super::direct;
use super::model::UNDECLARED_COLUMN;
use crate::error::{OpliteError, Result, SqliteResultExt};

/// A `ps_data__*` or `ps_data_local__*` table.
#[derive(Debug, Clone, PartialEq)]
pub struct DataTable {
    /// The SQLite table name.
    pub name: String,
    /// The synced type (the name without its prefix).
    pub row_type: String,
    /// A local-only table.
    pub local: bool,
    /// How rows are stored.
    pub layout: Layout,
    /// Typed layout: the schema columns (without `id` and
    /// [`UNDECLARED_COLUMN`]), in table order.
    pub columns: Vec<String>,
}

/// A schema object from `sqlite_master`.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaObject {
    /// `table`, `view`, `index` or `trigger`.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// The table (or view) it belongs to.
    pub table: String,
    /// Its CREATE statement (NULL for automatic indexes).
    pub sql: Option<String>,
}

/// Everything of interest in `sqlite_master`.
#[derive(Debug, Default)]
pub struct Installed {
    /// Data tables.
    pub data_tables: Vec<DataTable>,
    /// Every object of the main schema.
    pub objects: Vec<SchemaObject>,
}

/// SQL: the main schema's objects.
const READ_OBJECTS: &str = "SELECT type, name, tbl_name, sql FROM main.sqlite_master ORDER BY rowid";

impl Installed {
    /// Reads the main schema.
    pub fn read(db: &Connection) -> Result<Installed> {
        let mut stmt = db.prepare_cached(READ_OBJECTS).context("reading sqlite_master")?;
        let objects: Vec<SchemaObject> = stmt
            .query_map([], |r| Ok(SchemaObject { kind: r.get(0)?, name: r.get(1)?, table: r.get(2)?, sql: r.get(3)? }))
            .and_then(|rows| rows.collect())
            .context("reading sqlite_master")?;
        let mut data_tables = Vec::new();
        for object in objects.iter().filter(|o| o.kind == "table") {
            if let Some(sql) = object.sql.as_deref().filter(|sql| direct::is_direct_table_sql(sql)) {
                if !object.name.starts_with(SYNCED_PREFIX) && !object.name.starts_with(LOCAL_PREFIX) {
                    data_tables.push(read_direct_table(db, &object.name, direct::is_local_only_sql(sql))?);
                    continue;
                }
            }
            let (row_type, local) = if let Some(rest) = object.name.strip_prefix(LOCAL_PREFIX) {
                (rest, true)
            } else if let Some(rest) = object.name.strip_prefix(SYNCED_PREFIX) {
                (rest, false)
            } else {
                continue;
            };
            if row_type.is_empty() {
                continue;
            }
            data_tables.push(read_data_table(db, &object.name, row_type, local)?);
        }
        Ok(Installed { data_tables, objects })
    }

    /// The data table named `name` (ASCII case-insensitive, as SQLite).
    pub fn data_table(&self, name: &str) -> Option<&DataTable> {
        self.data_tables.iter().find(|t| t.name.eq_ignore_ascii_case(name))
    }

    /// The object named `name` (ASCII case-insensitive), of any kind.
    pub fn object(&self, name: &str) -> Option<&SchemaObject> {
        self.objects.iter().find(|o| o.name.eq_ignore_ascii_case(name))
    }

    /// Views oplite generated (their SQL ends with the marker).
    pub fn generated_views(&self) -> impl Iterator<Item = &SchemaObject> {
        self.objects.iter().filter(|o| o.kind == "view" && is_generated_view(o.sql.as_deref()))
    }

    /// Triggers on `view`.
    pub fn triggers_on<'a>(&'a self, view: &'a str) -> impl Iterator<Item = &'a SchemaObject> {
        self.objects.iter().filter(move |o| o.kind == "trigger" && o.table.eq_ignore_ascii_case(view))
    }

    /// The direct table named `name` (ASCII case-insensitive).
    pub fn direct_table(&self, name: &str) -> Option<&DataTable> {
        self.data_table(name).filter(|t| t.layout == Layout::Direct)
    }

    /// Explicit indexes on data tables.
    pub fn data_indexes(&self) -> impl Iterator<Item = &SchemaObject> {
        self.objects
            .iter()
            .filter(|o| o.kind == "index" && o.sql.is_some() && self.data_table(&o.table).is_some())
    }
}

/// True for the SQL of a view oplite (or the reference core) generated.
pub fn is_generated_view(sql: Option<&str>) -> bool {
    sql.is_some_and(|s| s.trim_end().ends_with(VIEW_MARKER))
}

/// A direct table: the app's table itself, its columns besides `id`.
fn read_direct_table(db: &Connection, name: &str, local: bool) -> Result<DataTable> {
    let mut stmt = db.prepare_cached("SELECT name FROM pragma_table_info(?1)").context("reading a direct table")?;
    let columns: Vec<String> = stmt
        .query_map([name], |r| r.get(0))
        .and_then(|rows| rows.collect())
        .context("reading a direct table")?;
    let columns = columns.into_iter().filter(|c| c != "id").collect();
    Ok(DataTable { name: name.to_owned(), row_type: name.to_owned(), local, layout: Layout::Direct, columns })
}

fn read_data_table(db: &Connection, name: &str, row_type: &str, local: bool) -> Result<DataTable> {
    let mut stmt = db.prepare_cached("SELECT name FROM pragma_table_info(?1)").context("reading a data table")?;
    let columns: Vec<String> = stmt
        .query_map([name], |r| r.get(0))
        .and_then(|rows| rows.collect())
        .context("reading a data table")?;
    let has = |c: &str| columns.iter().any(|x| x.eq_ignore_ascii_case(c));
    let layout = if has(UNDECLARED_COLUMN) {
        Layout::Typed
    } else if has("data") && columns.len() == 2 {
        Layout::Json
    } else {
        return Err(OpliteError::SchemaConflict {
            message: format!("table {name:?} has a data table's name but neither oplite's nor the JSON layout"),
        });
    };
    let columns = match layout {
        Layout::Typed => columns
            .into_iter()
            .filter(|c| !c.eq_ignore_ascii_case("id") && !c.eq_ignore_ascii_case(UNDECLARED_COLUMN))
            .collect(),
        Layout::Json | Layout::Direct => Vec::new(),
    };
    Ok(DataTable { name: name.to_owned(), row_type: row_type.to_owned(), local, layout, columns })
}
