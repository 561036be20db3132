//! Differential tests of the `data` contract of data tables: what apps that
//! hang their own triggers on `ps_data__<table>` see, against the reference
//! core.
//!
//! - The SDKs' diff-trigger pattern (`db.triggers.createDiffTrigger`): AFTER
//!   INSERT / UPDATE / DELETE triggers on the data tables logging NEW.data
//!   and OLD.data, with `recursive_triggers` ON as the SDKs set it, through
//!   an initial sync, synced updates and removals, local writes through the
//!   views and a schema change; the logs must be the same.
//! - PowerSync's full-text-search recipe: an FTS5 table filled from
//!   `json_extract(data, ...)` and kept up by triggers on the data table.
//! - A table of 1999 declared columns (the reference's limit), synced and
//!   written through its view.
mod common;

use common::diff::{rows, Arg, Pair};
use common::lines::op;
use serde_json::{json, Value};

/// Sends a checkpoint holding ops 1..=last of bucket `b` with `ops` as the
/// new ones (and the write checkpoint, after an upload), and completes it.
fn sync(pair: &mut Pair, write_checkpoint: Option<u32>, ops: Vec<Value>) {
    let last: u32 = ops.iter().map(|o| o["op_id"].as_str().unwrap().parse::<u32>().unwrap()).max().unwrap();
    let checksum: u32 = (1..=last).sum();
    let mut checkpoint =
        json!({"checkpoint": {"last_op_id": last.to_string(), "buckets": [{"bucket": "b", "checksum": checksum, "priority": 3}]}});
    if let Some(id) = write_checkpoint {
        checkpoint["checkpoint"]["write_checkpoint"] = id.to_string().into();
    }
    pair.control("line_text", Arg::Text(&checkpoint.to_string()));
    pair.control("line_text", Arg::Text(&json!({"data": {"bucket": "b", "data": ops}}).to_string()));
    pair.control("line_text", Arg::Text(&json!({"checkpoint_complete": {"last_op_id": last.to_string()}}).to_string()));
}

/// Uploads (clears) the local writes so the next checkpoint applies.
fn upload(pair: &mut Pair, request_id: u32) {
    pair.execute("DELETE FROM ps_crud");
    pair.control("target_checkpoint_request_id", Arg::Text(&request_id.to_string()));
}

/// The diff triggers the SDK's TriggerManager creates (TEMP ones unless
/// it is asked to keep them), logging into `diff_log`.
fn diff_triggers(table: &str, temp: bool) -> String {
    let temp = if temp { "TEMP " } else { "" };
    format!(
        "CREATE {temp}TRIGGER \"log_insert_{table}\" AFTER INSERT ON \"{table}\" BEGIN
           INSERT INTO diff_log(tbl, op, id, new_data, old_data, name) VALUES ('{table}', 'INSERT', NEW.id, NEW.data, NULL, json_extract(NEW.data, '$.name'));
         END;
         CREATE {temp}TRIGGER \"log_update_{table}\" AFTER UPDATE ON \"{table}\" BEGIN
           INSERT INTO diff_log(tbl, op, id, new_data, old_data, name) VALUES ('{table}', 'UPDATE', NEW.id, NEW.data, OLD.data, json_extract(NEW.data, '$.name'));
         END;
         CREATE {temp}TRIGGER \"log_delete_{table}\" AFTER DELETE ON \"{table}\" BEGIN
           INSERT INTO diff_log(tbl, op, id, new_data, old_data, name) VALUES ('{table}', 'DELETE', OLD.id, NULL, OLD.data, json_extract(OLD.data, '$.name'));
         END;"
    )
}

