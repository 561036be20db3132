//! `powersync_replace_schema(json)`: make the database match a schema, as a
//! diff.
//!
//! The new schema is parsed and checked first ([`super::model`]); then,
//! inside a savepoint (so a failure leaves the previous schema in place):
//!
//! 1. generated views (with their triggers) and data-table indexes whose
//!    SQL is not exactly what the new schema generates are dropped;
//! 2. data tables the schema no longer has are dropped; a synced table's
//!    rows move to ps_untyped first, so they come back if the table does;
//! 3. new data tables are created (synced ones take their rows back from
//!    ps_untyped); existing ones are changed in place: a removed column's
//!    values move into the undeclared-fields column, an added column is
//!    filled from it, a layout change rebuilds the table;
//! 4. missing indexes, views and triggers are created.
//!
//! An identical schema therefore runs no DDL at all, and `PRAGMA
//! schema_version` stays as it was. Switching a table to or from
//! local_only behaves as in the reference core: the synced table's rows go
//! to ps_untyped, the local table's rows are dropped.

use rusqlite::Connection;

use super::data_column;
use super::ddl::{self, Layout};
use super::direct;
use super::installed::{DataTable, Installed};
use super::model::{Schema, Table, UNDECLARED_COLUMN};
use super::quote::{identifier, json_path, string};
use super::rows;
use super::triggers::create_triggers;
use crate::error::{OpliteError, Result, SqliteResultExt};

/// Applies `json` as the app's schema.
pub fn replace_schema(db: &Connection, json: &str) -> Result<()> {
    let mut schema = Schema::parse(json)?;
    data_column::settle_layouts(&mut schema.tables, crate::sqlite::column_limit(db));
    with_savepoint(db, || {
        // As in the reference core, which the SDKs rely on: they call
        // powersync_replace_schema without powersync_init, on a new database
        // or one another core wrote (adopted here, see migrations/adopt.rs).
        crate::client_id::powersync_init(db)?;
        apply(db, &schema)
    })
}

/// Runs `body` in a savepoint, rolled back if it fails.
pub(crate) fn with_savepoint<T>(db: &Connection, body: impl FnOnce() -> Result<T>) -> Result<T> {
    db.execute_batch("SAVEPOINT oplite_schema").context("starting a savepoint")?;
    match body() {
        Ok(value) => {
            db.execute_batch("RELEASE oplite_schema").context("releasing a savepoint")?;
            Ok(value)
        }
        Err(err) => {
            let _ = db.execute_batch("ROLLBACK TO oplite_schema; RELEASE oplite_schema");
            Err(err)
        }
    }
}

/// What the schema wants for one table.
struct Desired<'a> {
    table: &'a Table,
    data_table: String,
    layout: Layout,
    view: String,
    view_sql: String,
    local: bool,
    triggers: Vec<(String, String)>,
    indexes: Vec<(String, String)>,
}

impl<'a> Desired<'a> {
    fn new(table: &'a Table) -> Self {
        Desired {
            table,
            data_table: ddl::data_table_name(table),
            layout: ddl::layout(table),
            view: table.view_name().to_owned(),
            view_sql: if table.direct { String::new() } else { ddl::create_view(table) },
            local: table.local_only,
            triggers: create_triggers(table),
            indexes: ddl::create_indexes(table),
        }
    }

    fn column_names(&self) -> Vec<String> {
        self.table.columns.iter().map(|c| c.name.clone()).collect()
    }

    fn is_direct(&self) -> bool {
        self.layout == Layout::Direct
    }

    /// True if `table` is this table's storage as the schema wants it (the
    /// same name, local-only state and kind: direct or not).
    fn is_stored_in(&self, table: &DataTable) -> bool {
        self.data_table.eq_ignore_ascii_case(&table.name)
            && self.local == table.local
            && self.is_direct() == (table.layout == Layout::Direct)
    }

