//! The static path: `oplite_auto_extension()` registers oplite with
//! `sqlite3_auto_extension`, so connections opened afterwards have it.
//! In its own test binary because the registration is process-wide.

use rusqlite::Connection;

#[test]
fn auto_extension_registers_on_new_connections() {
    let before = Connection::open_in_memory().unwrap();
    assert!(before.query_row("SELECT oplite_version()", [], |r| r.get::<_, String>(0)).is_err());
    oplite::register_auto_extension().unwrap();
    // Registering twice is harmless.
    oplite::register_auto_extension().unwrap();
    let after = Connection::open_in_memory().unwrap();
    let version: String = after.query_row("SELECT oplite_version()", [], |r| r.get(0)).unwrap();
    assert!(version.starts_with("oplite "), "{version}");
    after.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
}
