//! Port of the reference core's `dart/test/error_test.dart`: the errors
//! (extended codes and messages) of calls made outside transactions, of
//! failing inner statements and of bad sync lines.
mod common;
mod upstream;

use upstream::{assert_sqlite_error, exec, init, run, Core};

fn not_in_transaction(core: Core) {
    let db = core.open();
    let outside = |sql: &str, function: &str, params: &[&dyn rusqlite::ToSql]| {
        assert_sqlite_error(
            run(&db, sql, params),
            21,
            &format!("{function}: This function may only be called in transactions."),
        );
    };
    outside("SELECT powersync_init()", "powersync_init", &[]);
    init(&db);
    outside("SELECT powersync_control(?, ?)", "powersync_control", &[&"STOP", &rusqlite::types::Null]);
    outside("SELECT powersync_replace_schema(?)", "powersync_replace_schema", &[&"{}"]);
    outside("SELECT powersync_test_migration(?)", "powersync_test_migration", &[&123]);
    outside("SELECT powersync_clear(?)", "powersync_clear", &[&0]);
    outside("SELECT powersync_trigger_resync(TRUE)", "powersync_trigger_resync", &[]);
}

fn inner_sqlite_descriptions(core: Core) {
    let db = core.open();
    exec(&db, "CREATE TABLE IF NOT EXISTS ps_migration(foo TEXT)", &[]);
    assert_sqlite_error(
        upstream::execute_in_tx(&db, "SELECT powersync_init()", &[]),
        1,
        "powersync_init: statement SELECT ifnull(max(id), 0) as version FROM ps_migration: internal SQLite call returned ERROR: no such column: id",
    );
}

fn missing_client_id(core: Core) {
    let db = core.open();
    init(&db);
    exec(&db, "DELETE FROM ps_kv", &[]);
    assert_sqlite_error(
        run(&db, "SELECT powersync_client_id()", &[]),
        4,
        "powersync_client_id: No client_id found in ps_kv",
    );
}

fn sync_protocol_invalid_json(core: Core) {
    let db = core.open();
    init(&db);
    exec(&db, "BEGIN", &[]);
    let control = |op: &str, arg: &dyn rusqlite::ToSql| run(&db, "SELECT powersync_control(?,?)", &[&op, arg]);
    control("start", &rusqlite::types::Null).unwrap();
    control("seed_checkpoint_request_id", &1).unwrap();
    assert_sqlite_error(
        control("line_text", &"invalid sync line"),
        4,
        "powersync_control: Sync protocol error: invalid text line. cause: expected value at line 1 column 1",
    );
}

per_core! {
    not_in_transaction, oplite: #[ignore = "internal: powersync_test_migration (the reference's test-only migration function) is not registered; the other five functions give the reference's code and message"];
    inner_sqlite_descriptions;
    missing_client_id;
    sync_protocol_invalid_json;
}
