//! The INSTEAD OF triggers that make a view writable.
//!
//! A synced table's triggers write the data table, then queue the upload
//! entry themselves: an INSERT into ps_crud of the JSON that
//! `oplite_put_entry` / `_patch_entry` / `_delete_entry` render, and an
//! INSERT into ps_updated_rows (see [`super::crud`], also for the never-run
//! INSERT into `powersync_crud` at the end of each trigger). The functions
//! take the columns as `name, value` pairs or `name, old, new` triples
//! ([`super::crud_json`]).
//!
//! The id checks, their messages and the trigger names are the reference
//! core's. One deliberate difference: an UPDATE that sets the id to NULL
//! fails with "Cannot update id" (the reference queues a PATCH with id
//! `""`).

use super::crud_json::PATCH_OLD_WHEN_CHANGED;
use super::ddl::{data_table_name, layout, Layout};
use super::model::{Column, IncludeOld, Table, UNDECLARED_COLUMN};
use super::quote::{identifier, string};

/// Columns per call of the crud functions and `json_object`: SQLite builds
/// older than 3.48 allow 127 arguments per call.
const PAIRS_PER_CALL: usize = 60;
const TRIPLES_PER_CALL: usize = 40;

/// SQL: the id checks of an INSERT into a synced view.
const CHECK_NEW_ID: &str = "SELECT CASE WHEN (NEW.id IS NULL) THEN RAISE (FAIL, 'id is required') \
WHEN (typeof(NEW.id) != 'text') THEN RAISE (FAIL, 'id should be text') END;";
/// SQL: the id check of an UPDATE.
const CHECK_SAME_ID: &str = "SELECT CASE WHEN (OLD.id IS NOT NEW.id) THEN RAISE (FAIL, 'Cannot update id') END;";
/// SQL: makes SQLite report this statement's transaction to the queue
/// table (see [`super::crud`]); never inserts anything.
const JOIN_TRANSACTION: &str = "INSERT INTO powersync_crud(op) SELECT NULL WHERE 0;";

/// `(name, CREATE TRIGGER)` for every trigger of the table's view.
pub fn create_triggers(table: &Table) -> Vec<(String, String)> {
    if table.direct {
        return super::direct::create_triggers(table);
    }
    let g = Gen::new(table);
    let mut out = vec![g.insert()];
    if !table.insert_only {
        out.push(g.update());
        out.push(g.delete());
        if table.include_metadata {
            out.push(g.delete_with_metadata());
        }
    }
    out
}

struct Gen<'a> {
    table: &'a Table,
    layout: Layout,
    view: String,
    data: String,
    type_literal: String,
}

impl<'a> Gen<'a> {
    fn new(table: &'a Table) -> Self {
        Gen {
            table,
            layout: layout(table),
            view: table.view_name().to_owned(),
            data: identifier(&data_table_name(table)),
            type_literal: string(&table.name),
        }
    }

    fn head(&self, kind: &str, event: &str, when: &str) -> (String, String) {
        let name = format!("ps_view_{kind}_{}", self.view);
        let sql = format!(
            "CREATE TRIGGER {} INSTEAD OF {event} ON {} FOR EACH ROW{when} BEGIN\n",
            identifier(&name),
            identifier(&self.view)
        );
        (name, sql)
    }

