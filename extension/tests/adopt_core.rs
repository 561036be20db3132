//! Switching cores: a database the PowerSync core wrote (synced buckets and
//! rows, a schema with JSON data tables, uploads queued) opens with oplite,
//! which adopts it in place (src/migrations/adopt.rs) and syncs on. Differential: a copy
//! of the same file goes on with the PowerSync core, both are fed the same
//! server changes, and every internal table and view must agree throughout.
mod common;

use std::path::{Path, PathBuf};

use common::diff::Pair;
use common::driver::{open_file, stored_crud, Driver, Encoding, TempDir, NOTES_SCHEMA};
use common::{load, reference_so};
use oplite::migrations::LATEST_VERSION;
use oplite_test_data::{ServerModel, ServerOptions};
use rusqlite::Connection;

const SEED: u64 = 7;

fn server() -> ServerModel {
    let mut server = ServerModel::new(SEED, ServerOptions { buckets: 3, ..Default::default() });
    server.mutate(40);
    server
}

/// A file database with the PowerSync core loaded (and oplite not).
fn open_with_core(path: &Path) -> Connection {
    let db = Connection::open(path).unwrap();
    db.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;").unwrap();
    load(&db, &reference_so(), "sqlite3_powersync_init").unwrap();
    db
}

fn replace_schema(db: &Connection, schema: &str) {
    db.execute_batch("BEGIN").unwrap();
    db.query_row("SELECT powersync_replace_schema(?1)", [schema], |_| Ok(())).unwrap();
    db.execute_batch("COMMIT").unwrap();
}

/// What the PowerSync core leaves behind after a few sessions: synced rows
/// (notes through its JSON data table, the rest in ps_untyped) and two
/// local writes still waiting for upload.
fn core_database(dir: &TempDir) -> PathBuf {
    let path = dir.join("core.db");
    let db = open_with_core(&path);
    db.execute_batch(
        "BEGIN; SELECT powersync_init();
         UPDATE ps_kv SET value = '00000000-0000-4000-8000-000000000000' WHERE key = 'client_id';
         COMMIT;",
    )
    .unwrap();
    replace_schema(&db, NOTES_SCHEMA);
    let mut driver = Driver::new(db, server(), Encoding::Json);
    driver.converge();
    driver.local_write();
    driver.local_write();
    assert_eq!(stored_crud(&driver.db).len(), 2, "the core queued the local writes");
    path
}

fn migration_ids(db: &Connection) -> Vec<i64> {
    let mut stmt = db.prepare("SELECT id FROM ps_migration ORDER BY id").unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect()
}

fn init(db: &Connection) -> rusqlite::Result<()> {
    db.execute_batch("BEGIN")?;
    let result = db.query_row("SELECT powersync_init()", [], |_| Ok(()));
    db.execute_batch(if result.is_ok() { "COMMIT" } else { "ROLLBACK" })?;
    result
}

/// Steps the core database at `path` down to the core's internal `version`
/// with the core's own migrations (`powersync_test_migration`), as if an
/// older SDK had written it.
fn step_core_down(path: &Path, version: i64) {
    let db = open_with_core(path);
    db.execute_batch("BEGIN").unwrap();
    db.query_row("SELECT powersync_test_migration(?1)", [version], |_| Ok(())).unwrap();
    db.execute_batch("COMMIT").unwrap();
    assert_eq!(migration_ids(&db).last(), Some(&version));
}

/// The core's database at `core_path` (its internal `version`) is copied;
/// the core brings the original up to date, oplite adopts the copy; both
/// take the app's schema again and must agree, then sync on from where the
/// old core left off and must agree again.
fn adopted_syncs_on_like_the_core(dir: &TempDir, core_path: &Path, version: i64) {
    let ours_path = dir.join("ours.db");
    std::fs::copy(core_path, &ours_path).unwrap();

    let theirs = open_with_core(core_path);
    let ours = open_file(&ours_path, None);
    assert_eq!(migration_ids(&ours).last(), Some(&version));
    let crud_before = stored_crud(&ours);
    init(&theirs).unwrap();
    init(&ours).unwrap();
    assert_eq!(migration_ids(&ours), (1..=LATEST_VERSION).collect::<Vec<_>>(), "oplite's history replaces the core's");
    assert_eq!(ours.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0)).unwrap(), "ok");
    assert_eq!(stored_crud(&ours), crud_before, "the queued uploads survive with their transactions");
    let client_id: String = ours.query_row("SELECT value FROM ps_kv WHERE key = 'client_id'", [], |r| r.get(0)).unwrap();
    if version >= 3 {
        assert_eq!(client_id, "00000000-0000-4000-8000-000000000000", "the client id survives");
    }

    // The SDK hands over its schema again on every open: oplite converts the
    // core's JSON data table to typed columns, the core changes nothing.
    replace_schema(&theirs, NOTES_SCHEMA);
    replace_schema(&ours, NOTES_SCHEMA);
    let typed: String = ours
        .query_row("SELECT sql FROM sqlite_master WHERE name = 'ps_data__notes'", [], |r| r.get(0))
        .unwrap();
    assert!(typed.contains("\"body\""), "notes should be stored in typed columns now: {typed}");

    let notes: i64 = ours.query_row("SELECT count(*) FROM notes", [], |r| r.get(0)).unwrap();
    assert!(notes > 0, "the synced notes survive the conversion");
    let pair = Pair {
        ours,
        theirs,
        trace: Vec::new(),
        extra_queries: vec![("notes".into(), "SELECT * FROM notes ORDER BY id".into())],
    };
    pair.assert_same_tables();

    // Sync on: the queued uploads go up, the server changes, both converge.
    let Pair { ours, theirs, .. } = pair;
    let mut drivers = [ours, theirs].map(|db| {
        let mut server = server();
        server.mutate(30);
        let mut driver = Driver::new(db, server, Encoding::Bson);
        driver.model.crud = stored_crud(&driver.db);
        driver.next_write_checkpoint = 100;
        driver
    });
    let mut downloaded = Vec::new();
    for driver in &mut drivers {
        downloaded.push(driver.converge());
        driver.local_write();
    }
    assert_eq!(downloaded[0], downloaded[1], "both resumed from the same stored buckets");
    let total: usize = drivers[0].server.buckets.iter().map(|b| b.ops.len()).sum();
    assert!(downloaded[0] < total, "oplite downloaded everything again ({} of {total} ops)", downloaded[0]);

    let [ours, theirs] = drivers;
    let pair = Pair {
        ours: ours.db,
        theirs: theirs.db,
        trace: Vec::new(),
        extra_queries: vec![("notes".into(), "SELECT * FROM notes ORDER BY id".into())],
    };
    pair.assert_same_tables();
}

