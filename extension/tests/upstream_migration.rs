//! Port of the reference core's `dart/test/migration_test.dart`: starting
//! from the internal schema of every older version (fixtures in
//! upstream/migration_fixtures.json, taken from the Dart suite),
//! `powersync_init` reaches the current schema and keeps the data;
//! `powersync_test_migration` goes back down; local checkpoint state moves
//! between `$local` and `ps_kv`; app schemas survive migrations.
//!
//! These compare the reference's internal tables and `ps_migration` rows
//! text for text, so most oplite twins are ignored as internal: oplite
//! keeps its own version history (docs/differences.md).
mod common;
mod upstream;

use std::sync::OnceLock;

use rusqlite::Connection;
use serde_json::{json, Value};
use upstream::dump::{data, data_with_buckets, schema, schema_and_migrations};
use upstream::sync::{bucket, checkpoint, checkpoint_complete};
use upstream::{exec, init, replace_schema, run, scalar, select, tx, Core};

fn fixtures() -> &'static Value {
    static FIXTURES: OnceLock<Value> = OnceLock::new();
    FIXTURES.get_or_init(|| serde_json::from_str(include_str!("upstream/migration_fixtures.json")).unwrap())
}

fn fixture(group: &str, version: i64) -> &'static str {
    fixtures()[group][version.to_string()].as_str().unwrap_or_else(|| panic!("no {group} fixture for {version}"))
}

fn text(name: &str) -> &'static str {
    fixtures()[name].as_str().unwrap()
}

const VERSION: i64 = 14;

fn final_state() -> &'static str {
    fixture("expected_state", VERSION)
}

/// A state without its `ps_migration` rows (each on one line).
fn without_migrations(state: &str) -> String {
    state.lines().filter(|l| !l.starts_with(";INSERT INTO ps_migration")).collect::<Vec<_>>().join("\n")
}

fn batch(db: &Connection, sql: &str) {
    db.execute_batch(sql).unwrap_or_else(|e| panic!("{e} in {sql}"));
}

fn test_migration(db: &Connection, version: i64) {
    tx(db, "SELECT powersync_test_migration(?)", &[&version]);
}

fn extension_setup(core: Core) {
    let db = core.open();
    assert!(scalar(&db, "SELECT sqlite_version()", &[]).is_string());
    assert!(scalar(&db, "SELECT powersync_rs_version()", &[]).is_string());
}

#[test]
fn fixtures_match_database_version() {
    let last = fixtures()["expected_state"].as_object().unwrap().keys().map(|k| k.parse::<i64>().unwrap()).max();
    assert_eq!(last, Some(VERSION));
}

fn create_from_scratch(core: Core) {
    let db = core.open();
    init(&db);
    assert_eq!(schema_and_migrations(&db), final_state().trim());
}

fn migrate_from(core: Core, version: i64) {
    let db = core.open();
    batch(&db, fixture("expected_state", version));
    init(&db);
    assert_eq!(schema_and_migrations(&db), final_state().trim());
}

/// `data` with ps_buckets read through the reference's version-14 columns
/// (for the reference, every column; oplite adds its own stats columns).
fn data_v14(db: &Connection) -> String {
    data_with_buckets(
        db,
        "SELECT id, name, last_applied_op, last_op, add_checksum, op_checksum, pending_delete, \
         count_at_last, count_since_last, downloaded_size FROM ps_buckets ORDER BY name",
    )
}

fn migrate_from_with_data(core: Core, version: i64) {
    let db = core.open();
    batch(&db, fixture("expected_state", version));
    batch(&db, fixture("data1", version));
    init(&db);
    assert_eq!(data_v14(&db), fixture("data1", VERSION).trim());
}

fn migrate_down(core: Core, version: i64) {
    let db = core.open();
    batch(&db, final_state());
    test_migration(&db, version);
    assert_eq!(schema_and_migrations(&db), fixture("expected_state", version).trim());
}

fn migrate_down_with_data(core: Core, version: i64) {
    let db = core.open();
    batch(&db, final_state());
    batch(&db, fixture("data1", VERSION));
    test_migration(&db, version);
    assert_eq!(data(&db), fixture("data_down1", version).trim());
}

