//! An apply that stops and resumes inside its transaction.
//!
//! A 1M-op checkpoint takes seconds to apply. A host with one thread (the
//! web SDK's Worker) can then answer no query until it ends; with a second
//! connection reading the last committed state it can, if the apply hands
//! control back now and then. [`Apply::step`] writes up to a budget of rows
//! and returns; the next call goes on where it stopped, with new statements
//! (none is held between calls): the from-scratch walk in chunks of row ids
//! (`chunk_end.sql`), the incremental walk after the last (bucket, op) it
//! read. The oplog and `last_applied_op` do not change during an apply, so
//! the chunks together write exactly the rows one unbounded step writes.
//! [`super::apply`] is one unbounded step.

use std::collections::BTreeMap;

use rusqlite::types::Value;
use rusqlite::{named_params, Connection};

use super::from_scratch;
use super::{scope_stats, strategy, ApplyReport, Decision, RowSink, ApplyWriter, Scope, ScopeStats, Setting, Strategy};
use super::{INCREMENTAL, INCREMENTAL_BUCKETS, ORDERED_CHUNK_BYTES, UPDATED_ROWS};
use crate::sqlite::CachedSql;
use crate::error::{Result, SqliteResultExt};
use crate::schema::RawTable;

const CONTEXT: &str = "applying a checkpoint (sync_local)";

/// Where an apply is.
#[derive(Debug)]
enum Phase {
    /// The incremental walk, after op `op` of `bucket` (a ps_buckets id, or
    /// an index into the scope's array for a partial apply).
    Incremental { bucket: i64, op: i64 },
    /// The from-scratch walk: `types[next]` from row id `from` (its first
    /// when None).
    FromScratch { types: Vec<String>, next: usize, from: Option<Value> },
    /// From scratch: rows whose newest op deletes them.
    Deleted,
    /// A full apply: the rows in ps_updated_rows.
    Updated,
    /// With the app's triggers: the rows held, written in order.
    Ordered,
    /// The marks of ps_updated_rows go, once their rows are written.
    Finish,
    Done,
}

/// Where an apply stands after a step, as `oplite_apply_step` reports it.
/// Rows cost a different amount in each stage (walking the oplog is cheap,
/// writing rows through the app's triggers is not), so a host that sizes
/// its steps by time starts its estimate again when the stage changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The apply has finished: nothing is left to write.
    Done = 0,
    /// Walking the oplog (and writing rows, without the app's triggers).
    Walk = 1,
    /// With the app's triggers: writing the rows held, in order.
    Ordered = 2,
}

/// One apply of one scope, possibly over several calls.
#[derive(Debug)]
pub struct Apply {
    scope: Scope,
    decision: Decision,
    stats: ScopeStats,
    raw_tables: Option<Vec<RawTable>>,
    phase: Phase,
    /// The app has triggers on data tables: every row is held here, across
    /// steps, and written once in (type, id) order by the last steps (the
    /// events those triggers see, see [`ApplyWriter`]).
    ordered: Option<BTreeMap<(String, String), Option<String>>>,
    /// ps_updated_rows had rows: Finish deletes them.
    clear_updated: bool,
    rows_put: u64,
    rows_deleted: u64,
}

impl Apply {
    /// Chooses the strategy for `scope` and writes nothing yet.
    pub fn start(db: &Connection, scope: Scope, setting: Setting, raw_tables: Option<&[RawTable]>) -> Result<Apply> {
        let stats = scope_stats(db, &scope)?;
        let mut decision = strategy::choose(setting, &stats);
        let app_triggers = RowSink::new(db, raw_tables)?.app_triggers();
        if app_triggers && decision.strategy == Strategy::FromScratch {
            decision.strategy = Strategy::Incremental;
            decision.reason.push_str("; incremental in row order for the app's triggers on data tables");
        }
        let phase = match decision.strategy {
            Strategy::Incremental => Phase::Incremental { bucket: i64::MIN, op: i64::MIN },
            Strategy::FromScratch => Phase::FromScratch { types: from_scratch::row_types(db)?, next: 0, from: None },
        };
        Ok(Apply {
            scope,
            decision,
            stats,
            raw_tables: raw_tables.map(<[RawTable]>::to_vec),
            phase,
            ordered: app_triggers.then(BTreeMap::new),
            clear_updated: false,
            rows_put: 0,
            rows_deleted: 0,
        })
    }

