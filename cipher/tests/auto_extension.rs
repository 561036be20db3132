//! The mobile apps' path inside SQLCipher: `oplite_auto_extension()` before
//! any connection, so oplite registers itself while SQLite opens the file,
//! before the app has given the key. Registering must not read the file:
//! the key then comes first, and the encrypted database works as any
//! other. In its own test binary because the registration is process-wide.

use oplite_cipher::{give_key, plaintext_found, scratch, LOCAL_MARKER, SQLITE_HEADER};
use rusqlite::Connection;

#[test]
fn oplite_registered_at_open_leaves_the_key_first() {
    oplite::register_auto_extension().unwrap();
    let dir = scratch("auto");
    let path = dir.join("app.db");
    {
        let conn = Connection::open(&path).unwrap();
        give_key(&conn, "k").unwrap();
        conn.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
        conn.execute_batch(r#"BEGIN; SELECT powersync_replace_schema('{"tables": [{"name": "notes", "columns": [{"name": "body", "type": "text"}]}]}'); COMMIT;"#).unwrap();
        conn.execute("INSERT INTO notes(id, body) VALUES ('n1', ?1)", [LOCAL_MARKER]).unwrap();
        assert_eq!(conn.query_row("SELECT count(*) FROM ps_crud", [], |r| r.get::<_, i64>(0)).unwrap(), 1);
    }
    assert_eq!(plaintext_found(&dir, &[LOCAL_MARKER, SQLITE_HEADER]), Vec::<String>::new());
    // Without the key, the first statement that reads the file fails.
    let wrong = Connection::open(&path).unwrap();
    let error = wrong.query_row("SELECT count(*) FROM ps_crud", [], |r| r.get::<_, i64>(0)).unwrap_err();
    assert!(error.to_string().contains("file is not a database"), "{error}");
    let conn = Connection::open(&path).unwrap();
    give_key(&conn, "k").unwrap();
    let body: String = conn.query_row("SELECT body FROM notes WHERE id = 'n1'", [], |r| r.get(0)).unwrap();
    assert_eq!(body, LOCAL_MARKER);
}
