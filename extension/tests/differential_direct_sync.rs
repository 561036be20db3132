//! Synced rows into direct tables (core 0.5.4), compared with the
//! reference core 0.5.4, with each of oplite's sync_local strategies: the
//! upsert over the declared columns (undeclared fields dropped, values
//! bound as the reference binds them), deletes by id, the upload triggers
//! staying quiet during sync, and a direct or raw table of the schema
//! winning over a leftover `ps_data__` table of the same type; on JSON and
//! BSON lines.

mod common;

use common::diff::{Arg, Checkpoints, Pair};
use serde_json::{json, Value};

const STRATEGIES: &[&str] = &["incremental", "from_scratch"];

/// Each strategy, on JSON and on BSON lines.
fn variants() -> impl Iterator<Item = (&'static str, bool)> {
    STRATEGIES.iter().flat_map(|s| [(*s, false), (*s, true)])
}

fn schema() -> Value {
    json!({"tables": [
        {"name": "items", "direct": true, "include_old": true, "columns": [
            {"name": "a", "type": "text"}, {"name": "b", "type": "integer"}, {"name": "c", "type": "real"},
            {"name": "d", "type": "text"}, {"name": "e", "type": "integer"}, {"name": "o\u{f1}e", "type": "text"}]},
        {"name": "local_items", "direct": true, "local_only": true, "columns": [{"name": "a", "type": "text"}]},
        {"name": "bare", "direct": true, "columns": []}
    ]})
}

/// Every row of `table` with each value's storage class.
fn typed_rows(db: &rusqlite::Connection, table: &str) -> Vec<Vec<rusqlite::types::Value>> {
    common::schema::rows(db, &format!("SELECT * FROM \"{table}\" ORDER BY id"))
}

fn start(pair: &mut Pair, schema: &Value) {
    pair.control("start", Arg::Text(&json!({"schema": schema}).to_string()));
}

