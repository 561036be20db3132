//! How the sync apply (sync_local) writes synced rows into the app's tables.
//!
//! [`DataTables`] is the set of synced types as installed, loaded once per
//! apply; [`RowWriter`] writes one row at a time with statements prepared
//! once per type; [`DataTables::upsert_from_select_sql`] gives set-wise SQL
//! for a whole type at once. All of them write the data tables directly, so
//! nothing is queued for upload, and [`RowWriter`] marks the connection as
//! inside a sync operation (`powersync_in_sync_operation()` returns 1) while
//! it lives. When the app has triggers on a synced data table, typed rows
//! are written as the reference core writes them (INSERT OR REPLACE), so
//! those triggers see the same events; when nothing (no app trigger or
//! index, no raw table) can read `data` during the apply, the writer lets
//! typed tables skip rendering it ([`super::data_column`]).
//!
//! Where a row goes: a synced table of the schema (typed or JSON layout), a
//! raw table (its put / delete statements), or ps_untyped for types the
//! schema does not know. Local-only tables are not sync targets: rows of
//! their type go to ps_untyped, as in the reference core.

use std::collections::HashMap;
use std::sync::Arc;

use rusqlite::{params_from_iter, CachedStatement, Connection, Statement};

use super::data_column::SkipDataGuard;
use super::ddl::Layout;
use super::direct;
use super::installed::{Installed, SchemaObject};
use super::model::{RawStatement, RawTable};
use super::raw;
use super::quote::identifier;
use super::raw::load_raw_tables;
use super::rows;
use crate::error::{OpliteError, Result, SqliteResultExt};
use crate::sqlite::{client_data, CachedSql, ClientDataKey, ScopeCounter, ScopeGuard};

/// SQL: a row of an unknown type.
const PUT_UNTYPED: &str = "INSERT OR REPLACE INTO ps_untyped(type, id, data) VALUES (?1, ?2, ?3)";
/// SQL: removes a row of an unknown type.
const DELETE_UNTYPED: &str = "DELETE FROM ps_untyped WHERE type = ?1 AND id = ?2";

/// SQL: the tables that temporary triggers are on.
const TEMP_TRIGGER_TABLES: &str = "SELECT tbl_name FROM temp.sqlite_master WHERE type = 'trigger'";

/// Where rows of one synced type go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowTypeKind {
    /// A synced table of the schema.
    Table,
    /// A raw table: its put and delete statements run.
    RawTable,
    /// Not in the schema: ps_untyped.
    Untyped,
}

#[derive(Debug, Clone)]
struct SyncedTable {
    name: String,
    layout: Layout,
    columns: Vec<String>,
    /// The app has triggers on the data table: rows are written as the
    /// reference core writes them (INSERT OR REPLACE), so the triggers see
    /// the same events; otherwise a typed row is updated in place.
    app_triggers: bool,
    /// The app has triggers or indexes on the data table: something may
    /// read `data` while the apply writes.
    observed: bool,
}

/// Synced types and their tables, shared by the applies that read them.
type Synced = Arc<HashMap<String, SyncedTable>>;

#[derive(Debug, Default)]
struct Tables {
    synced: Synced,
    raw: HashMap<String, RawTable>,
}

/// SQL: the schema cookies of the main and temp databases, which SQLite
/// bumps on every schema change, by any connection.
const SCHEMA_VERSIONS: [&str; 2] = ["PRAGMA main.schema_version", "PRAGMA temp.schema_version"];

/// The synced tables a connection read last, and the schema versions it
/// read them at: a small checkpoint's apply reused them instead of reading
/// `sqlite_master` again (an eighth of a one-op checkpoint's instructions).
#[derive(Default)]
struct LastRead(std::sync::Mutex<Option<((i64, i64), Synced)>>);

static LAST_READ: ClientDataKey<LastRead> = ClientDataKey::new(c"oplite.synced_tables");

/// The synced data tables as installed, read again only when the schema
/// has changed.
fn synced_tables(db: &Connection) -> Result<Synced> {
    let version = |sql| db.query_row_cached(sql, [], |r| r.get::<_, i64>(0)).context("reading the schema version");
    let versions = (version(SCHEMA_VERSIONS[0])?, version(SCHEMA_VERSIONS[1])?);
    let last = client_data(db, &LAST_READ);
    let mut last = last.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, tables)) = last.as_ref().filter(|(at, _)| *at == versions) {
        return Ok(tables.clone());
    }
    let tables = Arc::new(read_synced_tables(db)?);
    *last = Some((versions, tables.clone()));
    Ok(tables)
}

