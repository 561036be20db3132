//! Choosing between the incremental and the from-scratch query.
//!
//! Both queries write exactly the rows whose newest op changed; they differ
//! in how they find them. Incremental walks only the new ops (in table
//! order) and probes the row index once per op; from scratch walks every op
//! in scope once, in row order, and emits rows sorted by id. A probe costs a
//! few times a step of the sequential walk, and writing rows in id order is
//! much cheaper than in arrival order once the data tables are large, so
//! from scratch wins as soon as a sizeable share of the ops in scope is new.
//! The share is computed from per-bucket counters kept at store time
//! (`ps_buckets.oplite_op_count`, `oplite_pending_ops`), so choosing costs
//! one small query. The threshold was measured with the sync_local
//! benchmark (`cargo bench --bench sync_local`); see [`FROM_SCRATCH_SHARE`].

use std::fmt;

/// From scratch is chosen when at least this share of the ops the walk
/// visits arrived since the last apply. Derived from the 1M-op benchmark:
/// the walk costs ~0.7 us per op held (with its data read), incremental
/// ~3 us per new op beyond the writes both do, so they cross near 1 new op
/// in 4; writing in id order favours from scratch above that.
pub const FROM_SCRATCH_SHARE: f64 = 0.25;

/// Below this many new ops, incremental always wins (the walk of the whole
/// oplog would dominate).
pub const MIN_OPS_FOR_FROM_SCRATCH: i64 = 1_000;

/// The two ways of applying.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Walk new ops, probe each row.
    Incremental,
    /// Walk all ops in row order.
    FromScratch,
}

impl Strategy {
    /// The name used in SQL and logs.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Incremental => "incremental",
            Strategy::FromScratch => "from_scratch",
        }
    }

    /// Parses a name from [`Strategy::name`].
    pub fn from_name(name: &str) -> Option<Strategy> {
        match name {
            "incremental" => Some(Strategy::Incremental),
            "from_scratch" => Some(Strategy::FromScratch),
            _ => None,
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether the strategy is chosen per apply or forced (tests, benchmarks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Setting {
    /// Choose from the stats.
    #[default]
    Auto,
    /// Always use this one.
    Force(Strategy),
}

/// The stats of the buckets an apply covers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScopeStats {
    /// Buckets in scope.
    pub buckets: i64,
    /// Of those, buckets never applied (or cleared) since they were created.
    pub never_applied: i64,
    /// Ops held in ps_oplog by those buckets.
    pub ops: i64,
    /// Of those, ops that arrived since their bucket's last apply.
    pub pending_ops: i64,
    /// Entries in ps_updated_rows (full applies only).
    pub updated_rows: i64,
    /// Ops the from-scratch walk would visit: every op in ps_oplog, since
    /// the row-order walk cannot skip buckets out of scope.
    pub walked_ops: i64,
    /// The lowest `last_applied_op` in scope: rows whose newest op is not
    /// above it cannot have changed.
    pub min_applied_op: i64,
}

/// A choice and its reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// What runs.
    pub strategy: Strategy,
    /// Why, for logs and tests.
    pub reason: String,
}

/// Picks the strategy for an apply.
pub fn choose(setting: Setting, stats: &ScopeStats) -> Decision {
    if let Setting::Force(strategy) = setting {
        return Decision { strategy, reason: "forced".into() };
    }
    let walked = stats.walked_ops.max(stats.ops);
    let share = if walked > 0 { stats.pending_ops as f64 / walked as f64 } else { 0.0 };
    let describe = format!(
        "{} new ops, from-scratch walk of {} ops ({:.0}% new)",
        stats.pending_ops,
        walked,
        share * 100.0
    );
    if stats.pending_ops >= MIN_OPS_FOR_FROM_SCRATCH && share >= FROM_SCRATCH_SHARE {
        Decision { strategy: Strategy::FromScratch, reason: describe }
    } else {
        Decision { strategy: Strategy::Incremental, reason: describe }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(ops: i64, pending_ops: i64) -> ScopeStats {
        ScopeStats { buckets: 10, ops, pending_ops, walked_ops: ops, ..Default::default() }
    }

    #[test]
    fn a_small_partial_scope_is_incremental_even_when_all_new() {
        // Priority 0 holds 5% of the oplog and all of it is new: the
        // from-scratch walk would still visit every op.
        let partial = ScopeStats { buckets: 1, ops: 50_000, pending_ops: 50_000, walked_ops: 1_000_000, ..Default::default() };
        assert_eq!(choose(Setting::Auto, &partial).strategy, Strategy::Incremental);
    }

    #[test]
    fn first_sync_is_from_scratch() {
        let d = choose(Setting::Auto, &stats(1_000_000, 1_000_000));
        assert_eq!(d.strategy, Strategy::FromScratch);
        assert!(d.reason.contains("100%"), "{}", d.reason);
    }

    #[test]
    fn small_changes_are_incremental() {
        assert_eq!(choose(Setting::Auto, &stats(1_000_000, 1)).strategy, Strategy::Incremental);
        assert_eq!(choose(Setting::Auto, &stats(1_000_000, 10_000)).strategy, Strategy::Incremental);
        // A tiny database is always incremental: nothing to gain.
        assert_eq!(choose(Setting::Auto, &stats(10, 10)).strategy, Strategy::Incremental);
        assert_eq!(choose(Setting::Auto, &stats(0, 0)).strategy, Strategy::Incremental);
    }

    #[test]
    fn forcing_wins() {
        let d = choose(Setting::Force(Strategy::FromScratch), &stats(100, 1));
        assert_eq!(d.strategy, Strategy::FromScratch);
        assert_eq!(d.reason, "forced");
    }

    #[test]
    fn names_round_trip() {
        for s in [Strategy::Incremental, Strategy::FromScratch] {
            assert_eq!(Strategy::from_name(s.name()), Some(s));
        }
        assert_eq!(Strategy::from_name("fast"), None);
    }
}
