//! Upgrades: a database written by each internal schema version is kept in
//! test-data/upgrades/v<N>.db (synced rows, buckets and ops, a queued
//! upload). Each must open with this build, migrate to the latest version
//! with `powersync_init()`, keep its data, and sync: resume from its
//! buckets, upload what is queued, converge to the server. A downgrade to
//! 0 through the down migrations the database itself recorded, and back up,
//! must work too.
//!
//! Every version below the latest must have a fixture. Write the fixture of
//! the current latest version with
//! `OPLITE_WRITE_UPGRADE_FIXTURE=1 cargo test-ext --test upgrade`
//! (do it when adding a migration, before changing anything else, so that
//! the file is what the previous release wrote).
mod common;

use std::path::PathBuf;

use common::driver::{open_file, server_rows, stored_crud, stored_rows, Driver, Encoding, TempDir};
use oplite::migrations::LATEST_VERSION;
use oplite_test_data::{ServerModel, ServerOptions};
use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;

const SEED: u64 = 42;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../test-data/upgrades")
}

/// The server as it was when the fixtures were written: fixed by the seed.
fn server_at_fixture() -> ServerModel {
    let mut server = ServerModel::new(SEED, ServerOptions { buckets: 3, ..Default::default() });
    server.mutate(40);
    server
}

const LOCAL_ROW: (&str, &str) = ("items", "local-1");

fn write_fixture() {
    let path = fixtures().join(format!("v{LATEST_VERSION}.db"));
    std::fs::create_dir_all(fixtures()).unwrap();
    let _ = std::fs::remove_file(&path);
    let db = Connection::open(&path).unwrap();
    oplite::register(&db).unwrap();
    db.execute_batch(
        "BEGIN; SELECT powersync_init();
         UPDATE ps_kv SET value = '00000000-0000-4000-8000-000000000000' WHERE key = 'client_id';
         COMMIT;",
    )
    .unwrap();
    let mut driver = Driver::new(db, server_at_fixture(), Encoding::Json);
    driver.converge();
    // A local write queued for upload.
    driver
        .db
        .execute_batch(&format!(
            "BEGIN;
             INSERT INTO ps_crud(data, tx_id) VALUES('{{\"op\":\"PUT\",\"id\":\"{id}\",\"type\":\"{t}\",\"data\":{{\"v\":1}}}}', 1);
             INSERT OR REPLACE INTO ps_kv(key, value) VALUES('target_checkpoint_request_id', 9223372036854775807);
             INSERT OR IGNORE INTO ps_updated_rows(row_type, row_id) VALUES('{t}', '{id}');
             INSERT OR REPLACE INTO ps_untyped(type, id, data) VALUES('{t}', '{id}', '{{\"v\":1}}');
             COMMIT; VACUUM;",
            t = LOCAL_ROW.0,
            id = LOCAL_ROW.1
        ))
        .unwrap();
    println!("wrote {}", path.display());
}

fn version(db: &Connection) -> i64 {
    db.query_row("SELECT max(id) FROM ps_migration", [], |r| r.get(0)).unwrap()
}

fn integrity(db: &Connection) -> String {
    db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap()
}

/// The fixture's data as this build reads it.
fn check_fixture_data(db: &Connection, context: &str) {
    let mut expected = server_rows(&server_at_fixture());
    expected.insert((LOCAL_ROW.0.into(), LOCAL_ROW.1.into()), "{\"v\":1}".into());
    assert_eq!(stored_rows(db), expected, "{context}: synced rows");
    assert_eq!(stored_crud(db).len(), 1, "{context}: the queued upload");
}

fn open_copy(dir: &TempDir, fixture: &PathBuf) -> PathBuf {
    let path = dir.join("app.db");
    std::fs::copy(fixture, &path).unwrap();
    path
}

#[test]
fn every_earlier_version_opens_migrates_and_syncs() {
    if std::env::var_os("OPLITE_WRITE_UPGRADE_FIXTURE").is_some() {
        write_fixture();
    }
    let mut tested = Vec::new();
    for v in 1..=LATEST_VERSION {
        let fixture = fixtures().join(format!("v{v}.db"));
        if !fixture.exists() {
            assert_eq!(
                v, LATEST_VERSION,
                "{} is missing: every internal schema version below the latest needs a fixture",
                fixture.display()
            );
            continue;
        }
        let context = format!("v{v}.db");
        let dir = TempDir::new("upgrade");
        let path = open_copy(&dir, &fixture);
        let db = open_file(&path, None);
        assert_eq!(version(&db), v, "{context}: the fixture's version");
        assert_eq!(integrity(&db), "ok");

        // Open and migrate.
        db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
        assert_eq!(version(&db), LATEST_VERSION, "{context}");
        assert_eq!(integrity(&db), "ok");
        check_fixture_data(&db, &context);

        // Sync: resume from the stored buckets, upload, converge.
        let mut server = server_at_fixture();
        server.mutate(25);
        let mut driver = Driver::new(db, server, Encoding::Bson);
        driver.model.crud = stored_crud(&driver.db);
        driver.next_write_checkpoint = 100;
        let downloaded = driver.converge();
        let total: usize = driver.server.buckets.iter().map(|b| b.ops.len()).sum();
        assert!(downloaded < total, "{context}: downloaded everything again ({downloaded} of {total} ops)");
        tested.push(v);
    }
    assert!(tested.contains(&1), "the version 1 fixture (test-data/upgrades/v1.db) must be kept");
}

#[test]
fn down_to_zero_with_the_recorded_migrations_and_back_up() {
    let fixture = fixtures().join("v1.db");
    let dir = TempDir::new("downgrade");
    let path = open_copy(&dir, &fixture);
    let db = open_file(&path, None);
    let tables = |db: &Connection| -> Vec<String> {
        let mut stmt = db
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'ps_%' ORDER BY name")
            .unwrap();
        stmt.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect()
    };
    assert!(!tables(&db).is_empty());
    // Down with the SQL the fixture recorded when it was written.
    db.execute_batch("BEGIN; SELECT oplite_migrate(0); COMMIT;").unwrap();
    assert!(tables(&db).is_empty(), "{:?}", tables(&db));
    assert_eq!(integrity(&db), "ok");
    // Up again: an empty database that syncs from scratch.
    db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
    assert_eq!(version(&db), LATEST_VERSION);
    let mut server = server_at_fixture();
    server.mutate(10);
    let mut driver = Driver::new(db, server, Encoding::Json);
    driver.converge();

    // A round trip through every version, from the fixture upgraded to the
    // latest: down one step at a time and up again.
    let steps_dir = TempDir::new("downgrade-steps");
    let path = open_copy(&steps_dir, &fixture);
    let db = open_file(&path, None);
    db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
    for target in (0..LATEST_VERSION).rev() {
        db.execute_batch(&format!("BEGIN; SELECT oplite_migrate({target}); COMMIT;")).unwrap();
        if target > 0 {
            assert_eq!(version(&db), target);
        }
    }
    db.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
    assert_eq!(version(&db), LATEST_VERSION);
    assert_eq!(integrity(&db), "ok");
    let mut driver = Driver::new(db, server_at_fixture(), Encoding::Json);
    driver.control("start", SqlValue::Null);
    driver.control("stop", SqlValue::Null);
}
