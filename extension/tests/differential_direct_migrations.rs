//! `powersync_replace_schema` moving a table between the JSON form (a view;
//! oplite's typed data table) and a direct table, both ways, synced and
//! local-only, and changing a direct table's columns (ALTER TABLE, with a
//! resync for an added column, refused while a sync iteration is active),
//! compared with the reference core 0.5.4.

mod common;

use common::diff::{Arg, Checkpoints, Pair};
use common::schema::rows;
use serde_json::{json, Value};

fn table(direct: bool, local_only: bool, columns: &[&str]) -> Value {
    let columns: Vec<Value> = columns.iter().map(|c| json!({"name": c, "type": "text"})).collect();
    json!({"tables": [{"name": "items", "direct": direct, "local_only": local_only, "columns": columns}]})
}

fn assert_same_rows(pair: &Pair, what: &str) {
    for sql in ["SELECT * FROM items ORDER BY id", "SELECT type, id, data FROM ps_untyped ORDER BY 1, 2"] {
        assert_eq!(rows(&pair.ours, sql), rows(&pair.theirs, sql), "{sql}: {what}");
    }
    let objects = "SELECT type || ' ' || name FROM sqlite_master WHERE tbl_name = 'items' OR name LIKE 'ps_data%items' ORDER BY 1";
    let ours = common::schema::texts(&pair.ours, objects);
    let theirs = common::schema::texts(&pair.theirs, objects);
    let kinds = |list: &[String]| list.iter().filter(|o| o.starts_with("table items") || o.starts_with("view items")).cloned().collect::<Vec<_>>();
    assert_eq!(kinds(&ours), kinds(&theirs), "{what}");
}

fn with_rows(pair: &mut Pair) {
    pair.execute(
        "INSERT INTO items(id, a, b) VALUES ('1', 'x', 'y'); INSERT INTO items(id, a) VALUES ('2', 'only a');
         INSERT INTO items(id, b) VALUES ('3', json('{\"n\":1}'));
         DELETE FROM ps_crud; DELETE FROM ps_updated_rows;",
    );
}

#[test]
fn rows_move_both_ways_between_json_and_direct_tables() {
    for (from_local, to_local) in [(false, false), (true, true), (false, true), (true, false)] {
        for direct_first in [false, true] {
            let what = format!("local {from_local} -> {to_local}, direct first {direct_first}");
            let mut pair = Pair::new();
            pair.replace_schema(&table(direct_first, from_local, &["a", "b"]));
            with_rows(&mut pair);
            assert_same_rows(&pair, &what);
            pair.replace_schema(&table(!direct_first, to_local, &["a", "b"]));
            assert_same_rows(&pair, &what);
            // And back.
            pair.replace_schema(&table(direct_first, from_local, &["a", "b"]));
            assert_same_rows(&pair, &what);
            pair.execute("UPDATE items SET a = 'changed' WHERE id = '1'");
            pair.assert_same_tables();
        }
    }
}

#[test]
fn a_direct_table_switching_local_only_keeps_rows_as_the_reference() {
    for local_first in [false, true] {
        let mut pair = Pair::new();
        pair.replace_schema(&table(true, local_first, &["a", "b"]));
        with_rows(&mut pair);
        pair.replace_schema(&table(true, !local_first, &["a", "b"]));
        assert_same_rows(&pair, &format!("local first {local_first}"));
        pair.replace_schema(&table(true, local_first, &["a", "b"]));
        assert_same_rows(&pair, &format!("back, local first {local_first}"));
    }
}

#[test]
fn a_dropped_direct_table_keeps_synced_rows_in_ps_untyped() {
    let mut pair = Pair::new();
    pair.replace_schema(&table(true, false, &["a", "b"]));
    with_rows(&mut pair);
    pair.replace_schema(&json!({"tables": []}));
    let sql = "SELECT type, id, data FROM ps_untyped ORDER BY 1, 2";
    assert_eq!(rows(&pair.ours, sql), rows(&pair.theirs, sql));
    assert_eq!(rows(&pair.ours, sql).len(), 3);
    pair.replace_schema(&table(true, false, &["a"]));
    assert_same_rows(&pair, "back");
}

