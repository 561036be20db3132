//! Differential test: powersync_init() in oplite and in the reference core
//! create tables with the same names and columns. Extra oplite tables,
//! columns and indexes are allowed and printed; a reference index oplite
//! lacks must be listed in [`NOT_NEEDED`] with the reason.
mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use rusqlite::Connection;

type Layout = BTreeMap<String, BTreeSet<String>>;

/// Reference indexes oplite does without, and why. Indexes are not part of
/// the contract with the SDKs (they read tables, never name an index).
const NOT_NEEDED: &[(&str, &str)] = &[(
    "ps_oplog_key",
    "internal schema version 3: the op a key supersedes is found through ps_oplog_row \
     (sql/migrations/0003_oplog_key_through_row.up.sql); maintaining (bucket, key) cost \
     about a quarter of storing a line",
)];

fn layout(db: &Connection) -> (Layout, BTreeSet<String>) {
    let mut tables = Layout::new();
    let names: Vec<String> = {
        let mut stmt = db
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            .unwrap();
        stmt.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect()
    };
    for name in names {
        let mut stmt = db.prepare("SELECT name FROM pragma_table_info(?1)").unwrap();
        let cols = stmt.query_map([&name], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect();
        tables.insert(name, cols);
    }
    let mut stmt = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'")
        .unwrap();
    let indexes = stmt.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect();
    (tables, indexes)
}

#[test]
fn init_creates_the_same_tables_and_columns_as_the_reference() {
    let ours = oplite_initialised();
    let theirs = reference();
    init(&theirs);
    let (our_tables, our_indexes) = layout(&ours);
    let (ref_tables, ref_indexes) = layout(&theirs);

    for (table, ref_cols) in &ref_tables {
        let our_cols = our_tables
            .get(table)
            .unwrap_or_else(|| panic!("oplite lacks table {table} (reference columns {ref_cols:?})"));
        let missing: Vec<_> = ref_cols.difference(our_cols).collect();
        assert!(missing.is_empty(), "{table}: oplite lacks columns {missing:?}");
        let extra: Vec<_> = our_cols.difference(ref_cols).collect();
        if !extra.is_empty() {
            println!("{table}: extra oplite columns {extra:?}");
        }
    }
    for table in our_tables.keys().filter(|t| !ref_tables.contains_key(*t)) {
        println!("extra oplite table {table}");
    }
    let missing: Vec<_> = ref_indexes
        .difference(&our_indexes)
        .filter(|index| !NOT_NEEDED.iter().any(|(name, _)| name == index))
        .collect();
    assert!(missing.is_empty(), "oplite lacks indexes {missing:?}");
    for (name, why) in NOT_NEEDED {
        assert!(ref_indexes.contains(*name), "{name} is listed as not needed but the reference lacks it too");
        assert!(!our_indexes.contains(*name), "{name} is listed as not needed but oplite has it");
        println!("reference index {name} not in oplite: {why}");
    }
    for index in our_indexes.difference(&ref_indexes) {
        println!("extra oplite index {index}");
    }
}