    fn metadata(&self) -> &'static str {
        if self.table.include_metadata {
            "NEW._metadata"
        } else {
            "NULL"
        }
    }

    /// The statement that stores NEW in the data table (INSERT or UPDATE).
    fn write_row(&self, update: bool) -> String {
        let cols = &self.table.columns;
        match (self.layout, update) {
            (Layout::Typed, false) => {
                let mut names = vec!["id".to_owned()];
                let mut values = vec!["NEW.id".to_owned()];
                for c in cols {
                    names.push(identifier(&c.name));
                    values.push(format!("NEW.{}", identifier(&c.name)));
                }
                format!("INSERT INTO {}({}) VALUES ({});", self.data, names.join(", "), values.join(", "))
            }
            (Layout::Typed, true) => {
                let mut sets: Vec<String> = cols.iter().map(|c| format!("{0} = NEW.{0}", identifier(&c.name))).collect();
                sets.push(format!("{UNDECLARED_COLUMN} = NULL"));
                format!("UPDATE {} SET {} WHERE id = NEW.id;", self.data, sets.join(", "))
            }
            (Layout::Json, false) => {
                format!("INSERT INTO {}(id, data) VALUES (NEW.id, {});", self.data, json_object(cols, "NEW", true))
            }
            (Layout::Json, true) => {
                format!("UPDATE {} SET data = {} WHERE id = NEW.id;", self.data, json_object(cols, "NEW", true))
            }
            // Direct tables have AFTER triggers of their own (create_triggers).
            (Layout::Direct, _) => String::new(),
        }
    }

    /// The statements that queue `entry` (a call of an `oplite_*_entry`
    /// function) for the row `row_id` (None: an insert-only table, whose
    /// entries mark no row), only when `when` holds.
    fn queue(&self, entry: &str, row_id: Option<&str>, when: Option<&str>) -> String {
        let (filter, condition) = match when {
            Some(cond) => (format!(" WHERE {cond}"), format!("({cond}) AND ")),
            None => (String::new(), String::new()),
        };
        let mut sql = format!("INSERT INTO ps_crud(tx_id, data) SELECT oplite_crud_tx(), {entry}{filter};\n");
        if let Some(id) = row_id {
            // The gate is recorded for every write that queues an entry
            // (the terms run left to right). A row already marked is left
            // alone by DO NOTHING, which the app's `INSERT OR ROLLBACK INTO
            // view` cannot override as it would OR IGNORE (SQLite applies
            // the outer statement's conflict policy inside triggers); a NOT
            // EXISTS on ps_updated_rows instead would make SQLite copy the
            // SELECT into a temporary table for every row.
            sql.push_str(&format!(
                "INSERT INTO ps_updated_rows(row_type, row_id) SELECT {}, {id} WHERE {condition}oplite_crud_local_write() \
                 ON CONFLICT DO NOTHING;\n",
                self.type_literal
            ));
        }
        sql.push_str(JOIN_TRANSACTION);
        sql.push('\n');
        sql
    }

    fn insert(&self) -> (String, String) {
        let (name, mut sql) = self.head("insert", "INSERT", "");
        if self.table.local_only {
            sql.push_str(&self.write_row(false));
        } else {
            sql.push_str(CHECK_NEW_ID);
            sql.push('\n');
            let flags = if self.table.insert_only { 1 } else { 0 };
            let metadata = if self.table.insert_only { "NULL" } else { self.metadata() };
            let entry = format!(
                "oplite_put_entry({}, NEW.id, {metadata}, {flags}{})",
                self.type_literal,
                pairs(&self.table.columns, "NEW")
            );
            if !self.table.insert_only {
                sql.push_str(&self.write_row(false));
                sql.push('\n');
            }
            sql.push_str(&self.queue(&entry, (!self.table.insert_only).then_some("NEW.id"), None));
        }
        sql.push_str("END");
        (name, sql)
    }

    fn update(&self) -> (String, String) {
        let when = if self.table.include_metadata { " WHEN NEW._deleted IS NOT TRUE" } else { "" };
        let (name, mut sql) = self.head("update", "UPDATE", when);
        sql.push_str(CHECK_SAME_ID);
        sql.push('\n');
        sql.push_str(&self.write_row(true));
        sql.push('\n');
        if !self.table.local_only {
            let cols = &self.table.columns;
            let (flags, old_values, old_columns) = match (&self.table.include_old, self.table.include_old_only_when_changed) {
                (IncludeOld::No, _) => (0, "NULL".to_owned(), "NULL".to_owned()),
                (IncludeOld::All, true) => (PATCH_OLD_WHEN_CHANGED, "NULL".to_owned(), "NULL".to_owned()),
                (IncludeOld::Columns(list), true) => {
                    let json = serde_json::to_string(list).unwrap_or_else(|_| "[]".into());
                    (PATCH_OLD_WHEN_CHANGED, "NULL".to_owned(), string(&json))
                }
                (_, false) => (0, self.old_values().unwrap_or_else(|| "NULL".into()), "NULL".to_owned()),
            };
            let entry = format!(
                "oplite_patch_entry({}, NEW.id, {}, {flags}, {old_values}, {old_columns}{})",
                self.type_literal,
                self.metadata(),
                triples(cols)
            );
            let changed = self.table.ignore_empty_update.then(|| changed(cols));
            sql.push_str(&self.queue(&entry, Some("NEW.id"), changed.as_deref()));
        }
        sql.push_str("END");
        (name, sql)
    }

    /// `json_object` of the OLD values `include_old` asks for.
    fn old_values(&self) -> Option<String> {
        let columns: Vec<Column> = match &self.table.include_old {
            IncludeOld::No => return None,
            IncludeOld::All => self.table.columns.clone(),
            IncludeOld::Columns(list) => self.table.columns.iter().filter(|c| list.contains(&c.name)).cloned().collect(),
        };
        Some(json_object(&columns, "OLD", false))
    }

    fn delete_body(&self, metadata: &str) -> String {
        let mut sql = format!("DELETE FROM {} WHERE id = OLD.id;\n", self.data);
        if !self.table.local_only {
            let old = self.old_values().unwrap_or_else(|| "NULL".into());
            let entry = format!("oplite_delete_entry({}, OLD.id, {metadata}, {old})", self.type_literal);
            sql.push_str(&self.queue(&entry, Some("OLD.id"), None));
        }
        sql
    }

    fn delete(&self) -> (String, String) {
        let (name, mut sql) = self.head("delete", "DELETE", "");
        sql.push_str(&self.delete_body("NULL"));
        sql.push_str("END");
        (name, sql)
    }

    fn delete_with_metadata(&self) -> (String, String) {
        let (name, mut sql) = self.head("delete2", "UPDATE", " WHEN NEW._deleted IS TRUE");
        sql.push_str(&self.delete_body("NEW._metadata"));
        sql.push_str("END");
        (name, sql)
    }
}

