//! Every SQL function and virtual-table module the reference core registers
//! exists in oplite with the same number of arguments.
//!
//! The reference's own names are those a connection with the reference
//! loaded lists (`pragma_function_list`, `pragma_module_list`) minus those a
//! plain connection lists. oplite must register each of them, except the
//! entries of [`LEFT_OUT`], each of which says why.

mod common;

use std::collections::BTreeSet;

use rusqlite::Connection;

/// Reference names oplite does not register on purpose: (name, narg, why).
/// Keep `docs/differences.md` in step.
const LEFT_OUT: &[(&str, i64, &str)] = &[
    // Runs the reference's own internal migrations up or down to a version
    // number; oplite's internal schema has its own versions (src/migrations/),
    // so no version number would mean the same thing. A test helper only.
    ("powersync_test_migration", 1, "the reference's internal migration versions"),
];

fn functions(db: &Connection) -> BTreeSet<(String, i64)> {
    let mut stmt = db.prepare("SELECT name, narg FROM pragma_function_list").unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(|r| r.unwrap()).collect()
}

fn modules(db: &Connection) -> BTreeSet<String> {
    let mut stmt = db.prepare("SELECT name FROM pragma_module_list").unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect()
}

#[test]
fn every_reference_function_exists() {
    let plain = functions(&Connection::open_in_memory().unwrap());
    let theirs: BTreeSet<_> = functions(&common::reference()).difference(&plain).cloned().collect();
    let ours = functions(&common::oplite());
    assert!(!theirs.is_empty(), "the reference registered nothing");
    let missing: Vec<_> = theirs
        .iter()
        .filter(|(name, narg)| !ours.contains(&(name.clone(), *narg)))
        .filter(|(name, narg)| !LEFT_OUT.iter().any(|(n, a, _)| n == name && a == narg))
        .collect();
    assert!(missing.is_empty(), "reference functions oplite lacks (name, narg): {missing:?}");
    // The allow-list names only functions the reference has and oplite lacks.
    for (name, narg, _) in LEFT_OUT {
        let entry = (name.to_string(), *narg);
        assert!(theirs.contains(&entry) && !ours.contains(&entry), "stale LEFT_OUT entry {entry:?}");
    }
}

#[test]
fn every_reference_module_exists() {
    let plain = modules(&Connection::open_in_memory().unwrap());
    let theirs: BTreeSet<_> = modules(&common::reference()).difference(&plain).cloned().collect();
    let ours = modules(&common::oplite());
    assert!(!theirs.is_empty(), "the reference registered no module");
    let missing: Vec<_> = theirs.difference(&ours).collect();
    assert!(missing.is_empty(), "reference virtual-table modules oplite lacks: {missing:?}");
}
