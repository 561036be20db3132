//! The from-scratch strategy, applied set-wise.
//!
//! For each row type in the oplog (found by a loose index scan), one
//! `INSERT ... SELECT` writes every changed row of that type straight from
//! the walk of `ps_oplog_row` into the type's table, in id order, without a
//! round trip through Rust per row. Measured on 1M ops (10 buckets, distinct
//! rows, JSON layout): 0.98 s set-wise against 2.2 s stepping the same query
//! row by row from Rust. Rows whose newest op carries no data are deleted
//! afterwards through the small partial index `ps_oplog_deleted`. The walk
//! of a type covers a range of row ids: all of them, or one chunk of an
//! apply in steps ([`super::job`]).

use rusqlite::types::Value;
use rusqlite::{named_params, Connection, OptionalExtension};

use super::sink::RowSink;
use super::{Scope, FROM_SCRATCH, FROM_SCRATCH_BUCKETS};
use crate::error::{Result, SqliteResultExt};

/// SQL: the next row type after :after.
const ROW_TYPES: &str = include_str!("../../../sql/sync_local/row_types.sql");
/// SQL: rows whose newest op deletes them.
pub const DELETED_ROWS: &str = include_str!("../../../sql/sync_local/deleted_rows.sql");
/// SQL: the lowest and highest row id of a type.
pub const TYPE_BOUNDS: &str = include_str!("../../../sql/sync_local/type_bounds.sql");
/// SQL: the row id some ops after a given one.
pub const CHUNK_END: &str = include_str!("../../../sql/sync_local/chunk_end.sql");
/// SQL: the row id after a given one.
pub const NEXT_ROW: &str = include_str!("../../../sql/sync_local/next_row.sql");

const CONTEXT: &str = "applying from scratch (sync_local)";

/// Every row type present in ps_oplog.
pub fn row_types(db: &Connection) -> Result<Vec<String>> {
    let mut next = db.prepare(ROW_TYPES).context(CONTEXT)?;
    let mut types = Vec::new();
    let mut after = String::new();
    while let Some(row_type) = next
        .query_row(named_params! {":after": after}, |r| r.get::<_, Option<String>>(0))
        .optional()
        .context(CONTEXT)?
        .flatten()
    {
        after.clone_from(&row_type);
        types.push(row_type);
    }
    Ok(types)
}

/// The lowest and highest row id of `row_type` in ps_oplog; None if it has
/// no row with an id.
pub fn type_bounds(db: &Connection, row_type: &str) -> Result<Option<(Value, Value)>> {
    let (first, last) = db
        .prepare_cached(TYPE_BOUNDS)
        .and_then(|mut s| s.query_row(named_params! {":type": row_type}, |r| Ok((r.get(0)?, r.get(1)?))))
        .context(CONTEXT)?;
    Ok(match (first, last) {
        (Value::Null, _) | (_, Value::Null) => None,
        bounds => Some(bounds),
    })
}

/// The row id `ops` ops of `row_type` after `from` (included), where a
/// chunk of that many ops ends; None when fewer are left.
pub fn chunk_end(db: &Connection, row_type: &str, from: &Value, ops: u64) -> Result<Option<Value>> {
    let ops = i64::try_from(ops).unwrap_or(i64::MAX);
    db.prepare_cached(CHUNK_END)
        .and_then(|mut s| {
            s.query_row(named_params! {":type": row_type, ":from": from, ":ops": ops}, |r| r.get(0)).optional()
        })
        .context(CONTEXT)
}

/// The first row id of `row_type` after `after`.
pub fn next_row(db: &Connection, row_type: &str, after: &Value) -> Result<Option<Value>> {
    let next: Value = db
        .prepare_cached(NEXT_ROW)
        .and_then(|mut s| s.query_row(named_params! {":type": row_type, ":after": after}, |r| r.get(0)))
        .context(CONTEXT)?;
    Ok((next != Value::Null).then_some(next))
}

/// Writes the changed rows of `row_type` with ids from `from` to `upto`
/// (both included); returns how many it wrote.
pub fn apply_range(
    db: &Connection,
    sink: &mut RowSink<'_>,
    scope: &Scope,
    min_applied_op: i64,
    row_type: &str,
    from: &Value,
    upto: &Value,
) -> Result<u64> {
    let buckets = scope.bucket_json();
    let source = if buckets.is_some() { FROM_SCRATCH_BUCKETS } else { FROM_SCRATCH };
    let mut params: Vec<(&str, &dyn rusqlite::ToSql)> =
        vec![(":type", &row_type), (":applied", &min_applied_op), (":from", from), (":upto", upto)];
    if let Some(ids) = &buckets {
        params.push((":buckets", ids));
    }
    let set_wise = match sink.upsert_from_select_sql(row_type, source) {
        Some(sql) => {
            let mut stmt = db.prepare_cached(&sql).context(CONTEXT)?;
            let params = bound(&stmt, &params);
            // A row whose data SQLite cannot read as JSON fails the
            // statement (which then changed nothing): such types are
            // written row by row, which stores the text as it came.
            match stmt.execute(params.as_slice()) {
                Ok(rows) => Some(rows),
                Err(e) if e.to_string().contains("malformed JSON") => None,
                Err(e) => return Err(crate::error::OpliteError::sqlite(CONTEXT, e)),
            }
        }
        None => None,
    };
    match set_wise {
        Some(rows) => Ok(rows as u64),
        None => row_by_row(db, sink, row_type, source, &params),
    }
}

/// Deletes the rows of `scope` whose newest op is a PUT without data;
/// returns how many.
pub fn delete_rows(db: &Connection, sink: &mut RowSink<'_>, scope: &Scope, min_applied_op: i64) -> Result<u64> {
    let mut deleted = 0u64;
    let mut stmt = db.prepare(DELETED_ROWS).context(CONTEXT)?;
    let mut rows = stmt
        .query(named_params! {":applied": min_applied_op, ":buckets": scope.bucket_json()})
        .context(CONTEXT)?;
    while let Some(row) = rows.next().context(CONTEXT)? {
        let row_type: String = row.get(0).context(CONTEXT)?;
        let row_id: String = row.get(1).context(CONTEXT)?;
        sink.delete(&row_type, &row_id)?;
        deleted += 1;
    }
    Ok(deleted)
}

/// The parameters `stmt` uses, by name; others are skipped.
fn bound<'p>(stmt: &rusqlite::Statement<'_>, params: &[(&'p str, &'p dyn rusqlite::ToSql)]) -> Vec<(&'p str, &'p dyn rusqlite::ToSql)> {
    params.iter().copied().filter(|(name, _)| stmt.parameter_index(name).ok().flatten().is_some()).collect()
}

/// Writes one type's rows of `source` through the sink, one at a time
/// (raw tables, or data SQLite cannot read as JSON).
fn row_by_row(
    db: &Connection,
    sink: &mut RowSink<'_>,
    row_type: &str,
    source: &str,
    params: &[(&str, &dyn rusqlite::ToSql)],
) -> Result<u64> {
    let mut stmt = db.prepare_cached(source).context(CONTEXT)?;
    let params = bound(&stmt, params);
    let mut rows = stmt.query(params.as_slice()).context(CONTEXT)?;
    let mut written = 0;
    while let Some(row) = rows.next().context(CONTEXT)? {
        let id: String = row.get(0).context(CONTEXT)?;
        if let Some(data) = row.get::<_, Option<String>>(1).context(CONTEXT)? {
            sink.put(row_type, &id, &data)?;
            written += 1;
        }
    }
    Ok(written)
}