/// The up and down migration tests for each older version.
macro_rules! by_version {
    ($($n:literal => $from:ident, $from_data:ident $(, $down:ident, $down_data:ident)?;)*) => {
        $(
            fn $from(core: Core) { migrate_from(core, $n) }
            fn $from_data(core: Core) { migrate_from_with_data(core, $n) }
            $(
                fn $down(core: Core) { migrate_down(core, $n) }
                fn $down_data(core: Core) { migrate_down_with_data(core, $n) }
            )?
            per_core! {
                $from, oplite: #[ignore = "internal: compares the reference's internal schema and ps_migration rows"];
                $from_data;
                $(
                    $down, oplite: #[ignore = "internal: powersync_test_migration (reference versions) is not registered"];
                    $down_data, oplite: #[ignore = "internal: powersync_test_migration (reference versions) is not registered"];
                )?
            }
        )*
    };
}

by_version! {
    2 => from_2, from_2_with_data, down_to_2, down_to_2_with_data;
    3 => from_3, from_3_with_data, down_to_3, down_to_3_with_data;
    4 => from_4, from_4_with_data, down_to_4, down_to_4_with_data;
    5 => from_5, from_5_with_data, down_to_5, down_to_5_with_data;
    6 => from_6, from_6_with_data, down_to_6, down_to_6_with_data;
    7 => from_7, from_7_with_data, down_to_7, down_to_7_with_data;
    8 => from_8, from_8_with_data, down_to_8, down_to_8_with_data;
    9 => from_9, from_9_with_data, down_to_9, down_to_9_with_data;
    10 => from_10, from_10_with_data, down_to_10, down_to_10_with_data;
    11 => from_11, from_11_with_data, down_to_11, down_to_11_with_data;
    12 => from_12, from_12_with_data, down_to_12, down_to_12_with_data;
    13 => from_13, from_13_with_data, down_to_13, down_to_13_with_data;
    14 => from_14, from_14_with_data;
}

const LOCAL_BUCKET_COLUMNS: &str = "INSERT INTO ps_buckets(id, name, last_applied_op, last_op, target_op, add_checksum, \
    op_checksum, pending_delete, count_at_last, count_since_last, downloaded_size)";

/// Version 13 with a `$local` bucket of these ops, then `powersync_init`.
fn from_13_with_local(core: Core, applied: i64, seen: i64, target: i64) -> Connection {
    let db = core.open();
    batch(&db, fixture("expected_state", 13));
    exec(
        &db,
        &format!("{LOCAL_BUCKET_COLUMNS} VALUES (1, '$local', ?, ?, ?, 0, 0, 1, 0, 0, 0)"),
        &[&applied, &seen, &target],
    );
    init(&db);
    db
}

/// ps_kv without the client id: the fixtures have none, and oplite's
/// powersync_init creates one whenever it is missing (the reference's only
/// at its version 3).
fn kv_rows(db: &Connection) -> Vec<Value> {
    select(db, "SELECT key, value FROM ps_kv WHERE key != 'client_id' ORDER BY key", &[])
}

fn kv(key: &str, value: i64) -> Value {
    json!({"key": key, "value": value})
}

fn local_bucket(db: &Connection) -> Vec<Value> {
    select(db, "SELECT * FROM ps_buckets WHERE name = '$local'", &[])
}

fn local_state_moves_to_kv(core: Core) {
    let db = from_13_with_local(core, 5, 6, 7);
    assert_eq!(
        kv_rows(&db),
        vec![
            kv("last_applied_checkpoint_request_id", 5),
            kv("last_seen_checkpoint_request_id", 6),
            kv("target_checkpoint_request_id", 7),
        ]
    );
    assert!(local_bucket(&db).is_empty());
    let columns = select(&db, "PRAGMA table_info('ps_buckets')", &[]);
    assert!(!columns.iter().any(|c| c["name"] == "target_op"));
    assert!(run(&db, "UPDATE ps_buckets SET target_op = 8 WHERE name = '$local'", &[]).is_err());
}

fn applied_op_not_requested_id(core: Core) {
    let db = from_13_with_local(core, 5, 6, i64::MAX);
    assert_eq!(
        kv_rows(&db),
        vec![
            kv("last_applied_checkpoint_request_id", 5),
            kv("last_seen_checkpoint_request_id", 6),
            kv("target_checkpoint_request_id", i64::MAX),
        ]
    );
}

