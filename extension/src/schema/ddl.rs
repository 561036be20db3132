//! SQL text for a table's data table, view and indexes.
//!
//! Typed storage (the default): one column per schema column, declared
//! without a type so a value keeps the storage class it arrived with, plus
//! [`UNDECLARED_COLUMN`] holding server fields the schema does not declare
//! (JSON text, NULL when there are none), and the reference's `data` as a
//! VIRTUAL generated column ([`super::data_column`]). The view casts each column to its
//! schema type, a cheap opcode on a native value; the indexes are on the
//! same `CAST(column AS type)` expressions, so a query on the view can use
//! them.
//!
//! JSON storage (`oplite_json_storage`, the reference core's layout): `id`
//! and one JSON text `data`; the view runs `json_extract` per column.
//!
//! Every generated statement is deterministic: `powersync_replace_schema`
//! compares it with `sqlite_master.sql` to decide whether anything changed.

use super::data_column;
use super::model::{Column, Table, UNDECLARED_COLUMN};
use super::quote::{identifier, json_path};

/// Ends every generated view, as in the reference core; views with this
/// marker are oplite's to drop.
pub const VIEW_MARKER: &str = "-- powersync-auto-generated";
/// Prefix of synced data tables.
pub const SYNCED_PREFIX: &str = "ps_data__";
/// Prefix of local-only data tables.
pub const LOCAL_PREFIX: &str = "ps_data_local__";

/// How a data table stores its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One column per schema column plus [`UNDECLARED_COLUMN`].
    Typed,
    /// `id, data` with the row as JSON text.
    Json,
    /// Core 0.5.4's direct table: the app's table itself, one `ANY` column
    /// per schema column ([`super::direct`]).
    Direct,
}

/// The layout `table` asks for.
pub fn layout(table: &Table) -> Layout {
    if table.direct {
        Layout::Direct
    } else if table.oplite_json_storage {
        Layout::Json
    } else {
        Layout::Typed
    }
}

/// The data table's name: `ps_data__<name>` or `ps_data_local__<name>`.
pub fn data_table_name(table: &Table) -> String {
    if table.direct {
        return table.name.clone();
    }
    let prefix = if table.local_only { LOCAL_PREFIX } else { SYNCED_PREFIX };
    format!("{prefix}{}", table.name)
}

/// `CREATE TABLE` for an empty data table.
pub fn create_data_table(name: &str, layout: Layout, columns: &[Column]) -> String {
    match layout {
        Layout::Json => format!("CREATE TABLE {}(id TEXT PRIMARY KEY NOT NULL, data TEXT)", identifier(name)),
        Layout::Typed => {
            let mut sql = format!("CREATE TABLE {}(id TEXT PRIMARY KEY NOT NULL", identifier(name));
            for column in columns {
                sql.push_str(", ");
                sql.push_str(&identifier(&column.name));
            }
            let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
            sql.push_str(&format!(", {UNDECLARED_COLUMN} TEXT, {})", data_column::definition(&names)));
            sql
        }
        Layout::Direct => super::direct::create_table_named(name, false, columns),
    }
}

/// The stored value of `column` in a data table row.
pub fn stored_value(layout: Layout, column: &str) -> String {
    match layout {
        Layout::Typed | Layout::Direct => identifier(column),
        Layout::Json => format!("json_extract(data, {})", json_path(column)),
    }
}

/// The view's expression for `column`: the stored value cast to its type.
pub fn view_value(layout: Layout, column: &Column) -> String {
    format!("CAST({} AS {})", stored_value(layout, &column.name), column.cast_type())
}

/// `CREATE VIEW` for the table.
pub fn create_view(table: &Table) -> String {
    let layout = layout(table);
    let mut names = vec![identifier("id")];
    let mut values = vec!["id".to_owned()];
    for column in &table.columns {
        names.push(identifier(&column.name));
        values.push(view_value(layout, column));
    }
    if table.include_metadata {
        names.push(identifier("_metadata"));
        names.push(identifier("_deleted"));
        values.push("NULL".into());
        values.push("NULL".into());
    }
    format!(
        "CREATE VIEW {}({}) AS SELECT {} FROM {} {VIEW_MARKER}",
        identifier(table.view_name()),
        names.join(", "),
        values.join(", "),
        identifier(&data_table_name(table))
    )
}

/// `(name, CREATE INDEX)` for each index of the table.
pub fn create_indexes(table: &Table) -> Vec<(String, String)> {
    if table.direct {
        return super::direct::create_indexes(table);
    }
    let layout = layout(table);
    let data_table = data_table_name(table);
    table
        .indexes
        .iter()
        .map(|index| {
            let name = format!("{data_table}__{}", index.name);
            let parts: Vec<String> = index
                .columns
                .iter()
                .filter_map(|indexed| {
                    let column = table.column(&indexed.name)?;
                    let order = if indexed.ascending { "" } else { " DESC" };
                    Some(format!("{}{order}", view_value(layout, column)))
                })
                .collect();
            let sql = format!("CREATE INDEX {} ON {}({})", identifier(&name), identifier(&data_table), parts.join(", "));
            (name, sql)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::model::Schema;

    fn table(json: &str) -> Table {
        Schema::parse(&format!(r#"{{"tables":[{json}]}}"#)).unwrap().tables.remove(0)
    }

    #[test]
    fn typed_layout() {
        let t = table(
            r#"{"name":"t","columns":[{"name":"a","type":"text"},{"name":"b","type":"integer"}],
            "indexes":[{"name":"ix","columns":[{"name":"b","ascending":false},{"name":"a"}]}]}"#,
        );
        assert_eq!(
            create_data_table(&data_table_name(&t), layout(&t), &t.columns),
            format!(
                r#"CREATE TABLE "ps_data__t"(id TEXT PRIMARY KEY NOT NULL, "a", "b", ps_undeclared TEXT, {})"#,
                data_column::definition(&["a", "b"])
            )
        );
        assert_eq!(
            create_view(&t),
            r#"CREATE VIEW "t"("id", "a", "b") AS SELECT id, CAST("a" AS TEXT), CAST("b" AS INTEGER) FROM "ps_data__t" -- powersync-auto-generated"#
        );
        assert_eq!(
            create_indexes(&t),
            vec![(
                "ps_data__t__ix".to_owned(),
                r#"CREATE INDEX "ps_data__t__ix" ON "ps_data__t"(CAST("b" AS INTEGER) DESC, CAST("a" AS TEXT))"#.to_owned()
            )]
        );
    }

    #[test]
    fn json_layout_local_only_metadata_and_quoting() {
        let t = table(
            r#"{"name":"we\"ird","view_name":"v'w","local_only":true,"include_metadata":true,"oplite_json_storage":true,
            "columns":[{"name":"c\"o.l","type":"real"}]}"#,
        );
        assert_eq!(data_table_name(&t), r#"ps_data_local__we"ird"#);
        assert_eq!(
            create_data_table(&data_table_name(&t), layout(&t), &t.columns),
            r#"CREATE TABLE "ps_data_local__we""ird"(id TEXT PRIMARY KEY NOT NULL, data TEXT)"#
        );
        assert_eq!(
            create_view(&t),
            r#"CREATE VIEW "v'w"("id", "c""o.l", "_metadata", "_deleted") AS SELECT id, CAST(json_extract(data, '$."c\"o.l"') AS REAL), NULL, NULL FROM "ps_data_local__we""ird" -- powersync-auto-generated"#
        );
    }
}