fn read_synced_tables(db: &Connection) -> Result<HashMap<String, SyncedTable>> {
    let installed = Installed::read(db)?;
    // The SDKs' diff triggers are TEMP triggers on the main table.
    let mut stmt = db.prepare_cached(TEMP_TRIGGER_TABLES).context("reading temporary triggers")?;
    let temp_triggers: Vec<String> =
        stmt.query_map([], |r| r.get(0)).and_then(|rows| rows.collect()).context("reading temporary triggers")?;
    let mut synced_tables = HashMap::new();
    for table in installed.data_tables.iter().filter(|t| !t.local) {
        let on_table = |o: &&SchemaObject| o.table.eq_ignore_ascii_case(&table.name);
        // A direct table's own upload triggers do nothing during sync.
        let own_triggers = if table.layout == Layout::Direct { direct::trigger_names(&table.name).to_vec() } else { Vec::new() };
        let app_trigger =
            |o: &&SchemaObject| o.kind == "trigger" && !own_triggers.iter().any(|n| n.eq_ignore_ascii_case(&o.name));
        let app_triggers = installed.objects.iter().filter(on_table).any(|o| app_trigger(&o))
            || temp_triggers.iter().any(|t| t.eq_ignore_ascii_case(&table.name));
        let ours = format!("{}__", table.name.to_lowercase());
        let app_indexes = installed.data_indexes().filter(on_table).any(|o| !o.name.to_lowercase().starts_with(&ours));
        let synced = SyncedTable {
            name: table.name.clone(),
            layout: table.layout,
            columns: table.columns.clone(),
            app_triggers,
            observed: app_triggers || app_indexes,
        };
        // A direct table of the type wins over a leftover data table of
        // the same type, as in the reference core.
        let leftover = synced_tables.get(&table.row_type).is_some_and(|t: &SyncedTable| t.layout == Layout::Direct);
        if !leftover {
            synced_tables.insert(table.row_type.clone(), synced);
        }
    }
    Ok(synced_tables)
}

/// The synced tables as installed, loaded once per apply.
#[derive(Debug, Clone, Default)]
pub struct DataTables {
    inner: Arc<Tables>,
}

impl DataTables {
    /// The synced data tables from `sqlite_master` (read again only after a
    /// schema change) and the raw tables recorded by the last
    /// `powersync_replace_schema`.
    pub fn load(db: &Connection) -> Result<DataTables> {
        let mut tables = Tables { synced: synced_tables(db)?, raw: HashMap::new() };
        for raw in load_raw_tables(db)? {
            tables.raw.insert(raw.name.clone(), raw);
        }
        Ok(DataTables { inner: Arc::new(tables) })
    }

    /// The same tables with `raw_tables` (e.g. from the sync stream's
    /// start payload) in place of the recorded raw tables.
    pub fn with_raw_tables(&self, raw_tables: Vec<RawTable>) -> DataTables {
        let synced = self.inner.synced.clone();
        let raw = raw_tables.into_iter().map(|r| (r.name.clone(), r)).collect();
        DataTables { inner: Arc::new(Tables { synced, raw }) }
    }

    /// Where rows of `row_type` go.
    /// A raw table of the type wins over a data table of the same type, as
    /// in the reference core.
    pub fn kind(&self, row_type: &str) -> RowTypeKind {
        if self.inner.raw.contains_key(row_type) {
            RowTypeKind::RawTable
        } else if self.inner.synced.contains_key(row_type) {
            RowTypeKind::Table
        } else {
            RowTypeKind::Untyped
        }
    }

    /// True if the app has triggers on any synced data table: the apply
    /// then writes rows as the reference core does, in its order.
    pub fn app_triggers(&self) -> bool {
        self.inner.synced.values().any(|t| t.app_triggers)
    }

    /// The synced types that have a data table.
    pub fn table_types(&self) -> impl Iterator<Item = &str> {
        self.inner.synced.keys().map(String::as_str)
    }