/// The columns in the order the upload entry lists them (by name), so the
/// crud functions need not sort.
fn by_name(columns: &[Column]) -> Vec<Column> {
    let mut sorted = columns.to_vec();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    sorted
}

/// `, 'a', NEW."a", ...` sorted by name (chunked for wide tables).
fn pairs(columns: &[Column], row: &str) -> String {
    let columns = &by_name(columns);
    let item = |c: &Column| format!("{}, {row}.{}", string(&c.name), identifier(&c.name));
    variadic(columns, PAIRS_PER_CALL, 1, item)
}

/// `, 'a', OLD."a", NEW."a", ...` sorted by name (chunked for wide tables).
fn triples(columns: &[Column]) -> String {
    let columns = &by_name(columns);
    let item = |c: &Column| format!("{0}, OLD.{1}, NEW.{1}", string(&c.name), identifier(&c.name));
    variadic(columns, TRIPLES_PER_CALL, 2, item)
}

fn variadic(columns: &[Column], per_call: usize, arity: usize, item: impl Fn(&Column) -> String) -> String {
    if columns.len() <= per_call {
        return columns.iter().map(|c| format!(", {}", item(c))).collect();
    }
    columns
        .chunks(per_call)
        .map(|chunk| {
            let items: Vec<String> = chunk.iter().map(&item).collect();
            format!(", oplite_crud_chunk({arity}, {})", items.join(", "))
        })
        .collect()
}

/// SQL that is true when some column's NEW value differs from its OLD one
/// as a JSON value would (type and value).
fn changed(columns: &[Column]) -> String {
    if columns.is_empty() {
        return "0".into();
    }
    let terms: Vec<String> = columns
        .iter()
        .map(|c| format!("(OLD.{0} IS NOT NEW.{0} OR typeof(OLD.{0}) != typeof(NEW.{0}))", identifier(&c.name)))
        .collect();
    terms.join(" OR ")
}