#[test]
fn synced_rows_land_in_direct_tables_as_with_the_reference() {
    let shapes = [
        r#"{"a":"plain","b":1,"c":2.5,"d":"x","e":true}"#,
        r#" { "a" : "spaced" , "b" : -0 , "c" : 1e3 ,"d":{ "k" : [ 1 , { "z" : "s p" } ] } } "#,
        r#"{"a":"esc \"q\" \\ \n \u00e9 \ud83d\ude00","b":9223372036854775807,"c":-1.5E-7}"#,
        r#"{"a":"big","b":9223372036854775808,"c":123456789012345678901234567890,"e":false}"#,
        r#"{"a":"tiny","c":4.9e-324,"d":[],"e":{}}"#,
        r#"{"a":12,"b":"13","c":"not a number","d":14.0,"e":"text"}"#,
        r#"{"b":null,"c":null,"extra":{"deep":[1,2,{"x":null}]},"more":"x"}"#,
        r#"{}"#,
        r#"{"a":"o\u00f1e","o\u00f1e":"unicode key","d":"\t tab escape"}"#,
    ];
    for (strategy, bson) in variants() {
        let mut pair = Pair::new();
        pair.ours.query_row("SELECT oplite_sync_local_strategy(?1)", [strategy], |_| Ok(())).unwrap();
        let schema = schema();
        pair.replace_schema(&schema);
        start(&mut pair, &schema);
        let mut stream = Checkpoints::encoded(bson);
        for round in 0..3 {
            let ids: Vec<String> = (0..shapes.len()).map(|i| format!("row{i}")).collect();
            let mut ops: Vec<(&str, &str, &str, Option<&str>)> = Vec::new();
            for (i, id) in ids.iter().enumerate() {
                ops.push(("PUT", "items", id, Some(shapes[(i + round) % shapes.len()])));
            }
            ops.push(("PUT", "bare", "b1", Some(r#"{"x":1}"#)));
            // Rows of a local-only direct table's type are not synced into it.
            ops.push(("PUT", "local_items", "l1", Some(r#"{"a":"from the server"}"#)));
            if round == 2 {
                ops.push(("REMOVE", "items", "row1", None));
                ops.push(("REMOVE", "bare", "b1", None));
            }
            stream.send_ops(&mut pair, &ops);
            for table in ["items", "local_items", "bare"] {
                assert_eq!(typed_rows(&pair.ours, table), typed_rows(&pair.theirs, table), "{table}, {strategy}, bson {bson}, round {round}");
            }
            pair.assert_same_tables();
        }
        let crud: i64 = pair.ours.query_row("SELECT count(*) FROM ps_crud", [], |r| r.get(0)).unwrap();
        assert_eq!(crud, 0, "sync writes queue nothing");
        pair.control("stop", Arg::Null);
    }
}

#[test]
fn local_writes_then_sync_agree() {
    for (strategy, bson) in variants() {
        let mut pair = Pair::new();
        pair.ours.query_row("SELECT oplite_sync_local_strategy(?1)", [strategy], |_| Ok(())).unwrap();
        let schema = schema();
        pair.replace_schema(&schema);
        pair.execute("INSERT INTO items(id, a, b) VALUES ('mine', 'local', 1); INSERT INTO local_items(id, a) VALUES ('l', 'x');");
        start(&mut pair, &schema);
        let mut stream = Checkpoints::encoded(bson);
        // Local data blocks the checkpoint until the upload is done.
        stream.send_ops(&mut pair, &[("PUT", "items", "mine", Some(r#"{"a":"server","b":2}"#)), ("PUT", "items", "s", Some(r#"{"a":"s"}"#))]);
        assert_eq!(typed_rows(&pair.ours, "items"), typed_rows(&pair.theirs, "items"), "{strategy}, bson {bson}");
        pair.execute("DELETE FROM ps_crud");
        stream.send_ops(&mut pair, &[("PUT", "items", "t", Some(r#"{"a":"t"}"#))]);
        assert_eq!(typed_rows(&pair.ours, "items"), typed_rows(&pair.theirs, "items"), "{strategy}, bson {bson}");
        pair.execute("UPDATE items SET b = 5 WHERE id = 's'; DELETE FROM items WHERE id = 't';");
        pair.assert_same_tables();
        pair.control("stop", Arg::Null);
    }
}

#[test]
fn the_schema_wins_over_a_leftover_data_table_of_the_same_type() {
    for (strategy, bson) in variants() {
        let mut pair = Pair::new();
        pair.ours.query_row("SELECT oplite_sync_local_strategy(?1)", [strategy], |_| Ok(())).unwrap();
        let schema = json!({"tables": [{"name": "items", "direct": true, "columns": [{"name": "a", "type": "text"}]}],
            "raw_tables": [{"name": "raws", "table_name": "raw_local"}]});
        pair.execute("CREATE TABLE raw_local(id TEXT PRIMARY KEY NOT NULL, a TEXT)");
        pair.replace_schema(&schema);
        pair.execute(
            "CREATE TABLE ps_data__items(id TEXT PRIMARY KEY NOT NULL, data TEXT);
             CREATE TABLE ps_data__raws(id TEXT PRIMARY KEY NOT NULL, data TEXT);",
        );
        start(&mut pair, &schema);
        let mut stream = Checkpoints::encoded(bson);
        stream.send_ops(&mut pair, &[("PUT", "items", "1", Some(r#"{"a":"x"}"#)), ("PUT", "raws", "2", Some(r#"{"a":"y"}"#))]);
        for sql in [
            "SELECT * FROM items ORDER BY id",
            "SELECT * FROM raw_local ORDER BY id",
            "SELECT * FROM ps_data__items ORDER BY id",
            "SELECT * FROM ps_data__raws ORDER BY id",
        ] {
            assert_eq!(common::schema::rows(&pair.ours, sql), common::schema::rows(&pair.theirs, sql), "{sql}, {strategy}, bson {bson}");
        }
        assert_eq!(common::schema::texts(&pair.ours, "SELECT a FROM items"), vec!["x"]);
        assert_eq!(common::schema::texts(&pair.ours, "SELECT a FROM raw_local"), vec!["y"]);
        stream.send_ops(&mut pair, &[("REMOVE", "items", "1", None), ("REMOVE", "raws", "2", None)]);
        assert!(common::schema::texts(&pair.ours, "SELECT a FROM items").is_empty());
        assert!(common::schema::texts(&pair.ours, "SELECT a FROM raw_local").is_empty());
        pair.control("stop", Arg::Null);
    }
}
