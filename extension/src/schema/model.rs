//! The app's schema as `powersync_replace_schema(json)` receives it, parsed
//! and checked before anything in the database changes.
//!
//! Parsing is serde; checking is a separate pass so that every message can
//! name the table, column or index at fault (serde only knows positions).
//! Everything the generators in [`super::ddl`] and [`super::triggers`] rely
//! on is established here: names are non-empty and unique, column types are
//! SQLite type names, indexes and `include_old` lists refer to columns that
//! exist.

use serde::{Deserialize, Deserializer};

use crate::error::{OpliteError, Result};

/// The column oplite adds to typed data tables for server fields the schema
/// does not declare. Schema columns may not use this name.
pub const UNDECLARED_COLUMN: &str = "ps_undeclared";

/// A parsed and checked schema.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Schema {
    /// The app's tables, each exposed as a view.
    pub tables: Vec<Table>,
    /// Tables the app owns; oplite only runs their statements when applying.
    #[serde(default, deserialize_with = "null_as_default")]
    pub raw_tables: Vec<RawTable>,
}

/// One table of the schema.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Table {
    /// The synced type name, and the view's name unless `view_name` is set.
    pub name: String,
    /// The view's name, when it differs from `name`.
    #[serde(default)]
    pub view_name: Option<String>,
    /// The columns besides `id`, in view order.
    pub columns: Vec<Column>,
    /// Indexes on the data table.
    #[serde(default, deserialize_with = "null_as_default")]
    pub indexes: Vec<Index>,
    /// Kept on this device only: no upload queue, not filled by sync.
    #[serde(default, deserialize_with = "null_as_default")]
    pub local_only: bool,
    /// Inserts are queued for upload but no rows are kept.
    #[serde(default, deserialize_with = "null_as_default")]
    pub insert_only: bool,
    /// The view gets `_metadata` and `_deleted` columns.
    #[serde(default, deserialize_with = "null_as_default")]
    pub include_metadata: bool,
    /// Old values in PATCH and DELETE entries.
    #[serde(default, deserialize_with = "null_as_default")]
    pub include_old: IncludeOld,
    /// With `include_old`: only the old values of columns that changed.
    #[serde(default, deserialize_with = "null_as_default")]
    pub include_old_only_when_changed: bool,
    /// An UPDATE that changes no column queues nothing.
    #[serde(default, deserialize_with = "null_as_default")]
    pub ignore_empty_update: bool,
    /// oplite's own option: store rows as one JSON text (`id, data`), the
    /// reference core's layout, instead of one column per schema column.
    #[serde(default, deserialize_with = "null_as_default")]
    pub oplite_json_storage: bool,
    /// Core 0.5.4's direct table: a real table named as the table, no view
    /// and no data table ([`super::direct`]).
    #[serde(default, deserialize_with = "null_as_default")]
    pub direct: bool,
}

/// A column of a table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Column {
    /// The column name, as in the server's JSON.
    pub name: String,
    /// A SQLite type name: the SDKs send `text`, `integer` or `real`, and
    /// any other (`int`, `varchar(20)`, `blob`, `boolean`, even empty) is
    /// cast to as SQLite's affinity rules say, as the reference core does.
    #[serde(rename = "type")]
    pub type_name: String,
}

impl Column {
    /// The type the view casts the column to (checked by [`Schema::parse`]).
    /// The three types the SDKs send are spelled in upper case, whatever
    /// case the schema used, so that the view and index SQL of existing
    /// databases stays as it was; any other type name is used as given.
    pub fn cast_type(&self) -> &str {
        match self.type_name.to_ascii_lowercase().as_str() {
            "text" => "TEXT",
            "integer" => "INTEGER",
            "real" => "REAL",
            _ => &self.type_name,
        }
    }
}

/// True when `name` can stand as the type of a `CAST`: names, bare or
/// quoted (SQLite checks them when the view is created), optionally followed
/// by one or two signed numbers in parentheses, and nothing that could end
/// the expression or comment out the rest of the generated SQL.
fn is_type_name(name: &str) -> bool {
    let (words, args) = match name.find('(') {
        Some(open) => match name[open + 1..].trim_end().strip_suffix(')') {
            Some(args) => (&name[..open], Some(args)),
            None => return false,
        },
        None => (name, None),
    };
    let is_number = |n: &str| {
        let n = n.trim().trim_start_matches(['+', '-']).trim_start();
        !n.is_empty() && n.parse::<f64>().is_ok() && !n.contains(|c: char| c.is_alphabetic() && c != 'e' && c != 'E')
    };
    are_names(words)
        && args.is_none_or(|args| {
            let mut parts = args.split(',');
            let first = parts.next().is_some_and(is_number);
            let second = parts.next().is_none_or(is_number);
            first && second && parts.next().is_none()
        })
}