fn sentinel_target_not_requested_id(core: Core) {
    let db = from_13_with_local(core, 0, 0, i64::MAX);
    assert_eq!(kv_rows(&db), vec![kv("target_checkpoint_request_id", i64::MAX)]);
}

/// The final state with checkpoint state in `ps_kv`, migrated down to 13.
fn downgraded_with_checkpoint_state(core: Core) -> Connection {
    let db = core.open();
    batch(&db, final_state());
    batch(
        &db,
        "INSERT INTO ps_kv(key, value) VALUES ('last_requested_checkpoint_request_id', 7),
           ('last_seen_checkpoint_request_id', 6), ('last_applied_checkpoint_request_id', 5),
           ('target_checkpoint_request_id', 7);",
    );
    test_migration(&db, 13);
    db
}

fn downgrade_restores_local_state(core: Core) {
    let db = downgraded_with_checkpoint_state(core);
    assert_eq!(
        select(&db, "SELECT pending_delete, last_op, last_applied_op, target_op FROM ps_buckets WHERE name = '$local'", &[]),
        vec![json!({"pending_delete": 1, "last_op": 6, "last_applied_op": 5, "target_op": 7})]
    );
}

fn reupgrade_after_downgrade(core: Core) {
    let db = downgraded_with_checkpoint_state(core);
    exec(&db, "UPDATE ps_buckets SET last_op = 8, last_applied_op = 8, target_op = 9 WHERE name = '$local'", &[]);
    init(&db);
    assert_eq!(
        kv_rows(&db),
        vec![
            kv("last_applied_checkpoint_request_id", 8),
            kv("last_requested_checkpoint_request_id", 7),
            kv("last_seen_checkpoint_request_id", 8),
            kv("target_checkpoint_request_id", 9),
        ]
    );
    assert!(local_bucket(&db).is_empty());
    assert_eq!(schema_and_migrations(&db), final_state().trim());
}

fn downgrade_without_local_target(core: Core) {
    let db = core.open();
    batch(&db, final_state());
    test_migration(&db, 13);
    assert!(local_bucket(&db).is_empty());
}

fn lists_schema() -> Value {
    json!({"tables": [{"name": "lists", "columns": [{"name": "description", "type": "TEXT"}]}]})
}

fn schema_after_migration(core: Core) {
    let db = core.open();
    batch(&db, fixture("expected_state", 2));
    init(&db);
    replace_schema(&db, &lists_schema());
    assert_eq!(
        schema(&db),
        format!("{}\n{}", without_migrations(final_state()).trim(), text("current_developer_schema").trim())
    );
}

fn from_schema_3(core: Core, custom_trigger: bool) {
    let db = core.open();
    batch(&db, fixture("expected_state", 3));
    batch(&db, text("schema3"));
    let trigger = "create trigger t1 after delete on ps_data__lists begin\n  insert into lists(id, description) values(OLD.id, 'deleted');\nend";
    if custom_trigger {
        batch(&db, trigger);
    }
    init(&db);
    replace_schema(&db, &lists_schema());
    let mut expected = format!("{}\n{}", without_migrations(final_state()).trim(), text("schema5").trim());
    if custom_trigger {
        expected.push_str("\n;CREATE TRIGGER t1 after delete on ps_data__lists begin\n  insert into lists(id, description) values(OLD.id, 'deleted');\nend");
    }
    assert_eq!(schema(&db), expected);
}

fn schema_3_to_5(core: Core) {
    from_schema_3(core, false);
}

fn schema_3_to_5_custom_triggers(core: Core) {
    from_schema_3(core, true);
}

fn schema_5_down(core: Core, version: i64) {
    let db = core.open();
    batch(&db, fixture("expected_state", 5));
    batch(&db, text("schema5"));
    test_migration(&db, version);
    assert_eq!(
        schema(&db),
        format!("{}\n{}", without_migrations(fixture("expected_state", version)).trim(), text("schema_down3").trim())
    );
}

fn schema_5_to_4(core: Core) {
    schema_5_down(core, 4);
}