#[test]
fn changed_columns_alter_the_table_and_an_added_one_is_filled_by_a_resync() {
    for strategy in ["incremental", "from_scratch"] {
        let mut pair = Pair::new();
        pair.ours.query_row("SELECT oplite_sync_local_strategy(?1)", [strategy], |_| Ok(())).unwrap();
        let before = table(true, false, &["a", "b"]);
        pair.replace_schema(&before);
        pair.control("start", Arg::Text(&json!({"schema": before}).to_string()));
        let mut stream = Checkpoints::default();
        stream.send(&mut pair, &[("items", "1", r#"{"a":"x","b":"y","c":"z"}"#), ("items", "2", r#"{"c":"only c"}"#)]);
        pair.control("stop", Arg::Null);

        // Added "c", dropped "b".
        let after = table(true, false, &["a", "c"]);
        pair.replace_schema(&after);
        let objects = "SELECT sql FROM sqlite_master WHERE tbl_name = 'items' ORDER BY name";
        assert_eq!(common::schema::texts(&pair.ours, objects), common::schema::texts(&pair.theirs, objects));
        assert_same_rows(&pair, strategy);
        let unapplied = "SELECT name, last_applied_op FROM ps_buckets ORDER BY name";
        assert_eq!(rows(&pair.ours, unapplied), rows(&pair.theirs, unapplied), "a resync is due");

        // The next checkpoint applies everything again: "c" is filled.
        pair.control("start", Arg::Text(&json!({"schema": after}).to_string()));
        stream.send(&mut pair, &[("items", "3", r#"{"a":"new"}"#)]);
        assert_same_rows(&pair, strategy);
        assert_eq!(common::schema::texts(&pair.ours, "SELECT ifnull(c, 'NULL') FROM items ORDER BY id"), vec!["z", "only c", "NULL"]);
        pair.control("stop", Arg::Null);

        // Only a dropped column: no resync.
        pair.execute("UPDATE ps_buckets SET last_applied_op = last_op");
        pair.replace_schema(&table(true, false, &["c"]));
        assert_eq!(rows(&pair.ours, unapplied), rows(&pair.theirs, unapplied));
        assert_same_rows(&pair, strategy);
    }
}

#[test]
fn an_added_column_during_a_sync_iteration_fails_as_the_reference() {
    let mut pair = Pair::new();
    let before = table(true, false, &["a"]);
    pair.replace_schema(&before);
    pair.execute("INSERT INTO items(id, a) VALUES ('1', 'x'); DELETE FROM ps_crud;");
    pair.control("start", Arg::Text(&json!({"schema": before}).to_string()));
    let after = table(true, false, &["a", "b"]).to_string();
    let mut errors = Vec::new();
    for db in [&pair.ours, &pair.theirs] {
        db.execute_batch("BEGIN").unwrap();
        let err = db.query_row("SELECT powersync_replace_schema(?1)", [&after], |_| Ok(())).unwrap_err();
        db.execute_batch("ROLLBACK").unwrap();
        errors.push((common::error_code(&err), err.to_string()));
    }
    assert!(errors[1].1.contains("Cannot clear or trigger resync while a sync iteration is active."), "{errors:?}");
    assert!(errors[0].1.contains("Cannot clear or trigger resync while a sync iteration is active."), "{errors:?}");
    assert_eq!(errors[0].0, errors[1].0, "{errors:?}");
    assert_same_rows(&pair, "after the failed change");
    // A dropped column needs no resync, so it works during an iteration.
    pair.replace_schema(&table(true, false, &[]));
    assert_same_rows(&pair, "dropped column");
    pair.control("stop", Arg::Null);
}