/// True when `words` is a sequence of names separated by white space, each
/// bare (letters, digits, `_`, `$`) or quoted in `"..."`, `'...'`, `[...]`
/// or `` `...` `` with no quote of its kind inside.
fn are_names(words: &str) -> bool {
    let mut rest = words.trim_start();
    while let Some(first) = rest.chars().next() {
        let close = match first {
            '"' => Some('"'),
            '\'' => Some('\''),
            '[' => Some(']'),
            '`' => Some('`'),
            _ => None,
        };
        let end = match close {
            Some(close) => match rest[1..].find(close) {
                Some(at) => at + 2,
                None => return false,
            },
            None => rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$')).unwrap_or(rest.len()),
        };
        if end == 0 {
            return false;
        }
        let after = &rest[end..];
        if !after.is_empty() && !after.starts_with(char::is_whitespace) {
            return false;
        }
        rest = after.trim_start();
    }
    true
}

/// An index on a table's columns.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Index {
    /// The index name; the SQLite index is `<data table>__<name>`.
    pub name: String,
    /// The indexed columns, in order.
    pub columns: Vec<IndexColumn>,
}

/// One column of an index.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct IndexColumn {
    /// A column of the table.
    pub name: String,
    /// Sort order; ascending when absent.
    #[serde(default = "yes", deserialize_with = "null_as_true")]
    pub ascending: bool,
    /// Sent by the SDKs; the column's own type is used instead, so the index
    /// matches the view's expression.
    #[serde(default, rename = "type")]
    pub type_name: Option<String>,
}

/// Which old values PATCH and DELETE entries carry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum IncludeOld {
    /// None (`false` or absent).
    #[default]
    No,
    /// Every column (`true`).
    All,
    /// These columns.
    Columns(Vec<String>),
}

impl serde::Serialize for IncludeOld {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            IncludeOld::No => serializer.serialize_bool(false),
            IncludeOld::All => serializer.serialize_bool(true),
            IncludeOld::Columns(columns) => serde::Serialize::serialize(columns, serializer),
        }
    }
}

impl<'de> Deserialize<'de> for IncludeOld {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Flag(bool),
            Columns(Vec<String>),
        }
        Ok(match Raw::deserialize(deserializer).map_err(|_| {
            serde::de::Error::custom("include_old must be true, false or a list of column names")
        })? {
            Raw::Flag(false) => IncludeOld::No,
            Raw::Flag(true) => IncludeOld::All,
            Raw::Columns(columns) => IncludeOld::Columns(columns),
        })
    }
}

/// A table the app creates and migrates itself; sync runs its statements.
///
/// Comes from `powersync_replace_schema`'s `raw_tables`, from the `schema`
/// of `powersync_control('start')`, or as the first argument of
/// `powersync_create_raw_table_crud_trigger`.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
pub struct RawTable {
    /// The synced type whose rows go to this table.
    pub name: String,
    /// The SQLite table: statements left out are inferred from its
    /// columns, and the upload triggers are created on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_name: Option<String>,
    /// Only these columns are synced (inferred statements, triggers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synced_columns: Option<Vec<String>>,
    /// Runs for every synced row of the type; inferred when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub put: Option<RawStatement>,
    /// Runs for every deleted row of the type; inferred when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<RawStatement>,
    /// Runs when local data is cleared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear: Option<String>,
    /// Upload options, as for tables (the triggers read them).
    #[serde(flatten)]
    pub options: RawTableOptions,
}