#[test]
fn a_core_database_is_adopted_and_syncs_on_like_the_core() {
    let dir = TempDir::new("adopt");
    let core_path = core_database(&dir);
    adopted_syncs_on_like_the_core(&dir, &core_path, oplite::migrations::adopt::CORE_VERSION);
}

/// Every SDK release before the 0.5 cores left its database at one of the
/// core's versions 2 to 13: the core's own migrations take a synced
/// database there, then oplite brings it up and adopts it.
#[test]
fn an_older_core_database_is_brought_up_and_syncs_on_like_the_core() {
    for version in (2..oplite::migrations::adopt::CORE_VERSION).rev() {
        let dir = TempDir::new(&format!("adopt-{version}"));
        let core_path = core_database(&dir);
        step_core_down(&core_path, version);
        adopted_syncs_on_like_the_core(&dir, &core_path, version);
    }
}

/// A failed upgrade changes nothing: here the tables are version 14's but
/// ps_migration says an older core wrote them, so a step of the way up
/// fails; the database stays as it was.
#[test]
fn a_failed_upgrade_leaves_the_database_alone() {
    // 12: an older core. 2: an older core whose version number is also one
    // of oplite's, so the tables, not the number, must tell who wrote them.
    for version in [12, 2] {
        let dir = TempDir::new("adopt-old");
        let path = core_database(&dir);
        {
            let db = open_with_core(&path);
            db.execute("DELETE FROM ps_migration WHERE id > ?1", [version]).unwrap();
        }
        let db = open_file(&path, None);
        let before = migration_ids(&db);
        let err = init(&db).unwrap_err().to_string();
        assert!(err.contains("bringing the PowerSync core's schema from version"), "{err}");
        assert_eq!(migration_ids(&db), before);
        assert_eq!(stored_crud(&db).len(), 2, "the queued uploads are still there");
    }
}

/// The SDKs never call powersync_init: they open the database and hand over
/// their schema, so powersync_replace_schema must adopt too.
#[test]
fn replace_schema_alone_adopts_a_core_database() {
    let dir = TempDir::new("adopt-sdk");
    let path = core_database(&dir);
    let db = open_file(&path, None);
    replace_schema(&db, NOTES_SCHEMA);
    assert_eq!(migration_ids(&db), (1..=LATEST_VERSION).collect::<Vec<_>>());
    let notes: i64 = db.query_row("SELECT count(*) FROM notes", [], |r| r.get(0)).unwrap();
    assert!(notes > 0, "the synced notes survive");
    assert_eq!(stored_crud(&db).len(), 2, "the queued uploads survive");
    let typed: String =
        db.query_row("SELECT sql FROM sqlite_master WHERE name = 'ps_data__notes'", [], |r| r.get(0)).unwrap();
    assert!(typed.contains("\"body\""), "{typed}");
}

#[test]
fn a_newer_core_database_steps_down_with_its_own_sql_first() {
    let dir = TempDir::new("adopt-new");
    let path = core_database(&dir);
    {
        let db = open_with_core(&path);
        db.execute_batch(
            r#"CREATE TABLE ps_future(x);
               INSERT INTO ps_migration(id, down_migrations)
               VALUES(15, '[{"sql":"DROP TABLE ps_future"},{"sql":"DELETE FROM ps_migration WHERE id >= 15"}]');"#,
        )
        .unwrap();
    }
    let db = open_file(&path, None);
    init(&db).unwrap();
    assert_eq!(migration_ids(&db), (1..=LATEST_VERSION).collect::<Vec<_>>());
    let future: bool = db
        .query_row("SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE name = 'ps_future')", [], |r| r.get(0))
        .unwrap();
    assert!(!future, "the core's own down migration ran");
    assert_eq!(stored_crud(&db).len(), 2);
}