/// `score` goes in the second schema: its values become undeclared
/// fields (after the declared ones, so the texts stay the reference's).
/// An added column would differ instead: oplite renders it `null` in rows
/// stored before, the reference's text lacks it.
fn schema(with_score: bool) -> Value {
    let mut items = vec![json!({"name": "name", "type": "text"}), json!({"name": "n", "type": "integer"})];
    if with_score {
        items.push(json!({"name": "score", "type": "real"}));
    }
    json!({"tables": [
        {"name": "items", "columns": items},
        {"name": "drafts", "local_only": true, "columns": [{"name": "name", "type": "text"}, {"name": "n", "type": "integer"}]}
    ]})
}

#[test]
fn diff_triggers_see_what_they_see_on_the_reference() {
    let mut pair = Pair::new();
    pair.replace_schema(&schema(true));
    pair.execute("PRAGMA recursive_triggers = ON");
    pair.execute("CREATE TABLE diff_log(seq INTEGER PRIMARY KEY, tbl, op, id, new_data, old_data, name)");
    pair.execute(&diff_triggers("ps_data__items", true));
    pair.execute(&diff_triggers("ps_data_local__drafts", false));
    pair.extra_queries.push(("diff_log".into(), "SELECT * FROM diff_log ORDER BY seq".into()));
    pair.extra_queries.push(("ps_data__items".into(), "SELECT id, data FROM ps_data__items ORDER BY id".into()));
    pair.extra_queries.push(("ps_data_local__drafts".into(), "SELECT id, data FROM ps_data_local__drafts ORDER BY id".into()));

    pair.control("start", Arg::Null);
    // Initial sync: declared keys in schema order, a null, undeclared keys
    // (one null) after them, numbers of each kind.
    sync(
        &mut pair,
        None,
        vec![
            op(1, "items", "i1", Some(r#"{"name":"one","n":1,"score":1.5}"#)),
            op(2, "items", "i2", Some(r#"{"name":"two","n":null,"score":2.0,"extra":"x","more":null}"#)),
            op(3, "items", "i3", Some(r#"{"name":"it's \"quoted\"","n":-3,"score":0.25,"nested":{"a":[1,2]}}"#)),
            op(4, "unknown", "u1", Some(r#"{"name":"untyped"}"#)),
        ],
    );
    // Synced updates (one to the same data) and a removal.
    sync(
        &mut pair,
        None,
        vec![
            op(5, "items", "i1", Some(r#"{"name":"one, again","n":10,"score":1.5}"#)),
            op(6, "items", "i2", Some(r#"{"name":"two","n":null,"score":2.0,"extra":"x","more":null}"#)),
            op(7, "items", "i3", None),
        ],
    );
    // Local writes through the views, synced and local-only.
    pair.execute(
        "BEGIN;
         INSERT INTO items(id, name, n, score) VALUES ('l1', 'local', 5, NULL);
         UPDATE items SET name = 'edited', score = 3 WHERE id = 'i2';
         DELETE FROM items WHERE id = 'i1';
         INSERT INTO drafts(id, name, n) VALUES ('d1', 'draft', 1), ('d2', NULL, 2.5);
         UPDATE drafts SET n = n + 1;
         DELETE FROM drafts WHERE id = 'd2';
         COMMIT;",
    );
    upload(&mut pair, 1);
    // The schema loses a column (the triggers survive it in both); the
    // server confirms the local row and changes others.
    pair.replace_schema(&schema(false));
    sync(
        &mut pair,
        Some(1),
        vec![
            op(8, "items", "l1", Some(r#"{"name":"local","n":5,"score":null}"#)),
            op(9, "items", "i4", Some(r#"{"name":"four","n":4,"score":4.5}"#)),
            op(10, "items", "i2", None),
        ],
    );
    let log = rows(&pair.ours, "SELECT op FROM diff_log");
    assert!(log.len() > 15, "the triggers fired: {log:?}");
    assert!(log.iter().any(|op| op.contains("UPDATE")) && log.iter().any(|op| op.contains("DELETE")));
}

/// A PUT of a `todos` row.
fn todo(op_id: u32, id: &str, description: &str) -> Value {
    op(op_id, "todos", id, Some(&json!({"description": description, "done": 0}).to_string()))
}

/// PowerSync's full-text-search guide, on both cores.
#[test]
fn full_text_search_recipe_keeps_the_index_in_step() {
    let mut pair = Pair::new();
    pair.replace_schema(&json!({"tables": [{"name": "todos", "columns": [{"name": "description", "type": "text"}, {"name": "done", "type": "integer"}]}]}));
    pair.execute("PRAGMA recursive_triggers = ON");
    pair.control("start", Arg::Null);
    sync(&mut pair, None, vec![todo(1, "t1", "buy fresh milk"), todo(2, "t2", "walk the dog")]);
    // The recipe: a table, existing rows copied, three triggers.
    pair.execute(
        "CREATE VIRTUAL TABLE fts_todos USING fts5(id UNINDEXED, description, tokenize='porter unicode61');
         INSERT INTO fts_todos(rowid, id, description) SELECT rowid, id, json_extract(data, '$.description') FROM ps_data__todos;
         CREATE TRIGGER fts_insert_trigger_todos AFTER INSERT ON ps_data__todos BEGIN
           INSERT INTO fts_todos(rowid, id, description) VALUES (NEW.rowid, NEW.id, json_extract(NEW.data, '$.description'));
         END;
         CREATE TRIGGER fts_update_trigger_todos AFTER UPDATE ON ps_data__todos BEGIN
           UPDATE fts_todos SET description = json_extract(NEW.data, '$.description') WHERE rowid = NEW.rowid;
         END;
         CREATE TRIGGER fts_delete_trigger_todos AFTER DELETE ON ps_data__todos BEGIN
           DELETE FROM fts_todos WHERE rowid = OLD.rowid;
         END;",
    );
    let index = "SELECT id, description FROM fts_todos ORDER BY id";
    pair.extra_queries.push(("fts_todos".into(), index.into()));
    pair.extra_queries.push(("milk".into(), "SELECT id FROM fts_todos WHERE fts_todos MATCH 'milk' ORDER BY id".into()));
    sync(&mut pair, None, vec![todo(3, "t1", "buy oat milk"), todo(4, "t3", "milk the cows"), op(5, "todos", "t2", None)]);
    pair.execute(
        "BEGIN;
         INSERT INTO todos(id, description, done) VALUES ('l1', 'pour the milk', 0);
         UPDATE todos SET description = 'buy bread' WHERE id = 't1';
         DELETE FROM todos WHERE id = 't3';
         COMMIT;",
    );
    upload(&mut pair, 1);
    sync(&mut pair, Some(1), vec![todo(6, "l1", "pour the milk"), todo(7, "t4", "more milk")]);
    for db in [&pair.ours, &pair.theirs] {
        assert_eq!(rows(db, index), rows(db, "SELECT id, description FROM todos ORDER BY id"));
        // t1 and t3 are the server's again: the local edits were not
        // confirmed by the checkpoint.
        let milk = ["Text(\"l1\")", "Text(\"t1\")", "Text(\"t3\")", "Text(\"t4\")"];
        assert_eq!(rows(db, "SELECT id FROM fts_todos WHERE fts_todos MATCH 'milk' ORDER BY id"), milk);
    }
}

/// 1999 declared columns: more than a typed table can hold next to id,
/// the undeclared fields and `data`, so oplite keeps the table in the JSON
/// layout; 1997 still fit.
#[test]
fn tables_too_wide_for_typed_storage_use_the_json_layout() {
    let columns = |n: usize| -> Vec<Value> { (0..n).map(|i| json!({"name": format!("c{i}"), "type": "text"})).collect() };
    let mut pair = Pair::new();
    // A column named `data` would hide the row's JSON: JSON layout too.
    let named_data = json!({"name": "named", "columns": [{"name": "data", "type": "text"}, {"name": "b", "type": "integer"}]});
    pair.replace_schema(&json!({"tables": [{"name": "wide", "columns": columns(1999)}, {"name": "fits", "columns": columns(1997)}, named_data]}));
    pair.extra_queries.push(("ps_data__named".into(), "SELECT id, data FROM ps_data__named ORDER BY id".into()));
    pair.extra_queries.push(("ps_data__wide".into(), "SELECT id, data FROM ps_data__wide ORDER BY id".into()));
    pair.extra_queries.push(("ps_data__fits".into(), "SELECT id, data FROM ps_data__fits ORDER BY id".into()));
    let typed = |table: &str| -> bool {
        pair.ours
            .query_row("SELECT count(*) FROM pragma_table_info(?1) WHERE name = 'ps_undeclared'", [table], |r| r.get::<_, i64>(0))
            .unwrap()
            == 1
    };
    assert!(!typed("ps_data__wide"));
    assert!(typed("ps_data__fits"));
    assert!(!typed("ps_data__named"));

    pair.control("start", Arg::Null);
    let row = |n: usize, value: &str| -> String {
        let fields: Vec<String> = (0..n).map(|i| format!("\"c{i}\":\"{value}{i}\"")).collect();
        format!("{{{}}}", fields.join(","))
    };
    sync(
        &mut pair,
        None,
        vec![op(1, "wide", "w1", Some(&row(1999, "v"))), op(2, "fits", "f1", Some(&row(1997, "v"))), op(3, "named", "n1", Some(r#"{"data":"d","b":1}"#))],
    );
    pair.execute(
        "BEGIN;
         INSERT INTO wide(id, c0, c1998) VALUES ('w2', 'first', 'last');
         UPDATE wide SET c1000 = 'changed' WHERE id = 'w1';
         INSERT INTO fits(id, c0, c1996) VALUES ('f2', 'first', 'last');
         UPDATE fits SET c1000 = 'changed' WHERE id = 'f1';
         INSERT INTO named(id, data, b) VALUES ('n2', 'e', 2);
         COMMIT;",
    );
    let last: String = pair.ours.query_row("SELECT c1998 FROM wide WHERE id = 'w2'", [], |r| r.get(0)).unwrap();
    assert_eq!(last, "last");
}

/// `data` is generated in typed tables: writing it directly fails with
/// SQLite's own error (the reference core accepts it); the view is the way
/// to write. JSON-layout tables take direct writes as the reference does.
#[test]
fn direct_writes_to_data_fail_in_typed_tables() {
    let mut pair = Pair::new();
    pair.replace_schema(&json!({"tables": [
        {"name": "items", "columns": [{"name": "name", "type": "text"}]},
        {"name": "kept", "oplite_json_storage": true, "columns": [{"name": "name", "type": "text"}]}
    ]}));
    let insert = pair.ours.execute("INSERT INTO ps_data__items(id, data) VALUES ('a', '{\"name\":\"x\"}')", []).unwrap_err();
    assert!(insert.to_string().contains("cannot INSERT into generated column \"data\""), "{insert}");
    pair.ours.execute("INSERT INTO items(id, name) VALUES ('a', 'x')", []).unwrap();
    let update = pair.ours.execute("UPDATE ps_data__items SET data = '{}'", []).unwrap_err();
    assert!(update.to_string().contains("cannot UPDATE generated column \"data\""), "{update}");
    pair.theirs.execute("INSERT INTO ps_data__items(id, data) VALUES ('a', '{\"name\":\"x\"}')", []).unwrap();
    for db in [&pair.ours, &pair.theirs] {
        db.execute("INSERT INTO ps_data__kept(id, data) VALUES ('k', '{\"name\":\"y\"}')", []).unwrap();
    }
    let kept = "SELECT id, data FROM ps_data__kept";
    assert_eq!(rows(&pair.ours, kept), rows(&pair.theirs, kept));
    assert_eq!(rows(&pair.ours, "SELECT id, name FROM kept"), ["Text(\"k\")|Text(\"y\")"]);
}

/// A typed table from before the `data` column gains it at the next
/// `powersync_replace_schema` (the SDKs call it on every open); the same
/// schema again runs no DDL; the app's triggers and indexes on the data
/// table survive the column being rebuilt for a schema change.
#[test]
fn existing_tables_gain_the_column_and_app_objects_survive_changes() {
    let db = common::oplite_initialised();
    let schema = |columns: &str| format!(r#"{{"tables":[{{"name":"items","columns":[{columns}]}}]}}"#);
    let one = schema(r#"{"name":"name","type":"text"}"#);
    let replace = |json: &str| db.query_row("SELECT powersync_replace_schema(?1)", [json], |_| Ok(())).unwrap();
    let version = || -> i64 { db.query_row("PRAGMA schema_version", [], |r| r.get(0)).unwrap() };
    db.execute_batch("BEGIN").unwrap();
    replace(&one);
    db.execute_batch("INSERT INTO items(id, name) VALUES ('a', 'x'); ALTER TABLE ps_data__items DROP COLUMN data").unwrap();
    replace(&one);
    let data = |id: &str| -> String { db.query_row("SELECT data FROM ps_data__items WHERE id = ?1", [id], |r| r.get(0)).unwrap() };
    assert_eq!(data("a"), r#"{"name":"x"}"#);
    let before = version();
    replace(&one);
    assert_eq!(version(), before, "an identical schema runs no DDL");

    db.execute_batch(
        "CREATE TABLE seen(id, data);
         CREATE TRIGGER app_seen AFTER INSERT ON ps_data__items BEGIN INSERT INTO seen VALUES (NEW.id, NEW.data); END;
         CREATE INDEX app_by_name ON ps_data__items(json_extract(data, '$.name'));",
    )
    .unwrap();
    replace(&schema(r#"{"name":"name","type":"text"},{"name":"n","type":"integer"}"#));
    db.execute_batch("INSERT INTO items(id, name, n) VALUES ('b', 'y', 2)").unwrap();
    assert_eq!(data("b"), r#"{"name":"y","n":2}"#);
    let seen: String = db.query_row("SELECT data FROM seen WHERE id = 'b'", [], |r| r.get(0)).unwrap();
    assert_eq!(seen, r#"{"name":"y","n":2}"#);
    let index: i64 = db.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'app_by_name'", [], |r| r.get(0)).unwrap();
    assert_eq!(index, 1);
    // Removing the column keeps its values (as undeclared fields, null too).
    replace(&one);
    assert_eq!(data("b"), r#"{"name":"y","n":2}"#);
    assert_eq!(data("a"), r#"{"name":"x","n":null}"#);
    db.execute_batch("COMMIT").unwrap();
}

/// An app's index on `json_extract(data, ...)` is kept right by the sync
/// apply (which renders `data` for rows it writes only while something can
/// read it) and answers as on the reference.
#[test]
fn app_indexes_on_data_stay_right_through_syncs() {
    let mut pair = Pair::new();
    pair.replace_schema(&json!({"tables": [{"name": "todos", "columns": [{"name": "description", "type": "text"}, {"name": "done", "type": "integer"}]}]}));
    pair.control("start", Arg::Null);
    sync(&mut pair, None, vec![todo(1, "t1", "a"), todo(2, "t2", "b")]);
    pair.execute("CREATE INDEX app_by_description ON ps_data__todos(json_extract(data, '$.description'))");
    let query = "SELECT id FROM ps_data__todos INDEXED BY app_by_description WHERE json_extract(data, '$.description') = 'b' ORDER BY id";
    pair.extra_queries.push(("by description".into(), query.into()));
    sync(&mut pair, None, vec![todo(3, "t3", "b"), todo(4, "t1", "b"), op(5, "todos", "t2", None)]);
    assert_eq!(rows(&pair.ours, query), ["Text(\"t1\")", "Text(\"t3\")"]);
    pair.execute("PRAGMA integrity_check");
}