/// The options of a raw table's upload triggers (the table options they
/// share with [`Table`]).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, serde::Serialize)]
pub struct RawTableOptions {
    /// Old values in PATCH and DELETE entries.
    #[serde(default, deserialize_with = "null_as_default")]
    pub include_old: IncludeOld,
    /// The triggers queue nothing: no INSERT or DELETE trigger is created,
    /// and the UPDATE trigger only refuses a changed id (`insert_only` is
    /// ignored when this is set).
    #[serde(default, deserialize_with = "null_as_default")]
    pub local_only: bool,
    /// Inserts are queued as PUTs; updates and deletes fail.
    #[serde(default, deserialize_with = "null_as_default")]
    pub insert_only: bool,
    /// Carried in the triggers' `options` bits.
    #[serde(default, deserialize_with = "null_as_default")]
    pub include_metadata: bool,
    /// With `include_old`: only the old values of columns that changed.
    #[serde(default, deserialize_with = "null_as_default")]
    pub include_old_only_when_changed: bool,
    /// An UPDATE that changes no column queues nothing.
    #[serde(default, deserialize_with = "null_as_default")]
    pub ignore_empty_update: bool,
}

/// A statement of a raw table and what to bind to its parameters.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
pub struct RawStatement {
    /// The SQL, with `?` parameters.
    pub sql: String,
    /// One entry per parameter, in order.
    pub params: Vec<RawParam>,
}

/// What a raw-table statement parameter is bound to.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
pub enum RawParam {
    /// The row id.
    Id,
    /// A field of the row's data, decoded as `json_extract` does.
    Column(String),
    /// A JSON object of the fields no `Column` parameter names.
    Rest,
    /// The whole row as the service sent it, a JSON object (core 0.5.4).
    Row,
}

fn yes() -> bool {
    true
}

fn null_as_default<'de, D: Deserializer<'de>, T: Default + Deserialize<'de>>(d: D) -> std::result::Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn null_as_true<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(true))
}

fn invalid(message: String) -> OpliteError {
    OpliteError::InvalidArgument { function: "powersync_replace_schema", message, type_mismatch: false }
}

/// A schema the reference core fails on when SQLite refuses its statements
/// (two tables of one name, a reserved view name, a type a CAST cannot
/// take): refused with SQLite's code for that, as there.
fn conflict(message: String) -> OpliteError {
    OpliteError::SchemaConflict { message }
}

impl Table {
    /// The view's name.
    pub fn view_name(&self) -> &str {
        self.view_name.as_deref().filter(|v| !v.is_empty()).unwrap_or(&self.name)
    }

    /// True for tables whose writes are uploaded (not local-only).
    pub fn is_synced(&self) -> bool {
        !self.local_only
    }

    /// The column named exactly `name`.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }
}

impl Schema {
    /// Parses and checks a schema; the error names what is wrong.
    pub fn parse(json: &str) -> Result<Schema> {
        let mut schema: Schema = serde_json::from_str(json)
            .map_err(|e| OpliteError::Malformed { what: "schema", message: e.to_string() })?;
        // local_only wins over insert_only, as in the reference core (which
        // keeps accepting the pair for old SDKs that sent both).
        for table in schema.tables.iter_mut().filter(|t| t.local_only) {
            table.insert_only = false;
        }
        schema.check()?;
        Ok(schema)
    }

    /// The checks behind [`Schema::parse`].
    pub fn check(&self) -> Result<()> {
        let mut type_names: Vec<String> = Vec::new();
        let mut view_names: Vec<String> = Vec::new();
        for table in &self.tables {
            check_table(table)?;
            let lower = table.name.to_lowercase();
            if type_names.contains(&lower) {
                return Err(conflict(format!("duplicate table name {:?}", table.name)));
            }
            type_names.push(lower);
            let view = table.view_name().to_lowercase();
            if view_names.contains(&view) {
                return Err(conflict(format!("two tables use the view name {:?}", table.view_name())));
            }
            view_names.push(view);
        }
        if let Some(view) = view_names.iter().find(|v| v.starts_with("ps_data__") || v.starts_with("ps_data_local__")) {
            return Err(conflict(format!("view name {view:?} is reserved for data tables")));
        }
        let mut raw_names: Vec<String> = Vec::new();
        for raw in &self.raw_tables {
            if raw.name.is_empty() {
                return Err(invalid("a raw table has an empty name".into()));
            }
            if raw_names.contains(&raw.name) {
                return Err(invalid(format!("duplicate raw table {:?}", raw.name)));
            }
            if self.tables.iter().any(|t| t.name == raw.name) {
                return Err(invalid(format!("{:?} is both a table and a raw table", raw.name)));
            }
            raw_names.push(raw.name.clone());
        }
        Ok(())
    }
}

