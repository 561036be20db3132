//! The scenario's two schemas, built with the SDK's own types.
//!
//! `views`: both are tables of the JSON store behind views, an app's
//! usual schema (the benchmark's). `direct`: `lists` is a table of the JSON store behind a view, `todos`
//! a direct table (`Table::direct`, core 0.5.4: synced rows are SQLite rows
//! of a table the core manages). `raw`: both are the app's own tables
//! (raw tables): `lists` declared by its schema alone, the core inferring
//! its statements; `todos` with explicit put and delete statements. Both
//! have the local-only `drafts`.

use powersync::schema::{
    Column, PendingStatement, PendingStatementValue, RawTable, RawTableSchema, Schema, Table,
    TableOptions,
};

/// Which schema a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Views,
    Direct,
    Raw,
}

impl Kind {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "views" => Some(Kind::Views),
            "direct" => Some(Kind::Direct),
            "raw" => Some(Kind::Raw),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Views => "views",
            Kind::Direct => "direct",
            Kind::Raw => "raw",
        }
    }
}

fn todo_columns() -> Vec<Column> {
    vec![
        Column::text("list_id"),
        Column::text("description"),
        Column::integer("done"),
    ]
}

fn drafts() -> Table {
    Table::create("drafts", vec![Column::text("body")], |t| {
        t.options = TableOptions {
            local_only: true,
            ..Default::default()
        }
    })
}

pub fn schema(kind: Kind) -> Schema {
    let mut schema = Schema::default();
    match kind {
        Kind::Views | Kind::Direct => {
            let direct = kind == Kind::Direct;
            schema.tables.push(Table::create(
                "lists",
                vec![Column::text("name"), Column::text("created_at")],
                |_| {},
            ));
            schema
                .tables
                .push(Table::create("todos", todo_columns(), |t| {
                    t.direct = direct
                }));
        }
        Kind::Raw => schema.raw_tables.extend(raw_tables()),
    }
    schema.tables.push(drafts());
    schema
}

/// The raw tables of [`Kind::Raw`].
pub fn raw_tables() -> Vec<RawTable> {
    let lists = RawTable::with_schema("lists", RawTableSchema::default());
    let column = |name: &'static str| PendingStatementValue::Column(name.into());
    let mut todos = RawTable::with_statements(
        "todos",
        PendingStatement {
            sql:
                "INSERT OR REPLACE INTO todos (id, list_id, description, done) VALUES (?, ?, ?, ?)"
                    .into(),
            params: vec![
                PendingStatementValue::Id,
                column("list_id"),
                column("description"),
                column("done"),
            ],
        },
        PendingStatement {
            sql: "DELETE FROM todos WHERE id = ?".into(),
            params: vec![PendingStatementValue::Id],
        },
    );
    // The schema too, for the upload triggers the core makes from it.
    todos.schema = Some(RawTableSchema::default());
    todos.clear = Some("DELETE FROM todos".into());
    vec![lists, todos]
}

/// The app's own tables of [`Kind::Raw`], created before the SDK syncs.
pub const RAW_DDL: &[&str] = &[
    "CREATE TABLE lists (id TEXT NOT NULL PRIMARY KEY, name TEXT, created_at TEXT)",
    "CREATE TABLE todos (id TEXT NOT NULL PRIMARY KEY, list_id TEXT, description TEXT, done INTEGER)",
];