    /// A writer with prepared statements, reused for every row of one apply.
    /// While it lives, typed tables skip rendering `data` on write if
    /// nothing can read it then ([`SkipDataGuard`]).
    pub fn writer<'c>(&self, db: &'c Connection) -> Result<RowWriter<'c>> {
        let unobserved = self.inner.raw.is_empty() && !self.inner.synced.values().any(|t| t.observed);
        Ok(RowWriter {
            db,
            tables: self.inner.clone(),
            statements: HashMap::new(),
            raw_statements: HashMap::new(),
            _sync: SyncOperationGuard::enter(db),
            _skip_data: unobserved.then(|| SkipDataGuard::enter(db)),
        })
    }

    /// For set-wise apply: SQL that upserts every row produced by `source`
    /// (a SELECT yielding columns `id` and `data` (JSON text)) into the data
    /// table of `row_type`, decoding each row's JSON once; None for types
    /// that are raw tables or unknown. The statement fails on data SQLite
    /// cannot read as JSON; [`RowWriter::put`] stores such rows.
    pub fn upsert_from_select_sql(&self, row_type: &str, source: &str) -> Option<String> {
        if self.inner.raw.contains_key(row_type) {
            return None;
        }
        let table = self.inner.synced.get(row_type)?;
        Some(match table.layout {
            Layout::Typed => rows::upsert_typed_from_select(&table.name, &table.columns, source, table.app_triggers),
            Layout::Json => rows::upsert_json_from_select(&table.name, source),
            Layout::Direct => direct::upsert_from_select(&table.name, &table.columns, source),
        })
    }

    /// For set-wise apply: SQL that deletes from `row_type`'s data table
    /// every row whose id `ids` (a SELECT yielding column `id`) produces;
    /// None for raw tables and unknown types.
    pub fn delete_from_select_sql(&self, row_type: &str, ids: &str) -> Option<String> {
        if self.inner.raw.contains_key(row_type) {
            return None;
        }
        let table = self.inner.synced.get(row_type)?;
        Some(format!("DELETE FROM {} WHERE id IN (SELECT id FROM ({ids}))", identifier(&table.name)))
    }
}

/// Writes synced rows, one at a time, with statements prepared once per
/// type. Holds the connection in a sync operation while it lives.
pub struct RowWriter<'c> {
    db: &'c Connection,
    tables: Arc<Tables>,
    statements: HashMap<(u8, String), CachedStatement<'c>>,
    raw_statements: HashMap<(u8, String), Arc<RawStatement>>,
    _sync: SyncOperationGuard<'c>,
    _skip_data: Option<SkipDataGuard<'c>>,
}

/// Statement kinds of a writer, for its cache.
const PUT: u8 = 0;
const DELETE: u8 = 1;
const UNREADABLE: u8 = 2;

