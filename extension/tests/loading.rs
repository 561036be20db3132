//! The built `liboplite.so` loads through `load_extension` under both entry
//! point names and registers the same functions.
mod common;

use common::*;
use rusqlite::Connection;

fn functions(db: &Connection) -> Vec<String> {
    let mut stmt = db
        .prepare(
            "SELECT DISTINCT name FROM pragma_function_list \
             WHERE name LIKE 'powersync%' OR name LIKE 'oplite%' OR name IN ('uuid', 'gen_random_uuid') ORDER BY name",
        )
        .unwrap();
    stmt.query_map([], |row| row.get(0)).unwrap().map(|r| r.unwrap()).collect()
}

#[test]
fn loads_under_both_entry_points_with_the_same_functions() {
    let so = oplite_so();
    let mut seen = Vec::new();
    for entry in ["sqlite3_oplite_init", "sqlite3_powersync_init"] {
        let db = Connection::open_in_memory().unwrap();
        load(&db, &so, entry).unwrap_or_else(|e| panic!("loading with {entry}: {e}"));
        let names = functions(&db);
        assert!(names.contains(&"powersync_init".to_string()), "{entry}: {names:?}");
        let version: String = db.query_row("SELECT powersync_rs_version()", [], |r| r.get(0)).unwrap();
        assert!(version.starts_with("0.5."), "{version}");
        init(&db);
        let tables: i64 = db
            .query_row("SELECT count(*) FROM sqlite_master WHERE name = 'ps_oplog'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(tables, 1);
        seen.push(names);
    }
    assert_eq!(seen[0], seen[1]);
}

#[test]
fn loaded_library_reports_misuse_outside_a_transaction() {
    let db = Connection::open_in_memory().unwrap();
    load(&db, &oplite_so(), "sqlite3_oplite_init").unwrap();
    let err = db.query_row("SELECT powersync_init()", [], |r| r.get::<_, String>(0)).unwrap_err();
    assert_eq!(error_code(&err), rusqlite::ffi::SQLITE_MISUSE, "{err}");
}

#[test]
fn registered_functions_match_between_rlib_and_so() {
    let db = Connection::open_in_memory().unwrap();
    load(&db, &oplite_so(), "sqlite3_oplite_init").unwrap();
    assert_eq!(functions(&db), functions(&oplite()));
}
