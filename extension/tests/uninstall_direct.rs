//! Direct tables (core 0.5.4) across a change of core: `oplite_uninstall()`
//! leaves them as the core 0.5.4 wrote them (table, indexes and upload
//! triggers in its exact text, rows and queue kept), so the core takes the
//! file on with no DDL; and a file the core 0.5.4 wrote with direct tables
//! is adopted by oplite with its rows and its queue.

mod common;

use std::path::Path;

use common::diff::{Arg, Checkpoints, Pair};
use common::driver::{open_file, stored_crud, TempDir};
use common::schema::{rows, texts};
use common::{load, reference_so};
use rusqlite::Connection;
use serde_json::json;

const SCHEMA: &str = r#"{"tables":[
  {"name":"items","direct":true,"include_old":true,"columns":[{"name":"name","type":"text"},{"name":"n","type":"integer"}],
   "indexes":[{"name":"by_name","columns":[{"name":"name","ascending":true,"type":"text"}]}]},
  {"name":"drafts","direct":true,"local_only":true,"columns":[{"name":"text","type":"text"}]},
  {"name":"lists","columns":[{"name":"title","type":"text"}]}
]}"#;

const DIRECT: &[&str] = &["items", "drafts"];

fn open_core(path: &Path) -> Connection {
    let db = Connection::open(path).unwrap();
    db.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;").unwrap();
    load(&db, &reference_so(), "sqlite3_powersync_init").unwrap();
    db
}

fn set_up(db: &Connection) {
    common::init_fixed_client_id(db);
    replace_schema(db);
}

fn replace_schema(db: &Connection) {
    db.execute_batch("BEGIN").unwrap();
    db.query_row("SELECT powersync_replace_schema(?1)", [SCHEMA], |_| Ok(())).unwrap();
    db.execute_batch("COMMIT").unwrap();
}

fn schema_version(db: &Connection) -> i64 {
    db.query_row("PRAGMA schema_version", [], |r| r.get(0)).unwrap()
}

/// The direct tables' objects in `sqlite_master`, exact text.
fn direct_objects(db: &Connection) -> Vec<String> {
    texts(
        db,
        "SELECT type || ' ' || name || ': ' || ifnull(sql, '') FROM sqlite_master
         WHERE tbl_name IN ('items', 'drafts') ORDER BY type, name",
    )
}

fn assert_same_data(pair: &Pair, what: &str) {
    assert_eq!(direct_objects(&pair.ours), direct_objects(&pair.theirs), "{what}");
    // `lists` is a JSON table: its view is gone between the uninstall and
    // the core's replace_schema, its data table stays.
    let lists = "SELECT id, data FROM ps_data__lists ORDER BY id".to_owned();
    for sql in DIRECT.iter().map(|table| format!("SELECT * FROM {table} ORDER BY id")).chain([lists]) {
        assert_eq!(rows(&pair.ours, &sql), rows(&pair.theirs, &sql), "{sql}: {what}");
    }
    assert_eq!(stored_crud(&pair.ours), stored_crud(&pair.theirs), "ps_crud: {what}");
}

fn pair(ours: Connection, theirs: Connection) -> Pair {
    Pair { ours, theirs, trace: Vec::new(), extra_queries: Vec::new() }
}

/// `ours` and the core's `theirs.db` in `dir`, set up and [`fill`]ed alike.
fn filled(dir: &TempDir, ours: Connection) -> (Pair, Checkpoints) {
    let theirs = open_core(&dir.join("theirs.db"));
    set_up(&ours);
    set_up(&theirs);
    let mut pair = pair(ours, theirs);
    let mut stream = Checkpoints::default();
    fill(&mut pair, &mut stream);
    (pair, stream)
}

/// Synced rows, then local writes left in the queue.
fn fill(pair: &mut Pair, stream: &mut Checkpoints) {
    session(pair, stream, &[("items", "1", r#"{"name":"one","n":1,"extra":"x"}"#), ("items", "2", r#"{"name":"two"}"#), ("lists", "l", r#"{"title":"t"}"#)]);
    pair.execute(
        "INSERT INTO items(id, name, n) VALUES ('3', 'three', 3); UPDATE items SET n = 10 WHERE id = '1';
         INSERT INTO drafts(id, text) VALUES ('d', 'draft'); INSERT INTO lists(id, title) VALUES ('l2', 'u');",
    );
}

/// A sync session: start, one checkpoint of `rows`, stop.
fn session(pair: &mut Pair, stream: &mut Checkpoints, rows: &[(&str, &str, &str)]) {
    pair.control("start", Arg::Text(&json!({"schema": serde_json::from_str::<serde_json::Value>(SCHEMA).unwrap()}).to_string()));
    stream.send(pair, rows);
    pair.control("stop", Arg::Null);
}

#[test]
fn after_uninstall_the_core_sees_its_own_direct_tables() {
    let dir = TempDir::new("uninstall-direct");
    let (pair, mut stream) = filled(&dir, open_file(&dir.join("ours.db"), None));
    assert_same_data(&pair, "before uninstall");

    pair.ours.execute_batch("BEGIN").unwrap();
    let report: String = pair.ours.query_row("SELECT oplite_uninstall()", [], |r| r.get(0)).unwrap();
    pair.ours.execute_batch("COMMIT").unwrap();
    assert!(report.contains("\"changed\":true"), "{report}");
    let Pair { ours, theirs, .. } = pair;
    drop(ours);
    let ours = open_core(&dir.join("ours.db"));
    let mut pair = self::pair(ours, theirs);
    assert_same_data(&pair, "opened by the core");

    // The core's replace_schema finds its own direct tables: no DDL for them.
    let before = direct_objects(&pair.ours);
    pair.ours.execute_batch("BEGIN; SELECT powersync_init(); COMMIT;").unwrap();
    replace_schema(&pair.ours);
    assert_eq!(direct_objects(&pair.ours), before);
    assert_same_data(&pair, "after the core's replace_schema");

    pair.execute("DELETE FROM items WHERE id = '2'; UPDATE drafts SET text = 'edited';");
    session(&mut pair, &mut stream, &[("items", "4", r#"{"name":"four"}"#)]);
    assert_same_data(&pair, "the core goes on");
}

#[test]
fn a_file_the_core_wrote_with_direct_tables_is_adopted_with_rows_and_queue() {
    let dir = TempDir::new("adopt-direct");
    // Both files written by the core 0.5.4; then ours is opened by oplite.
    let (pair, mut stream) = filled(&dir, open_core(&dir.join("ours.db")));
    let Pair { ours, theirs, .. } = pair;
    drop(ours);

    let ours = open_file(&dir.join("ours.db"), None);
    let objects = direct_objects(&ours);
    let version = schema_version(&ours);
    replace_schema(&ours);
    let mut pair = self::pair(ours, theirs);
    assert_eq!(direct_objects(&pair.ours), objects, "the direct tables are kept as the core wrote them");
    assert!(schema_version(&pair.ours) > version, "the JSON table becomes oplite's");
    assert_same_data(&pair, "adopted");

    pair.execute("DELETE FROM items WHERE id = '2'; UPDATE items SET name = 'uno' WHERE id = '1'; UPDATE drafts SET text = 'edited';");
    assert_same_data(&pair, "local writes after adoption");
    session(&mut pair, &mut stream, &[("items", "5", r#"{"name":"five","n":5}"#)]);
    assert_same_data(&pair, "syncing after adoption");
}