fn schema_5_to_3(core: Core) {
    schema_5_down(core, 3);
}

/// The version-5 database is built by the reference (its own migrations
/// take it down to 5, as a core of that time left it) in a file, which
/// `core` then opens: oplite adopts what the reference wrote.
fn from_5_with_broken_data(core: Core) {
    let dir = common::driver::TempDir::new("fix035");
    let path = dir.join("v5.db");
    {
        let db = Core::Reference.open_path(&path, rusqlite::OpenFlags::default());
        init(&db);
        replace_schema(
            &db,
            &json!({"tables": [
                {"name": "lists", "columns": [{"name": "description", "type": "TEXT"}]},
                {"name": "todos", "columns": [{"name": "description", "type": "TEXT"}]},
            ]}),
        );
        test_migration(&db, 5);
        batch(&db, text("fix035_broken"));
    }
    upstream::clock::reset();
    let db = core.open_path(&path, rusqlite::OpenFlags::default());
    init(&db);
    assert_eq!(data_v14(&db), text("fix035_migrated").trim());

    let control = |op: &str, payload: rusqlite::types::Value| run(&db, "SELECT powersync_control(?, ?)", &[&op, &payload]).unwrap();
    exec(&db, "BEGIN", &[]);
    control("start", rusqlite::types::Value::Null);
    control("seed_checkpoint_request_id", 1.into());
    let mut b1 = bucket("b1", 3);
    b1["checksum"] = json!(120);
    let mut b2 = bucket("b2", 3);
    b2["checksum"] = json!(3);
    control("line_text", checkpoint(3, vec![b1, b2], None, vec![]).to_string().into());
    control("line_text", checkpoint_complete(None, "3").to_string().into());
    exec(&db, "COMMIT", &[]);
    assert_eq!(data_v14(&db), text("fix035_fixed").trim());
}

fn schema_7_to_8_sync_times(core: Core) {
    let db = core.open();
    batch(&db, fixture("expected_state", 7));
    for i in 0..10 {
        let insert = "INSERT OR REPLACE INTO ps_sync_state (priority, last_synced_at) VALUES (?, ?)";
        exec(&db, insert, &[&2147483647, &format!("2025-03-05 14:58:{i:02}")]);
        exec(&db, insert, &[&3, &format!("2025-03-05 13:58:{i:02}")]);
    }
    test_migration(&db, 8);
    assert_eq!(
        select(&db, "SELECT * FROM ps_sync_state ORDER BY priority", &[]),
        vec![
            json!({"priority": 3, "last_synced_at": "2025-03-05 13:58:09"}),
            json!({"priority": 2147483647, "last_synced_at": "2025-03-05 14:58:09"}),
        ]
    );
}

per_core! {
    extension_setup;
    create_from_scratch, oplite: #[ignore = "internal: compares the reference's internal schema and ps_migration rows"];
    local_state_moves_to_kv;
    applied_op_not_requested_id;
    sentinel_target_not_requested_id;
    downgrade_restores_local_state, oplite: #[ignore = "internal: powersync_test_migration (reference versions) is not registered"];
    reupgrade_after_downgrade, oplite: #[ignore = "internal: powersync_test_migration (reference versions) is not registered"];
    downgrade_without_local_target, oplite: #[ignore = "internal: powersync_test_migration (reference versions) is not registered"];
    schema_after_migration, oplite: #[ignore = "internal: compares the reference's internal schema text (oplite's internal tables differ; docs/differences.md)"];
    schema_3_to_5, oplite: #[ignore = "internal: compares the reference's internal schema text (oplite's internal tables differ; docs/differences.md)"];
    schema_3_to_5_custom_triggers, oplite: #[ignore = "internal: compares the reference's internal schema text (oplite's internal tables differ; docs/differences.md)"];
    schema_5_to_4, oplite: #[ignore = "internal: powersync_test_migration (reference versions) is not registered"];
    schema_5_to_3, oplite: #[ignore = "internal: powersync_test_migration (reference versions) is not registered"];
    from_5_with_broken_data;
    schema_7_to_8_sync_times, oplite: #[ignore = "internal: powersync_test_migration (reference versions) is not registered"];
}
