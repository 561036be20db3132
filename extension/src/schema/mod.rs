//! The app's schema: views over typed data tables, the triggers that queue
//! local writes for upload, and the interface the sync apply writes through.
//!
//! docs/protocol.md is the contract; the reference core's observable
//! behaviour decides the details. oplite differs in storage (see
//! docs/differences.md): a
//! synced table keeps one real column per schema column, holding each value
//! exactly as it arrived, so reading a view costs a CAST per column instead
//! of a `json_extract`; the reference's `id, data` JSON layout stays
//! available per table.
//!
//! | module | concern |
//! |---|---|
//! | [`model`] | parsing and checking the schema JSON |
//! | [`quote`] | quoting names from the schema into SQL |
//! | [`ddl`] | data tables, views, indexes |
//! | [`direct`] | direct tables (core 0.5.4): DDL, triggers, sync writes |
//! | [`data_column`] | the reference's `data` column on typed tables |
//! | [`triggers`] | INSTEAD OF triggers |
//! | [`crud`], [`crud_json`] | the upload queue (ps_crud, tx_id) |
//! | [`installed`] | reading the current schema from sqlite_master |
//! | [`replace`] | `powersync_replace_schema` as a diff |
//! | [`rows`], [`undeclared`] | JSON to columns and back |
//! | [`raw`] | raw tables: bound values, inferred statements, upload triggers |
//! | [`apply`] | [`DataTables`] / [`RowWriter`] for the sync apply |
//! | [`hooks`] | `powersync_update_hooks` |
//! | [`clear`] | `powersync_clear`, `powersync_trigger_resync` |

pub mod apply;
pub mod clear;
pub mod crud;
pub mod crud_json;
pub mod data_column;
mod decode;
pub mod ddl;
pub mod direct;
pub mod hooks;
pub mod installed;
pub mod model;
pub mod quote;
pub mod raw;
pub mod replace;
pub mod rows;
pub mod triggers;
pub mod undeclared;

pub use apply::{in_sync_operation, DataTables, RowTypeKind, RowWriter, SyncOperationGuard};
pub use clear::set_sync_iteration_active;
pub use model::{RawParam, RawStatement, RawTable, Schema};

use std::collections::BTreeMap;

use rusqlite::types::Value;
use rusqlite::Connection;

use crate::error::{OpliteError, Result, SqliteResultExt};
use crate::sql_args::{require_transaction, text_coerced};
use crate::sqlite::{register_function, register_scalar, Purity};

/// Registers the schema functions and the upload-queue tables on `db`.
pub fn register(db: &Connection) -> Result<()> {
    crud::register(db)?;
    undeclared::register(db)?;
    data_column::register(db)?;
    decode::register(db)?;
    decode::register_row(db)?;
    hooks::register(db)?;
    clear::register(db)?;
    register_scalar(
        db,
        "powersync_create_raw_table_crud_trigger",
        3,
        Purity::Volatile,
        Box::new(|db, args| {
            let [definition, name, write] = [0, 1, 2].map(|i| text_coerced(db, args, i));
            raw::create_crud_trigger(db, &definition?, &name?, &write?)?;
            Ok(Value::Null)
        }),
    )?;
    register_scalar(
        db,
        "powersync_replace_schema",
        1,
        Purity::Volatile,
        Box::new(|db, args| {
            require_transaction(db, "powersync_replace_schema")?;
            replace::replace_schema(db, &text_coerced(db, args, 0)?)?;
            Ok(Value::Text(String::new()))
        }),
    )?;
    register_function(
        db,
        "powersync_diff",
        2,
        Purity::Deterministic,
        Box::new(|ctx, args| {
            let db = ctx.db()?;
            diff(&text_coerced(&db, args, 0)?, &text_coerced(&db, args, 1)?).map(Value::Text)
        }),
    )?;
    register_function(
        db,
        "powersync_strip_subtype",
        1,
        Purity::Deterministic,
        // Values cross into Rust without their subtype, so returning the
        // argument as it is strips it.
        Box::new(|_, args| Ok(args.first().map_or(Value::Null, |v| crud::owned(*v)))),
    )?;
    register_scalar(
        db,
        "powersync_drop_view",
        1,
        Purity::Volatile,
        Box::new(|db, args| {
            let name = text_coerced(db, args, 0)?;
            db.execute_batch(&format!("DROP VIEW IF EXISTS {}", quote::identifier(&name))).context("dropping a view")?;
            Ok(Value::Null)
        }),
    )?;
    register_scalar(
        db,
        "powersync_in_sync_operation",
        0,
        Purity::Volatile,
        Box::new(|db, _| Ok(Value::Integer(i64::from(in_sync_operation(db))))),
    )
}

/// `powersync_diff(old, new)`: the members of `new` that differ from
/// `old`, plus `null` for non-null members `new` lacks, keys sorted.
pub fn diff(old: &str, new: &str) -> Result<String> {
    let parse = |text: &str| -> Result<serde_json::Value> {
        serde_json::from_str(text).map_err(|e| OpliteError::InvalidArgument {
            function: "powersync_diff",
            message: e.to_string(),
            type_mismatch: false,
        })
    };
    let (serde_json::Value::Object(old), serde_json::Value::Object(new)) = (parse(old)?, parse(new)?) else {
        return Err(OpliteError::InvalidArgument {
            function: "powersync_diff",
            message: "expected two JSON objects".into(),
            type_mismatch: false,
        });
    };
    // A missing member and a null one are the same.
    let null = serde_json::Value::Null;
    let mut out: BTreeMap<&str, &serde_json::Value> = BTreeMap::new();
    for key in new.keys().chain(old.keys()) {
        let (before, after) = (old.get(key).unwrap_or(&null), new.get(key).unwrap_or(&null));
        if before != after {
            out.insert(key, after);
        }
    }
    serde_json::to_string(&out).map_err(|e| OpliteError::Internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::diff;

    #[test]
    fn diff_matches_the_reference() {
        assert_eq!(diff("{}", r#"{"b":1,"a":null,"c":"x"}"#).unwrap(), r#"{"b":1,"c":"x"}"#);
        assert_eq!(diff(r#"{"a":1,"b":2}"#, r#"{"b":3}"#).unwrap(), r#"{"a":null,"b":3}"#);
        assert_eq!(diff(r#"{"a":1}"#, r#"{"a":1.0}"#).unwrap(), r#"{"a":1.0}"#);
        assert_eq!(diff("{}", r#"{"c":1,"b":{"y":1,"x":2},"a":1e20}"#).unwrap(), r#"{"a":1e+20,"b":{"x":2,"y":1},"c":1}"#);
        assert_eq!(diff("{}", r#"{"k":18446744073709551616,"u":"\u0041"}"#).unwrap(), r#"{"k":1.8446744073709552e+19,"u":"A"}"#);
        assert_eq!(diff(r#"{"a":null}"#, "{}").unwrap(), "{}");
        assert!(diff("[]", "{}").unwrap_err().to_string().contains("expected two JSON objects"));
        assert!(diff("{}", "x").unwrap_err().to_string().contains("expected value at line 1 column 1"));
    }
}