impl<'c> RowWriter<'c> {
    fn statement(&mut self, kind: u8, row_type: &str, sql: impl FnOnce() -> String) -> Result<&mut Statement<'c>> {
        let key = (kind, row_type.to_owned());
        if !self.statements.contains_key(&key) {
            let sql = sql();
            let stmt = self.db.prepare_cached(&sql).map_err(|e| OpliteError::sqlite(format!("preparing {sql}"), e))?;
            self.statements.insert(key.clone(), stmt);
        }
        self.statements.get_mut(&key).map(|s| &mut **s).ok_or_else(|| OpliteError::Internal("statement cache".into()))
    }

    /// Makes the row (row_type, id) hold `data` (JSON object text from the
    /// server). Unknown types go to ps_untyped; raw tables run their put
    /// statement.
    pub fn put(&mut self, row_type: &str, id: &str, data: &str) -> Result<()> {
        let tables = self.tables.clone();
        if let Some(raw) = tables.raw.get(row_type) {
            return self.put_raw(raw, id, data);
        }
        if let Some(table) = tables.synced.get(row_type) {
            // A failed write names the row as core 0.5.4 does; the SQL is
            // formatted again only then.
            let failed = |sql: String, e| {
                OpliteError::sqlite_statement(sql, format!("replacing into {row_type}, id = {id}, data = {data}"), e)
            };
            return match table.layout {
                Layout::Json => {
                    let stmt = self.statement(PUT, row_type, || rows::upsert_json_row(&table.name))?;
                    stmt.execute((id, data)).map_err(|e| failed(rows::upsert_json_row(&table.name), e)).map(drop)
                }
                Layout::Typed => {
                    let typed = || rows::upsert_typed_row(&table.name, &table.columns, table.app_triggers);
                    let stmt = self.statement(PUT, row_type, typed)?;
                    match stmt.execute((id, data)) {
                        Ok(_) => Ok(()),
                        Err(e) if e.to_string().contains("malformed JSON") => {
                            let unreadable = || rows::upsert_typed_unreadable(&table.name, &table.columns, table.app_triggers);
                            let stmt = self.statement(UNREADABLE, row_type, unreadable)?;
                            stmt.execute((id, data)).map_err(|e| failed(unreadable(), e)).map(drop)
                        }
                        Err(e) => Err(failed(typed(), e)),
                    }
                }
                Layout::Direct => self.put_direct(table, id, data),
            };
        }
        let stmt = self.statement(PUT, "", || PUT_UNTYPED.to_owned())?;
        stmt.execute((row_type, id, data)).context("storing an untyped row").map(drop)
    }

    /// Deletes the row (or the ps_untyped entry / raw-table delete
    /// statement).
    pub fn delete(&mut self, row_type: &str, id: &str) -> Result<()> {
        let tables = self.tables.clone();
        if let Some(table) = tables.synced.get(row_type).filter(|_| !tables.raw.contains_key(row_type)) {
            let sql = || format!("DELETE FROM {} WHERE id = ?1", identifier(&table.name));
            let stmt = self.statement(DELETE, row_type, sql)?;
            return stmt
                .execute([id])
                .map_err(|e| OpliteError::sqlite_statement(sql(), format!("deleting from {row_type}, id = {id}"), e))
                .map(drop);
        }
        if let Some(raw) = tables.raw.get(row_type) {
            let statement = self.raw_statement(DELETE, raw)?;
            let values = raw::delete_values(&statement, id)?;
            let stmt = self.statement(DELETE, row_type, || statement.sql.clone())?;
            return stmt
                .execute(params_from_iter(values))
                .map_err(|e| {
                    OpliteError::sqlite_statement(statement.sql.clone(), format!("deleting from {}, id = {id}", raw.name), e)
                })
                .map(drop);
        }
        let stmt = self.statement(DELETE, "", || DELETE_UNTYPED.to_owned())?;
        stmt.execute((row_type, id)).context("deleting an untyped row").map(drop)
    }

    /// Upserts a row into a direct table, its values bound as the
    /// reference binds them ([`direct::put_values`]).
    fn put_direct(&mut self, table: &SyncedTable, id: &str, data: &str) -> Result<()> {
        let statement = direct::put_statement(&table.name, &table.columns);
        let values = direct::put_values(&statement, id, data)?;
        let stmt = self.statement(PUT, &table.name, || statement.sql.clone())?;
        stmt.execute(params_from_iter(values))
            .map_err(|e| {
                OpliteError::sqlite_statement(statement.sql.clone(), format!("replacing into {}, id = {id}, data = {data}", table.name), e)
            })
            .map(drop)
    }

    /// Runs a raw table's put statement with the row's values bound as
    /// the reference core binds them ([`raw::put_values`]).
    fn put_raw(&mut self, raw: &RawTable, id: &str, data: &str) -> Result<()> {
        let statement = self.raw_statement(PUT, raw)?;
        let values = raw::put_values(&statement, id, data)?;
        let stmt = self.statement(PUT, &raw.name, || statement.sql.clone())?;
        stmt.execute(params_from_iter(values))
            .map_err(|e| {
                OpliteError::sqlite_statement(
                    statement.sql.clone(),
                    format!("replacing into {}, id = {id}, data = {data}", raw.name),
                    e,
                )
            })
            .map(drop)
    }

    /// A raw table's put or delete statement (inferred from its local table
    /// when the definition has none), checked against its parameter count
    /// once per writer.
    fn raw_statement(&mut self, kind: u8, raw: &RawTable) -> Result<Arc<RawStatement>> {
        let key = (kind, raw.name.clone());
        if let Some(found) = self.raw_statements.get(&key) {
            return Ok(found.clone());
        }
        let statement = if kind == PUT { raw::put_statement(self.db, raw)? } else { raw::delete_statement(self.db, raw)? };
        let sql = statement.sql.clone();
        let prepared = self.statement(kind, &raw.name, || sql)?;
        raw::check_parameter_count(&statement, prepared.parameter_count())?;
        let statement = Arc::new(statement);
        self.raw_statements.insert(key, statement.clone());
        Ok(statement)
    }
}

static SYNC_OPERATION: ClientDataKey<ScopeCounter> = ClientDataKey::new(c"oplite.sync_operation");

/// While alive, `powersync_in_sync_operation()` returns 1 on the
/// connection (triggers on data tables can tell sync writes from local
/// ones). The sync apply holds one for its whole run.
pub struct SyncOperationGuard<'c>(#[allow(dead_code)] ScopeGuard<'c>);

impl<'c> SyncOperationGuard<'c> {
    /// Enters a sync operation on `db`.
    pub fn enter(db: &'c Connection) -> Self {
        SyncOperationGuard(ScopeGuard::enter(db, &SYNC_OPERATION))
    }
}

/// True while a [`SyncOperationGuard`] is alive on `db`.
pub fn in_sync_operation(db: &Connection) -> bool {
    client_data(db, &SYNC_OPERATION).active()
}