    /// True if `table` holds this table's rows in the other kind (a direct
    /// table becoming a view over a data table, or back), so its rows are
    /// copied over, as the reference core does.
    fn converts_from(&self, table: &DataTable) -> bool {
        self.table.name == table.row_type && self.local == table.local && !self.is_stored_in(table)
    }
}

/// True if the object named `name` exists in the main schema.
fn exists(db: &Connection, name: &str) -> Result<bool> {
    db.query_row("SELECT EXISTS(SELECT 1 FROM main.sqlite_master WHERE name = ?1 COLLATE NOCASE)", [name], |r| r.get(0))
        .context("reading sqlite_master")
}

fn run(db: &Connection, sql: &str) -> Result<()> {
    db.execute_batch(sql).map_err(|e| OpliteError::sqlite(format!("powersync_replace_schema: {sql}"), e))
}

fn conflict(message: String) -> OpliteError {
    OpliteError::SchemaConflict { message }
}

fn apply(db: &Connection, schema: &Schema) -> Result<()> {
    let installed = Installed::read(db)?;
    let desired: Vec<Desired<'_>> = schema.tables.iter().map(Desired::new).collect();
    check_collisions(&installed, &desired)?;
    check_module_names(db, &desired)?;

    // 1. Stale views (their triggers go with them) and indexes.
    let mut kept_views = Vec::new();
    for view in installed.generated_views() {
        let keep = desired.iter().find(|d| d.view.eq_ignore_ascii_case(&view.name)).is_some_and(|d| {
            let mut have: Vec<(String, String)> = installed
                .triggers_on(&view.name)
                .map(|t| (t.name.clone(), t.sql.clone().unwrap_or_default()))
                .collect();
            let mut want = d.triggers.clone();
            have.sort();
            want.sort();
            view.sql.as_deref() == Some(d.view_sql.as_str()) && have == want
        });
        if keep {
            kept_views.push(view.name.to_lowercase());
        } else {
            run(db, &format!("DROP VIEW {}", identifier(&view.name)))?;
        }
    }
    let mut kept_indexes = Vec::new();
    for index in installed.data_indexes() {
        let direct_index = installed.direct_table(&index.table).is_some()
            && index.sql.as_deref().is_some_and(direct::is_direct_index_sql);
        let ours = direct_index || index.name.to_lowercase().starts_with(&format!("{}__", index.table.to_lowercase()));
        if !ours {
            continue;
        }
        let wanted = desired
            .iter()
            .flat_map(|d| d.indexes.iter())
            .any(|(name, sql)| name.eq_ignore_ascii_case(&index.name) && index.sql.as_deref() == Some(sql.as_str()));
        if wanted {
            kept_indexes.push(index.name.to_lowercase());
        } else {
            run(db, &format!("DROP INDEX {}", identifier(&index.name)))?;
        }
    }

    // Direct tables' triggers that are not what the schema generates.
    for d in desired.iter().filter(|d| d.is_direct()) {
        if let Some(existing) = installed.direct_table(&d.data_table).filter(|t| d.is_stored_in(t)) {
            drop_stale_direct_triggers(db, &installed, &existing.name, d)?;
        }
    }

    // 2. Data tables the schema no longer has; those whose rows move to
    // the table's other kind are dropped once copied.
    let mut converted: Vec<&DataTable> = Vec::new();
    for table in &installed.data_tables {
        if desired.iter().any(|d| d.is_stored_in(table)) {
            continue;
        }
        if desired.iter().any(|d| d.converts_from(table)) {
            converted.push(table);
            continue;
        }
        if !table.local {
            move_rows_to_untyped(db, table)?;
        }
        run(db, &format!("DROP TABLE {}", identifier(&table.name)))?;
    }

    // 3. New and changed data tables.
    let mut resync = false;
    for d in &desired {
        let source = converted.iter().copied().find(|t| d.converts_from(t));
        match installed.data_table(&d.data_table).filter(|t| d.is_stored_in(t)) {
            None => create_data_table(db, d, source)?,
            Some(existing) if d.is_direct() => resync |= change_direct_table(db, &installed, existing, d)?,
            Some(existing) => update_data_table(db, existing, d)?,
        }
    }
    for table in converted {
        run(db, &format!("DROP TABLE {}", identifier(&table.name)))?;
    }

    // 4. Missing indexes, views and triggers.
    for d in &desired {
        for (name, sql) in &d.indexes {
            if !kept_indexes.contains(&name.to_lowercase()) || !exists(db, name)? {
                run(db, sql)?;
            }
        }
        if d.is_direct() {
            for (name, sql) in &d.triggers {
                if !exists(db, name)? {
                    run(db, sql)?;
                }
            }
        } else if !kept_views.contains(&d.view.to_lowercase()) {
            run(db, &d.view_sql)?;
            for (_, sql) in &d.triggers {
                run(db, sql)?;
            }
        }
    }
    super::raw::store_raw_tables(db, &schema.raw_tables)?;
    if resync {
        // A column added to a direct table is filled from ps_oplog by
        // applying everything again, as in the reference core.
        super::clear::trigger_resync_for(db, "powersync_replace_schema", false)?;
    }
    Ok(())
}

