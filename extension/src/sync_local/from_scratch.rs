//! The from-scratch strategy, applied set-wise.
//!
//! For each row type in the oplog (found by a loose index scan), one
//! `INSERT ... SELECT` writes every changed row of that type straight from
//! the walk of `ps_oplog_row` into the type's table, in id order, without a
//! round trip through Rust per row. Measured on 1M ops (10 buckets, distinct
//! rows, JSON layout): 0.98 s set-wise against 2.2 s stepping the same query
//! row by row from Rust. Rows whose newest op carries no data are deleted
//! afterwards through the small partial index `ps_oplog_deleted`.

use rusqlite::{named_params, Connection, OptionalExtension};

use super::sink::RowSink;
use super::{Scope, FROM_SCRATCH, FROM_SCRATCH_BUCKETS};
use crate::error::{Result, SqliteResultExt};

/// SQL: the next row type after :after.
const ROW_TYPES: &str = include_str!("../../../sql/sync_local/row_types.sql");
/// SQL: rows whose newest op deletes them.
pub const DELETED_ROWS: &str = include_str!("../../../sql/sync_local/deleted_rows.sql");

const CONTEXT: &str = "applying from scratch (sync_local)";

/// Every row type present in ps_oplog.
fn row_types(db: &Connection) -> Result<Vec<String>> {
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

/// Writes every changed row of `scope`; returns (rows written, rows deleted).
pub fn apply(db: &Connection, sink: &mut RowSink<'_>, scope: &Scope, min_applied_op: i64) -> Result<(u64, u64)> {
    let buckets = scope.bucket_json();
    let source = if buckets.is_some() { FROM_SCRATCH_BUCKETS } else { FROM_SCRATCH };
    let mut written = 0u64;
    for row_type in row_types(db)? {
        let mut params: Vec<(&str, &dyn rusqlite::ToSql)> = vec![(":type", &row_type), (":applied", &min_applied_op)];
        if let Some(ids) = &buckets {
            params.push((":buckets", ids));
        }
        let set_wise = match sink.upsert_from_select_sql(&row_type, source) {
            Some(sql) => {
                let mut stmt = db.prepare(&sql).context(CONTEXT)?;
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
        written += match set_wise {
            Some(rows) => rows as u64,
            None => row_by_row(db, sink, &row_type, source, &params)?,
        };
    }

    let mut deleted = 0u64;
    let mut stmt = db.prepare(DELETED_ROWS).context(CONTEXT)?;
    let mut rows = stmt
        .query(named_params! {":applied": min_applied_op, ":buckets": buckets})
        .context(CONTEXT)?;
    while let Some(row) = rows.next().context(CONTEXT)? {
        let row_type: String = row.get(0).context(CONTEXT)?;
        let row_id: String = row.get(1).context(CONTEXT)?;
        sink.delete(&row_type, &row_id)?;
        deleted += 1;
    }
    Ok((written, deleted))
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
    let mut stmt = db.prepare(source).context(CONTEXT)?;
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
