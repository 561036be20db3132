//! Port of the reference core's `dart/test/update_hooks_test.dart`:
//! `powersync_update_hooks('install' / 'get')` reports the tables changed
//! by committed transactions, once each.
mod common;
mod upstream;

use rusqlite::Connection;
use serde_json::{json, Value};
use upstream::{exec, init, scalar, Core};

fn open(core: Core) -> Connection {
    let db = core.open();
    init(&db);
    exec(&db, "CREATE TABLE foo (bar INTEGER)", &[]);
    exec(&db, "SELECT powersync_update_hooks('install')", &[]);
    db
}

fn updates(db: &Connection) -> Value {
    let text = scalar(db, "SELECT powersync_update_hooks('get')", &[]);
    serde_json::from_str(text.as_str().unwrap()).unwrap()
}

fn empty_initially(core: Core) {
    let db = open(core);
    assert_eq!(updates(&db), json!([]));
}

fn reports_changed_tables(core: Core) {
    let db = open(core);
    exec(&db, "INSERT INTO foo DEFAULT VALUES", &[]);
    assert_eq!(updates(&db), json!(["foo"]));
}

fn deduplicates_tables(core: Core) {
    let db = open(core);
    let mut stmt = db.prepare("INSERT INTO foo (bar) VALUES (?)").unwrap();
    for i in 0..1000 {
        stmt.execute([i]).unwrap();
    }
    drop(stmt);
    assert_eq!(updates(&db), json!(["foo"]));
}

fn no_report_before_commit(core: Core) {
    let db = open(core);
    exec(&db, "BEGIN", &[]);
    exec(&db, "INSERT INTO foo DEFAULT VALUES", &[]);
    assert_eq!(updates(&db), json!([]));
    exec(&db, "COMMIT", &[]);
    assert_eq!(updates(&db), json!(["foo"]));
}

fn no_report_of_rollbacks(core: Core) {
    let db = open(core);
    exec(&db, "BEGIN", &[]);
    exec(&db, "INSERT INTO foo DEFAULT VALUES", &[]);
    assert_eq!(updates(&db), json!([]));
    exec(&db, "ROLLBACK", &[]);
    assert_eq!(updates(&db), json!([]));
}

per_core! {
    empty_initially;
    reports_changed_tables;
    deduplicates_tables;
    no_report_before_commit;
    no_report_of_rollbacks;
}