/// Drops the upload triggers of an existing direct table whose SQL is not
/// what `d` generates (they are created again in step 4).
fn drop_stale_direct_triggers(db: &Connection, installed: &Installed, table: &str, d: &Desired<'_>) -> Result<()> {
    let names = direct::trigger_names(table);
    let mut have: Vec<(String, String)> = installed
        .triggers_on(table)
        .filter(|t| names.iter().any(|n| n.eq_ignore_ascii_case(&t.name)))
        .map(|t| (t.name.clone(), t.sql.clone().unwrap_or_default()))
        .collect();
    let mut want = d.triggers.clone();
    have.sort();
    want.sort();
    if have != want {
        for name in &names {
            run(db, &format!("DROP TRIGGER IF EXISTS {}", identifier(name)))?;
        }
    }
    Ok(())
}

/// Adds and drops the columns of a direct table as the reference does
/// (its indexes and upload triggers go first, as SQLite checks them on
/// ALTER TABLE, and come back in step 4). Returns true if a column was
/// added: the caller then triggers a resync to fill it.
fn change_direct_table(db: &Connection, installed: &Installed, existing: &DataTable, d: &Desired<'_>) -> Result<bool> {
    let wanted = d.column_names();
    let added: Vec<&String> = wanted.iter().filter(|c| !existing.columns.contains(c)).collect();
    let removed: Vec<&String> = existing.columns.iter().filter(|c| !wanted.contains(c)).collect();
    if added.is_empty() && removed.is_empty() {
        return Ok(false);
    }
    for index in installed.data_indexes().filter(|i| i.table.eq_ignore_ascii_case(&existing.name)) {
        if index.sql.as_deref().is_some_and(direct::is_direct_index_sql) {
            run(db, &format!("DROP INDEX IF EXISTS {}", identifier(&index.name)))?;
        }
    }
    for name in direct::trigger_names(&existing.name) {
        run(db, &format!("DROP TRIGGER IF EXISTS {}", identifier(&name)))?;
    }
    let table = identifier(&existing.name);
    for column in &added {
        run(db, &format!("ALTER TABLE {table} ADD COLUMN {} ANY", identifier(column)))?;
    }
    for column in &removed {
        run(db, &format!("ALTER TABLE {table} DROP COLUMN {}", identifier(column)))?;
    }
    Ok(!added.is_empty())
}