/// `json_object('a', ROW."a", ...)`, merged from chunks for wide tables;
/// `strip` removes JSON subtypes from NEW values (so JSON text stays text).
fn json_object(columns: &[Column], row: &str, strip: bool) -> String {
    let pair = |c: &Column| {
        let value = format!("{row}.{}", identifier(&c.name));
        let value = if strip { format!("powersync_strip_subtype({value})") } else { value };
        format!("{}, {value}", string(&c.name))
    };
    let objects: Vec<String> = columns
        .chunks(PAIRS_PER_CALL)
        .map(|chunk| format!("json_object({})", chunk.iter().map(pair).collect::<Vec<_>>().join(", ")))
        .collect();
    match objects.len() {
        0 => "json_object()".into(),
        1 => objects.into_iter().next().unwrap_or_default(),
        _ => format!("oplite_json_merge({})", objects.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::model::Schema;

    fn triggers(json: &str) -> Vec<(String, String)> {
        let schema = Schema::parse(&format!(r#"{{"tables":[{json}]}}"#)).unwrap();
        create_triggers(&schema.tables[0])
    }

    #[test]
    fn synced_insert_writes_the_table_and_the_queue() {
        let t = triggers(r#"{"name":"t","columns":[{"name":"a","type":"text"}]}"#);
        assert_eq!(t.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["ps_view_insert_t", "ps_view_update_t", "ps_view_delete_t"]);
        assert_eq!(
            t[0].1,
            "CREATE TRIGGER \"ps_view_insert_t\" INSTEAD OF INSERT ON \"t\" FOR EACH ROW BEGIN\n\
             SELECT CASE WHEN (NEW.id IS NULL) THEN RAISE (FAIL, 'id is required') WHEN (typeof(NEW.id) != 'text') THEN RAISE (FAIL, 'id should be text') END;\n\
             INSERT INTO \"ps_data__t\"(id, \"a\") VALUES (NEW.id, NEW.\"a\");\n\
             INSERT INTO ps_crud(tx_id, data) SELECT oplite_crud_tx(), oplite_put_entry('t', NEW.id, NULL, 0, 'a', NEW.\"a\");\n\
             INSERT INTO ps_updated_rows(row_type, row_id) SELECT 't', NEW.id WHERE oplite_crud_local_write() ON CONFLICT DO NOTHING;\n\
             INSERT INTO powersync_crud(op) SELECT NULL WHERE 0;\nEND"
        );
    }

    #[test]
    fn options_shape_the_triggers() {
        let t = triggers(
            r#"{"name":"t","include_metadata":true,"include_old":["b"],"include_old_only_when_changed":true,
            "ignore_empty_update":true,"columns":[{"name":"a","type":"text"},{"name":"b","type":"text"}]}"#,
        );
        assert_eq!(t.len(), 4);
        let update = &t[1].1;
        assert!(update.contains("WHEN NEW._deleted IS NOT TRUE"), "{update}");
        assert!(update.contains(r#"oplite_patch_entry('t', NEW.id, NEW._metadata, 1, NULL, '["b"]', 'a', OLD."a", NEW."a", 'b', OLD."b", NEW."b")"#), "{update}");
        assert!(update.contains(r#"WHERE (OLD."a" IS NOT NEW."a" OR typeof(OLD."a") != typeof(NEW."a")) OR"#), "{update}");
        // An update that changes nothing queues nothing and closes no gate.
        assert!(update.contains(r#"OR typeof(OLD."b") != typeof(NEW."b"))) AND oplite_crud_local_write() ON CONFLICT DO NOTHING;"#), "{update}");
        assert!(t[3].1.contains("oplite_delete_entry('t', OLD.id, NEW._metadata, json_object('b', OLD.\"b\"))"), "{}", t[3].1);

        let local = triggers(r#"{"name":"l","local_only":true,"columns":[{"name":"a","type":"text"}]}"#);
        assert!(local.iter().all(|(_, sql)| !sql.contains("ps_crud") && !sql.contains("powersync_crud")));
        let insert_only = triggers(r#"{"name":"i","insert_only":true,"columns":[{"name":"a","type":"text"}]}"#);
        assert_eq!(insert_only.len(), 1);
        assert!(!insert_only[0].1.contains("ps_data__i") && insert_only[0].1.contains("oplite_put_entry('i', NEW.id, NULL, 1"));
        assert!(!insert_only[0].1.contains("ps_updated_rows") && !insert_only[0].1.contains("oplite_crud_local_write"));
    }

    #[test]
    fn wide_tables_are_chunked() {
        let columns: Vec<String> = (0..100).map(|i| format!(r#"{{"name":"c{i}","type":"text"}}"#)).collect();
        let t = triggers(&format!(r#"{{"name":"w","include_old":true,"columns":[{}]}}"#, columns.join(",")));
        assert_eq!(t[0].1.matches("oplite_crud_chunk(1,").count(), 2);
        assert_eq!(t[1].1.matches("oplite_crud_chunk(2,").count(), 3);
        assert!(t[1].1.contains("oplite_json_merge(json_object("));
    }
}
