//! The list of oplite's internal schema versions, each with its SQL both
//! ways. A leaf: the migrations and the adoption of a core database read it.

/// One internal schema version.
pub struct Migration {
    /// The version this migration brings the database to.
    pub version: i64,
    /// SQL from version - 1 to version.
    pub up: &'static str,
    /// SQL from version back to version - 1.
    pub down: &'static str,
}

/// Every version, in order. The last one is [`LATEST_VERSION`].
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        up: include_str!("../../../sql/migrations/0001_initial.up.sql"),
        down: include_str!("../../../sql/migrations/0001_initial.down.sql"),
    },
    Migration {
        version: 2,
        up: include_str!("../../../sql/migrations/0002_raw_tables.up.sql"),
        down: include_str!("../../../sql/migrations/0002_raw_tables.down.sql"),
    },
    Migration {
        version: 3,
        up: include_str!("../../../sql/migrations/0003_oplog_key_through_row.up.sql"),
        down: include_str!("../../../sql/migrations/0003_oplog_key_through_row.down.sql"),
    },
    Migration {
        version: 4,
        up: include_str!("../../../sql/migrations/0004_oplite_kv.up.sql"),
        down: include_str!("../../../sql/migrations/0004_oplite_kv.down.sql"),
    },
];

/// The internal schema version this build writes.
pub const LATEST_VERSION: i64 = MIGRATIONS[MIGRATIONS.len() - 1].version;