/// Fails if a name the schema needs belongs to something oplite did not
/// generate (the app's own table or view, an internal table).
fn check_collisions(installed: &Installed, desired: &[Desired<'_>]) -> Result<()> {
    for d in desired {
        let t = &d.table.name;
        if let Some(object) = installed.object(&d.view).filter(|_| !d.is_direct()) {
            // A direct table of that name becomes this view: it goes first.
            let generated = (object.kind == "view" && super::installed::is_generated_view(object.sql.as_deref()))
                || installed.direct_table(&object.name).is_some();
            if !generated {
                return Err(conflict(format!(
                    "table {t:?} needs a view named {:?}, but the database has a {} of that name that oplite did not create",
                    d.view, object.kind
                )));
            }
        }
        if d.is_direct() {
            // The name is the table's: free, a generated view (dropped in
            // step 1) or the direct table itself.
            if let Some(object) = installed.object(&d.data_table) {
                let generated_view = object.kind == "view" && super::installed::is_generated_view(object.sql.as_deref());
                if !generated_view && installed.direct_table(&object.name).is_none() {
                    return Err(conflict(format!(
                        "direct table {t:?} needs the name {:?}, but the database has a {} of that name that oplite did not create",
                        d.data_table, object.kind
                    )));
                }
            }
        } else if let Some(object) = installed.object(&d.data_table) {
            if object.kind != "table" {
                return Err(conflict(format!(
                    "table {t:?} needs a data table named {:?}, but the database has a {} of that name",
                    d.data_table, object.kind
                )));
            }
        }
        for (name, _) in &d.indexes {
            if let Some(object) = installed.object(name) {
                if object.kind != "index" || installed.data_table(&object.table).is_none() {
                    return Err(conflict(format!(
                        "an index of table {t:?} would be named {name:?}, which the database already uses for a {}",
                        object.kind
                    )));
                }
            }
        }
        for (name, _) in &d.triggers {
            if let Some(object) = installed.object(name) {
                let on_generated = installed
                    .generated_views()
                    .any(|v| v.name.eq_ignore_ascii_case(&object.table))
                    || installed.direct_table(&object.table).is_some();
                if object.kind != "trigger" || !on_generated {
                    return Err(conflict(format!(
                        "a trigger of table {t:?} would be named {name:?}, which the database already uses"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Fails if a view would be named like a virtual table SQLite finds without
/// a CREATE: `json_each`, `pragma_table_info`, `oplite_row`,
/// `powersync_crud` and any other eponymous module. A view of that name
/// hides the module from every statement in the database (SQLite looks for
/// tables and views first, qualified with `main.` or not), so oplite's
/// triggers, applies and schema reads, and the app's own queries, would
/// fail for good. The reference core refuses these names too (it cannot
/// drop them). SQLite answers the question: preparing `DROP VIEW IF EXISTS
/// temp.<name>` fails exactly when the name is such a module (or a temp
/// object, which would shadow the view as well).
fn check_module_names(db: &Connection, desired: &[Desired<'_>]) -> Result<()> {
    for d in desired {
        let probe = db.prepare(&format!("DROP VIEW IF EXISTS temp.{}", identifier(&d.view)));
        if probe.is_err() {
            return Err(conflict(format!(
                "table {:?} cannot have a view named {:?}: SQLite resolves that name to a virtual table \
                 (a table-valued function or module) that the view would hide",
                d.table.name, d.view
            )));
        }
    }
    Ok(())
}

/// Moves a synced table's rows to ps_untyped as JSON.
fn move_rows_to_untyped(db: &Connection, table: &DataTable) -> Result<()> {
    let json = match table.layout {
        Layout::Json => "data".to_owned(),
        Layout::Direct => direct::object_of("old", &table.columns),
        Layout::Typed => {
            let pairs: Vec<(String, String)> = table.columns.iter().map(|c| (c.clone(), c.clone())).collect();
            rows::typed_row_json(&pairs)
        }
    };
    run(
        db,
        &format!(
            "INSERT OR REPLACE INTO ps_untyped(type, id, data) SELECT {}, id, {json} FROM {} AS old",
            string(&table.row_type),
            identifier(&table.name)
        ),
    )
}

/// The SELECT of a type's rows in ps_untyped, as `id, data`.
fn untyped_rows(row_type: &str) -> String {
    format!("SELECT id, data FROM ps_untyped WHERE type = {} AND data IS NOT NULL", string(row_type))
}

/// Creates a table's storage, filled from `converted` (the table's rows in
/// its other kind) or, for a synced table, from ps_untyped.
fn create_data_table(db: &Connection, d: &Desired<'_>, converted: Option<&DataTable>) -> Result<()> {
    if d.is_direct() {
        run(db, &direct::create_table(d.table))?;
        let columns = d.column_names();
        if let Some(old) = converted {
            let source = format!("SELECT id, data FROM {}", identifier(&old.name));
            return direct::fill_from_select(db, &d.data_table, &columns, &source);
        }
        if d.table.is_synced() {
            direct::fill_from_select(db, &d.data_table, &columns, &untyped_rows(&d.table.name))?;
            run(db, &format!("DELETE FROM ps_untyped WHERE type = {}", string(&d.table.name)))?;
        }
        return Ok(());
    }
    if let Some(old) = converted {
        run(db, &ddl::create_data_table(&d.data_table, d.layout, &d.table.columns))?;
        let source = format!("SELECT id, {} AS data FROM {} AS old", direct::object_of("old", &old.columns), identifier(&old.name));
        let fill = match d.layout {
            Layout::Typed => rows::upsert_typed_from_select(&d.data_table, &d.column_names(), &source, false),
            _ => rows::upsert_json_from_select(&d.data_table, &source),
        };
        return run(db, &fill);
    }
    run(db, &ddl::create_data_table(&d.data_table, d.layout, &d.table.columns))?;
    if d.table.is_synced() {
        let source = untyped_rows(&d.table.name);
        let fill = match d.layout {
            Layout::Json => rows::upsert_json_from_select(&d.data_table, &source),
            _ => {
                rows::upsert_typed_from_select(&d.data_table, &d.column_names(), &format!("{source} AND json_valid(data)"), false)
            }
        };
        run(db, &fill)?;
        if d.layout == Layout::Typed {
            // Rows whose data SQLite cannot read keep it as it came.
            run(
                db,
                &format!(
                    "INSERT OR REPLACE INTO {}(id, {UNDECLARED_COLUMN}) SELECT id, data FROM ({source} AND NOT json_valid(data))",
                    identifier(&d.data_table)
                ),
            )?;
        }
        run(db, &format!("DELETE FROM ps_untyped WHERE type = {}", string(&d.table.name)))?;
    }
    Ok(())
}

fn update_data_table(db: &Connection, existing: &DataTable, d: &Desired<'_>) -> Result<()> {
    if existing.name != d.data_table {
        // Same name but for ASCII case: SQLite cannot rename in one step.
        let temporary = format!("{}__oplite_rename", d.data_table);
        rename_table(db, &existing.name, &temporary)?;
        rename_table(db, &temporary, &d.data_table)?;
    }
    match (existing.layout, d.layout) {
        (Layout::Json, Layout::Json) => Ok(()),
        (Layout::Typed, Layout::Typed) => {
            let wanted = d.column_names();
            let same_columns = existing.columns.len() == wanted.len() && existing.columns.iter().all(|c| wanted.contains(c));
            if same_columns && data_column::is_current(data_column::table_sql(db, &d.data_table)?.as_deref(), &wanted) {
                return Ok(());
            }
            // The generated `data` column reads the columns: it goes first
            // and comes back last, for the new columns.
            data_column::set_aside_app_objects(db, &d.data_table, || {
                data_column::drop_column(db, &d.data_table)?;
                change_columns(db, existing, d)?;
                data_column::add_column(db, &d.data_table, &wanted)
            })
        }
        (from, _) => data_column::set_aside_app_objects(db, &d.data_table, || rebuild(db, from, existing, d)),
    }
}

/// `ALTER TABLE from RENAME TO to` without rewriting (or checking) other
/// schema objects, which may refer to a table that is being replaced.
pub(crate) fn rename_table(db: &Connection, from: &str, to: &str) -> Result<()> {
    let legacy: i64 = db.query_row("PRAGMA legacy_alter_table", [], |r| r.get(0)).context("reading legacy_alter_table")?;
    run(db, "PRAGMA legacy_alter_table = ON")?;
    let renamed = run(db, &format!("ALTER TABLE {} RENAME TO {}", identifier(from), identifier(to)));
    run(db, &format!("PRAGMA legacy_alter_table = {legacy}"))?;
    renamed
}

/// Adds and removes columns of a typed table, keeping every value.
fn change_columns(db: &Connection, existing: &DataTable, d: &Desired<'_>) -> Result<()> {
    let wanted = d.column_names();
    let removed: Vec<&String> = existing.columns.iter().filter(|c| !wanted.contains(c)).collect();
    let added: Vec<String> = wanted.iter().filter(|c| !existing.columns.contains(c)).cloned().collect();
    let table = identifier(&d.data_table);
    if !removed.is_empty() {
        // Values of removed columns become undeclared fields.
        let mut target = format!(
            "CASE WHEN {u} IS NULL OR NOT json_valid({u}) OR json_type({u}) != 'object' THEN '{{}}' ELSE {u} END",
            u = UNDECLARED_COLUMN
        );
        for chunk in removed.chunks(60) {
            let pairs: Vec<String> = chunk
                .iter()
                .map(|c| format!("{}, CASE WHEN typeof({1}) = 'blob' THEN NULL ELSE {1} END", json_path(c), identifier(c)))
                .collect();
            target = format!("json_set({target}, {})", pairs.join(", "));
        }
        // Every row, NULLs too: `data` keeps showing the key as `null`, as
        // the reference's text of a local write does.
        run(db, &format!("UPDATE {table} SET {UNDECLARED_COLUMN} = {target}"))?;
        for column in &removed {
            run(db, &format!("ALTER TABLE {table} DROP COLUMN {}", identifier(column)))?;
        }
    }
    if !added.is_empty() {
        for column in &added {
            run(db, &format!("ALTER TABLE {table} ADD COLUMN {}", identifier(column)))?;
        }
        // Fields that arrived before the columns existed fill them now.
        let mut sets: Vec<String> =
            added.iter().map(|c| format!("{} = {}", identifier(c), rows::extract(UNDECLARED_COLUMN, c))).collect();
        sets.push(format!("{UNDECLARED_COLUMN} = {}", rows::undeclared(UNDECLARED_COLUMN, &added)));
        run(
            db,
            &format!(
                "UPDATE {table} SET {} WHERE {UNDECLARED_COLUMN} IS NOT NULL AND json_valid({UNDECLARED_COLUMN})",
                sets.join(", ")
            ),
        )?;
    }
    Ok(())
}

/// Converts a table between the typed and the JSON layout by copying it.
fn rebuild(db: &Connection, from: Layout, existing: &DataTable, d: &Desired<'_>) -> Result<()> {
    let temporary = format!("{}__oplite_new", d.data_table);
    run(db, &format!("DROP TABLE IF EXISTS {}", identifier(&temporary)))?;
    run(db, &ddl::create_data_table(&temporary, d.layout, &d.table.columns))?;
    let old = identifier(&existing.name);
    match from {
        Layout::Json => {
            let source = format!("SELECT id, data FROM {old} WHERE data IS NOT NULL");
            let fill = rows::upsert_typed_from_select(&temporary, &d.column_names(), &format!("{source} AND json_valid(data)"), false);
            run(db, &fill)?;
            run(
                db,
                &format!(
                    "INSERT INTO {}(id, {UNDECLARED_COLUMN}) SELECT id, data FROM {old} WHERE data IS NOT NULL AND NOT json_valid(data)",
                    identifier(&temporary)
                ),
            )?;
        }
        Layout::Typed | Layout::Direct => {
            let pairs: Vec<(String, String)> = existing.columns.iter().map(|c| (c.clone(), c.clone())).collect();
            run(
                db,
                &format!("INSERT INTO {}(id, data) SELECT id, {} FROM {old}", identifier(&temporary), rows::typed_row_json(&pairs)),
            )?;
        }
    }
    run(db, &format!("DROP TABLE {old}"))?;
    rename_table(db, &temporary, &d.data_table)
}