fn check_name(what: &str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(invalid(format!("{what} has an empty name")));
    }
    if name.contains('\0') {
        return Err(invalid(format!("{what} {name:?} contains a NUL character")));
    }
    Ok(())
}

fn check_table(table: &Table) -> Result<()> {
    check_name("a table", &table.name)?;
    if table.direct && table.view_name.is_some() {
        // The reference's text and code (a schema it cannot deserialize).
        return Err(invalid("Direct tables can't have custom view names".into()));
    }
    if let Some(view) = &table.view_name {
        if !view.is_empty() {
            check_name(&format!("the view of table {:?}", table.name), view)?;
        }
    }
    // Only the view is a SQLite object named after the schema (the data
    // table is ps_data__<name>, columns and indexes are not affected).
    let view = table.view_name();
    if view.to_ascii_lowercase().starts_with("sqlite_") {
        return Err(conflict(format!(
            "the view of table {:?} would be named {view:?}: names starting with sqlite_ are reserved by SQLite",
            table.name
        )));
    }
    let t = &table.name;
    let mut seen: Vec<String> = Vec::new();
    for column in &table.columns {
        check_name(&format!("a column of table {t:?}"), &column.name)?;
        let lower = column.name.to_lowercase();
        if lower == "id" {
            return Err(invalid(format!("table {t:?} declares a column named {:?}: every table has an id column already", column.name)));
        }
        if lower == UNDECLARED_COLUMN {
            return Err(invalid(format!("table {t:?}: the column name {UNDECLARED_COLUMN:?} is reserved by oplite")));
        }
        if table.include_metadata && !table.direct && (lower == "_metadata" || lower == "_deleted") {
            return Err(invalid(format!(
                "table {t:?} declares {:?}, which include_metadata adds to the view",
                column.name
            )));
        }
        if seen.contains(&lower) {
            return Err(invalid(format!("table {t:?} declares column {:?} twice", column.name)));
        }
        seen.push(lower);
        if !is_type_name(&column.type_name) {
            return Err(conflict(format!(
                "column {:?} of table {t:?} has type {:?}, which is not a SQLite type name",
                column.name, column.type_name
            )));
        }
    }
    let mut index_names: Vec<String> = Vec::new();
    for index in &table.indexes {
        check_name(&format!("an index of table {t:?}"), &index.name)?;
        let lower = index.name.to_lowercase();
        if index_names.contains(&lower) {
            return Err(invalid(format!("table {t:?} declares index {:?} twice", index.name)));
        }
        index_names.push(lower);
        if index.columns.is_empty() {
            return Err(invalid(format!("index {:?} of table {t:?} has no columns", index.name)));
        }
        for column in &index.columns {
            if table.column(&column.name).is_none() {
                return Err(invalid(format!(
                    "index {:?} of table {t:?} refers to column {:?}, which the table does not declare",
                    index.name, column.name
                )));
            }
        }
    }
    if let IncludeOld::Columns(columns) = &table.include_old {
        for name in columns {
            if table.column(name).is_none() {
                return Err(invalid(format!(
                    "include_old of table {t:?} lists column {name:?}, which the table does not declare"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(json: &str) -> String {
        Schema::parse(json).unwrap_err().to_string()
    }

    #[test]
    fn parses_every_option() {
        let schema = Schema::parse(
            r#"{"tables":[{"name":"t","view_name":"v","columns":[{"name":"a","type":"TEXT"},{"name":"b","type":"integer"}],
            "indexes":[{"name":"ix","columns":[{"name":"b","ascending":false,"type":"integer"},{"name":"a"}]}],
            "local_only":false,"insert_only":null,"include_metadata":true,"include_old":["a"],
            "include_old_only_when_changed":true,"ignore_empty_update":true,"unknown":1}],
            "raw_tables":[{"name":"r","put":{"sql":"INSERT INTO r VALUES(?, ?, ?)","params":["Id",{"Column":"a"},"Rest"]},
            "delete":{"sql":"DELETE FROM r WHERE id = ?","params":["Id"]}}]}"#,
        )
        .unwrap();
        let t = &schema.tables[0];
        assert_eq!(t.view_name(), "v");
        assert_eq!(t.columns[0].cast_type(), "TEXT");
        assert_eq!(t.columns[1].cast_type(), "INTEGER");
        assert!(!t.indexes[0].columns[0].ascending);
        assert!(t.indexes[0].columns[1].ascending);
        assert!(!t.insert_only && t.include_metadata && t.include_old_only_when_changed && t.ignore_empty_update);
        assert_eq!(t.include_old, IncludeOld::Columns(vec!["a".into()]));
        assert_eq!(schema.raw_tables[0].put.as_ref().unwrap().params, vec![RawParam::Id, RawParam::Column("a".into()), RawParam::Rest]);
    }

    #[test]
    fn type_names_are_what_sqlite_casts_to() {
        for good in ["int", "Text", "varchar(20)", "decimal(10, -5)", "unsigned big int", "", "blob", "\"text\"", "[x y]"] {
            assert!(is_type_name(good), "{good:?}");
        }
        assert!(is_type_name("'a' \"b\" c"));
        for bad in ["text; drop", "text)", "a(b)", "x(1,2,3)", "text -- c", "text /* c", "'a'b", "\"a\"b\"", "t(1) x", "'"] {
            assert!(!is_type_name(bad), "{bad:?}");
        }
        let schema = Schema::parse(r#"{"tables":[{"name":"t","local_only":true,"insert_only":true,"columns":[{"name":"a","type":"int"}]}]}"#).unwrap();
        assert!(schema.tables[0].local_only && !schema.tables[0].insert_only);
        assert_eq!(schema.tables[0].columns[0].cast_type(), "int");
    }

    #[test]
    fn include_old_accepts_flags_and_lists() {
        let t = |v: &str| {
            Schema::parse(&format!(r#"{{"tables":[{{"name":"t","columns":[{{"name":"a","type":"text"}}],"include_old":{v}}}]}}"#))
                .map(|s| s.tables[0].include_old.clone())
        };
        assert_eq!(t("true").unwrap(), IncludeOld::All);
        assert_eq!(t("false").unwrap(), IncludeOld::No);
        assert_eq!(t("null").unwrap(), IncludeOld::No);
        assert!(t("5").unwrap_err().to_string().contains("include_old must be"));
    }

    #[test]
    fn bad_input_names_what_is_wrong() {
        assert!(err("not json").starts_with("malformed schema: expected ident"));
        assert!(err("{}").contains("missing field `tables`"));
        assert!(err(r#"{"tables":[{"name":"t","columns":[{"name":"a","type":"text) AS x, (1"}]}]}"#)
            .contains(r#"column "a" of table "t" has type "text) AS x, (1", which is not a SQLite type name"#));
        assert!(err(r#"{"tables":[{"name":"t","columns":[]},{"name":"T","columns":[]}]}"#)
            .contains(r#"duplicate table name "T""#));
        assert!(err(r#"{"tables":[{"name":"t","columns":[{"name":"a","type":"text"}],"indexes":[{"name":"i","columns":[{"name":"zz"}]}]}]}"#)
            .contains(r#"index "i" of table "t" refers to column "zz""#));
        assert!(err(r#"{"tables":[{"name":"","columns":[]}]}"#).contains("empty name"));
        assert!(err(r#"{"tables":[{"name":"t","columns":[{"name":"id","type":"text"}]}]}"#).contains("id column already"));
        assert!(err(r#"{"tables":[{"name":"t","columns":[{"name":"a","type":"text"},{"name":"A","type":"text"}]}]}"#)
            .contains("twice"));
        assert!(err(r#"{"tables":[{"name":"t","columns":[{"name":"ps_undeclared","type":"text"}]}]}"#).contains("reserved"));
        assert!(err(r#"{"tables":[{"name":"sqlite_x","columns":[]}]}"#).contains("reserved by SQLite"));
        assert!(err(r#"{"tables":[{"name":"a","view_name":"v","columns":[]},{"name":"b","view_name":"V","columns":[]}]}"#)
            .contains("view name"));
        assert!(err(r#"{"tables":[{"name":"t","include_old":["x"],"columns":[]}]}"#).contains(r#"lists column "x""#));
        assert!(err(r#"{"tables":[{"name":"t","include_metadata":true,"columns":[{"name":"_metadata","type":"text"}]}]}"#)
            .contains("include_metadata"));
    }
}