    /// True once every row is written.
    pub fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }

    /// The scope this apply covers.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// What the apply did (complete once [`Apply::is_done`]).
    pub fn report(&self) -> ApplyReport {
        ApplyReport {
            decision: self.decision.clone(),
            stats: self.stats.clone(),
            rows_put: self.rows_put,
            rows_deleted: self.rows_deleted,
        }
    }

    /// The stage the next step continues.
    pub fn stage(&self) -> Stage {
        match self.phase {
            Phase::Done => Stage::Done,
            Phase::Ordered => Stage::Ordered,
            _ => Stage::Walk,
        }
    }

    /// Writes about `budget` rows (ops walked, for from scratch) or what is
    /// left of its stage, whichever is less; returns true once the apply is
    /// done. A step ends where its stage does: the budget a host sized for
    /// one stage's rows would take far longer spent on the next's.
    pub fn step(&mut self, db: &Connection, budget: u64) -> Result<bool> {
        let sink = RowSink::new(db, self.raw_tables.as_deref())?;
        let chunk = self.ordered.is_none().then_some(ORDERED_CHUNK_BYTES);
        let in_order = self.ordered.take().or_else(|| chunk.map(|_| BTreeMap::new()));
        let mut write = ApplyWriter { sink, rows_put: 0, rows_deleted: 0, in_order, chunk, held: 0 };
        let mut left = budget;
        let stage = self.stage();
        while left > 0 && !self.is_done() && self.stage() == stage {
            let used = self.advance(db, &mut write, left)?;
            left = left.saturating_sub(used.max(1));
        }
        if chunk.is_some() || self.is_done() {
            write.flush()?;
        } else {
            self.ordered = write.in_order.take();
        }
        self.rows_put += write.rows_put;
        self.rows_deleted += write.rows_deleted;
        Ok(self.is_done())
    }

    /// Runs the current phase for up to `budget` rows; returns how many it used.
    fn advance(&mut self, db: &Connection, write: &mut ApplyWriter<'_>, budget: u64) -> Result<u64> {
        let full = self.scope == Scope::Full;
        match &mut self.phase {
            Phase::Incremental { bucket, op } => {
                let mut stmt = db.prepare_cached(if full { INCREMENTAL } else { INCREMENTAL_BUCKETS }).context(CONTEXT)?;
                let ids = self.scope.bucket_json();
                let mut rows = match &ids {
                    Some(ids) => stmt.query(named_params! {":buckets": ids, ":bucket": *bucket, ":op": *op}),
                    None => stmt.query(named_params! {":bucket": *bucket, ":op": *op}),
                }
                .context(CONTEXT)?;
                let mut used = 0;
                while used < budget {
                    let Some(row) = rows.next().context(CONTEXT)? else {
                        self.phase = Phase::Updated;
                        return Ok(used);
                    };
                    write.row(row)?;
                    *bucket = row.get(3).context(CONTEXT)?;
                    *op = row.get(4).context(CONTEXT)?;
                    used += 1;
                }
                Ok(used)
            }
            Phase::FromScratch { types, next, from } => {
                let Some(row_type) = types.get(*next) else {
                    self.phase = Phase::Deleted;
                    return Ok(0);
                };
                let Some((first, last)) = from_scratch::type_bounds(db, row_type)? else {
                    *next += 1;
                    return Ok(0);
                };
                let start = from.take().unwrap_or(first);
                let end = match budget {
                    u64::MAX => None,
                    ops => from_scratch::chunk_end(db, row_type, &start, ops)?,
                };
                let upto = end.clone().unwrap_or(last);
                let min_applied = self.stats.min_applied_op;
                let written =
                    from_scratch::apply_range(db, write.sink(), &self.scope, min_applied, row_type, &start, &upto)?;
                write.count(written, 0);
                // A chunk that ends before the type does walked the whole
                // budget; the type's last chunk may leave some for the next.
                let Some(end) = end else {
                    *next += 1;
                    return Ok(written);
                };
                match from_scratch::next_row(db, row_type, &end)? {
                    Some(after) => *from = Some(after),
                    None => *next += 1,
                }
                Ok(budget)
            }
            Phase::Deleted => {
                let deleted = from_scratch::delete_rows(db, write.sink(), &self.scope, self.stats.min_applied_op)?;
                write.count(0, deleted);
                self.phase = Phase::Updated;
                Ok(deleted)
            }
            Phase::Updated => {
                self.phase = if write.chunk.is_some() { Phase::Finish } else { Phase::Ordered };
                if !full {
                    return Ok(0);
                }
                // Usually none: a one-op apply then skips preparing that
                // query (measured with callgrind, 1M-row single_op bench:
                // see docs/benchmarks.md).
                let any = db
                    .query_row_cached("SELECT EXISTS(SELECT 1 FROM ps_updated_rows)", [], |r| r.get::<_, bool>(0))
                    .context(CONTEXT)?;
                let mut used = 0;
                if any {
                    let mut stmt = db.prepare_cached(UPDATED_ROWS).context(CONTEXT)?;
                    let mut rows = stmt.query([]).context(CONTEXT)?;
                    while let Some(row) = rows.next().context(CONTEXT)? {
                        write.row(row)?;
                        used += 1;
                    }
                    self.clear_updated = true;
                }
                Ok(used)
            }
            Phase::Ordered => {
                let mut used = 0;
                while used < budget {
                    let next = write.in_order.as_mut().expect("ordered mode holds rows").pop_first();
                    let Some(((row_type, row_id), data)) = next else {
                        self.phase = Phase::Finish;
                        break;
                    };
                    write.write(&row_type, &row_id, data)?;
                    used += 1;
                }
                Ok(used)
            }
            Phase::Finish => {
                // The rows held are written before the marks go.
                write.write_held()?;
                if self.clear_updated {
                    db.execute_cached("DELETE FROM ps_updated_rows", []).context(CONTEXT)?;
                }
                self.phase = Phase::Done;
                Ok(0)
            }
            Phase::Done => Ok(0),
        }
    }
}
