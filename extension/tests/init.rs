//! powersync_init(), the internal schema and the functions around it,
//! through SQL on real SQLite.
mod common;

use common::*;
use rusqlite::ffi;

fn schema_sql(db: &rusqlite::Connection) -> Vec<(String, Option<String>)> {
    let mut stmt = db.prepare("SELECT name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name").unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(|r| r.unwrap()).collect()
}

#[test]
fn init_is_idempotent() {
    let db = oplite_initialised();
    let schema = schema_sql(&db);
    let client_id: String = db.query_row("SELECT powersync_client_id()", [], |r| r.get(0)).unwrap();
    let version: i64 = db.query_row("PRAGMA schema_version", [], |r| r.get(0)).unwrap();
    init(&db);
    init(&db);
    assert_eq!(schema_sql(&db), schema);
    assert_eq!(db.query_row("PRAGMA schema_version", [], |r| r.get::<_, i64>(0)).unwrap(), version);
    assert_eq!(db.query_row("SELECT powersync_client_id()", [], |r| r.get::<_, String>(0)).unwrap(), client_id);
    let migrations: i64 = db.query_row("SELECT count(*) FROM ps_migration", [], |r| r.get(0)).unwrap();
    assert_eq!(migrations, oplite::migrations::LATEST_VERSION);
}

#[test]
fn state_changing_functions_fail_with_misuse_outside_a_transaction() {
    let db = oplite();
    let err = db.query_row("SELECT powersync_init()", [], |r| r.get::<_, String>(0)).unwrap_err();
    assert_eq!(error_code(&err), ffi::SQLITE_MISUSE);
    assert!(err.to_string().contains("This function may only be called in transactions."), "{err}");
    // Nothing was created.
    assert!(schema_sql(&db).is_empty());
    let err = db.query_row("SELECT oplite_migrate(0)", [], |r| r.get::<_, i64>(0)).unwrap_err();
    assert_eq!(error_code(&err), ffi::SQLITE_MISUSE);
}

#[test]
fn migration_down_and_up_round_trips_through_sql() {
    let db = oplite_initialised();
    let schema = schema_sql(&db);
    db.execute_batch("BEGIN; SELECT oplite_migrate(0); COMMIT;").unwrap();
    assert!(schema_sql(&db).is_empty(), "{:?}", schema_sql(&db));
    init(&db);
    let restored: Vec<_> = schema_sql(&db);
    assert_eq!(restored, schema);
}

#[test]
fn a_failed_init_rolls_back_with_the_transaction() {
    let db = oplite();
    db.execute_batch("BEGIN; SELECT powersync_init(); ROLLBACK;").unwrap();
    assert!(schema_sql(&db).is_empty());
}

#[test]
fn bad_arguments_name_the_function_and_argument() {
    let db = oplite_initialised();
    db.execute_batch("BEGIN").unwrap();
    let err = db.query_row("SELECT oplite_migrate('x')", [], |r| r.get::<_, i64>(0)).unwrap_err();
    assert_eq!(error_code(&err), ffi::SQLITE_CONSTRAINT_DATATYPE);
    assert!(err.to_string().contains("oplite_migrate: argument 1 must be an integer"), "{err}");
    let err = db.query_row("SELECT oplite_migrate(99)", [], |r| r.get::<_, i64>(0)).unwrap_err();
    assert!(err.to_string().contains("no internal schema version 99"), "{err}");
}

#[test]
fn client_id_needs_init() {
    let db = oplite();
    let err = db.query_row("SELECT powersync_client_id()", [], |r| r.get::<_, String>(0)).unwrap_err();
    assert!(err.to_string().contains("powersync_init"), "{err}");
}

#[test]
fn uuids_are_random_v4() {
    let db = oplite();
    let (a, b): (String, String) = db.query_row("SELECT uuid(), gen_random_uuid()", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    assert_ne!(a, b);
    for u in [&a, &b] {
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4", "{u}");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"), "{u}");
    }
    // Not constant-folded: a fresh value per row.
    let distinct: i64 = db
        .query_row("SELECT count(DISTINCT uuid()) FROM (SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3)", [], |r| r.get(0))
        .unwrap();
    assert_eq!(distinct, 3);
}
