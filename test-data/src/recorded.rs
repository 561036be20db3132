//! Recorded streams: small, readable sessions kept as files under
//! `test-data/recorded/<name>/` with the tables a client must end with.
//!
//! - `stream.ndjson`: the lines the service sends, one JSON object a line.
//! - `schema.json`: the app schema for `powersync_replace_schema`.
//! - `expected.json`: the final rows per table, `{"table": [{"id", ...}]}`,
//!   ordered by id.
//!
//! The files are written from the definitions here; a test compares them
//! and `OPLITE_REFRESH_GOLDEN=1 cargo test -p oplite-test-data` rewrites
//! them. [`expected_tables`] derives final rows from any stream with the
//! protocol's rule alone (the newest PUT across buckets wins), so it is an
//! oracle independent of the client under test.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

use crate::server::{ServerBucket, ServerOp};

/// The todo-list example of the README: two lists, a handful of todos,
/// three buckets; one todo is updated, one removed, one list is held by two
/// buckets with different versions, and one op is a MOVE.
pub fn todo_list_lines() -> Vec<Value> {
    fn put(op_id: u32, t: &str, id: &str, data: Value) -> Value {
        json!({"op_id": op_id.to_string(), "op": "PUT", "object_type": t, "object_id": id,
               "checksum": op_checksum(op_id), "data": data.to_string()})
    }
    fn remove(op_id: u32, t: &str, id: &str) -> Value {
        json!({"op_id": op_id.to_string(), "op": "REMOVE", "object_type": t, "object_id": id,
               "checksum": op_checksum(op_id)})
    }
    fn moved(op_id: u32) -> Value {
        json!({"op_id": op_id.to_string(), "op": "MOVE", "checksum": op_checksum(op_id)})
    }
    let lists = vec![
        put(1, "lists", "l1", json!({"name": "Groceries", "owner_id": "u1"})),
        put(2, "lists", "l2", json!({"name": "Work", "owner_id": "u1"})),
    ];
    let todos_page1 = vec![
        put(3, "todos", "t1", json!({"list_id": "l1", "description": "Milk", "completed": 0})),
        put(4, "todos", "t2", json!({"list_id": "l1", "description": "Bread", "completed": 0})),
        put(5, "todos", "t3", json!({"list_id": "l2", "description": "Expenses", "completed": 0})),
    ];
    let todos_page2 = vec![
        put(6, "todos", "t4", json!({"list_id": "l2", "description": "Slides", "completed": 0})),
        put(7, "todos", "t2", json!({"list_id": "l1", "description": "Bread", "completed": 1})),
        remove(8, "todos", "t3"),
        moved(9),
    ];
    let shared = vec![
        put(10, "lists", "l2", json!({"name": "Work (shared)", "owner_id": "u2"})),
        put(11, "todos", "t5", json!({"list_id": "l2", "description": "Review", "completed": 0})),
    ];
    let sum = |ops: &[&Vec<Value>]| -> u32 {
        ops.iter().flat_map(|v| v.iter()).fold(0u32, |s, op| s.wrapping_add(op["checksum"].as_u64().unwrap() as u32))
    };
    let count = |ops: &[&Vec<Value>]| ops.iter().map(|v| v.len()).sum::<usize>();
    vec![
        json!({"token_expires_in": 3600}),
        json!({"checkpoint": {"last_op_id": "11", "write_checkpoint": null, "buckets": [
            {"bucket": "user_lists", "checksum": sum(&[&lists]), "priority": 3, "count": count(&[&lists])},
            {"bucket": "user_todos", "checksum": sum(&[&todos_page1, &todos_page2]), "priority": 3,
             "count": count(&[&todos_page1, &todos_page2])},
            {"bucket": "shared", "checksum": sum(&[&shared]), "priority": 1, "count": count(&[&shared])},
        ]}}),
        json!({"data": {"bucket": "shared", "has_more": false, "after": "0", "next_after": "11", "data": shared}}),
        json!({"partial_checkpoint_complete": {"last_op_id": "11", "priority": 1}}),
        json!({"data": {"bucket": "user_lists", "has_more": false, "after": "0", "next_after": "2", "data": lists}}),
        json!({"data": {"bucket": "user_todos", "has_more": true, "after": "0", "next_after": "5", "data": todos_page1}}),
        json!({"data": {"bucket": "user_todos", "has_more": false, "after": "5", "next_after": "9", "data": todos_page2}}),
        json!({"checkpoint_complete": {"last_op_id": "11"}}),
    ]
}

/// The app schema of the todo-list example.
pub fn todo_list_schema() -> Value {
    json!({"tables": [
        {"name": "lists", "columns": [
            {"name": "name", "type": "text"},
            {"name": "owner_id", "type": "text"},
        ]},
        {"name": "todos", "columns": [
            {"name": "list_id", "type": "text"},
            {"name": "description", "type": "text"},
            {"name": "completed", "type": "integer"},
        ]},
    ]})
}

/// Checksums of the recorded examples: small numbers that still exercise
/// the u32 sum.
fn op_checksum(op_id: u32) -> u32 {
    op_id.wrapping_mul(2_654_435_761) >> 8
}

/// Parses newline-delimited JSON (blank lines skipped).
pub fn parse_ndjson(text: &str) -> Result<Vec<Value>, serde_json::Error> {
    text.lines().filter(|l| !l.trim().is_empty()).map(serde_json::from_str).collect()
}

/// Writes lines as newline-delimited JSON.
pub fn to_ndjson(lines: &[Value]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn op_from_json(op: &Value) -> Option<ServerOp> {
    let kind = match op["op"].as_str()? {
        "PUT" => "PUT",
        "REMOVE" => "REMOVE",
        "MOVE" => "MOVE",
        "CLEAR" => "CLEAR",
        _ => return None,
    };
    let text = |k: &str| op.get(k).and_then(Value::as_str).map(str::to_owned);
    Some(ServerOp {
        op_id: op["op_id"].as_str()?.parse().ok()?,
        op: kind,
        object_type: text("object_type"),
        object_id: text("object_id"),
        subkey: text("subkey"),
        checksum: op["checksum"].as_i64().map(|c| c as u32).or_else(|| op["checksum"].as_f64().map(|c| c as i64 as u32))?,
        data: text("data"),
    })
}

/// The buckets a recorded stream describes: names and priorities from its
/// checkpoints, ops from its data lines. A service can serve them again
/// (to any `after`).
pub fn buckets_from_lines(lines: &[Value]) -> Vec<ServerBucket> {
    let mut buckets: Vec<ServerBucket> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut bucket = |name: &str, priority: Option<i32>, buckets: &mut Vec<ServerBucket>| -> usize {
        let i = *index.entry(name.to_owned()).or_insert_with(|| {
            buckets.push(ServerBucket { name: name.to_owned(), priority: 3, ops: Vec::new() });
            buckets.len() - 1
        });
        if let Some(p) = priority {
            buckets[i].priority = p;
        }
        i
    };
    for line in lines {
        if let Some(entries) = line["checkpoint"]["buckets"].as_array() {
            for e in entries {
                if let Some(name) = e["bucket"].as_str() {
                    bucket(name, Some(e["priority"].as_i64().unwrap_or(3) as i32), &mut buckets);
                }
            }
        }
        if let Some(name) = line["data"]["bucket"].as_str() {
            let i = bucket(name, None, &mut buckets);
            for op in line["data"]["data"].as_array().into_iter().flatten() {
                if let Some(op) = op_from_json(op) {
                    if op.op == "CLEAR" {
                        buckets[i].ops.clear();
                    }
                    buckets[i].ops.push(op);
                }
            }
        }
    }
    buckets
}

/// The rows a client ends with after applying everything in `buckets`, by
/// the protocol's rule: per bucket the last op for a key stands (a REMOVE
/// drops it, a CLEAR drops all before it); a row is the data of the newest
/// PUT (highest op id) over every bucket holding one. Result: table → id →
/// row object (with `id` added first), sorted.
pub fn expected_tables(buckets: &[ServerBucket]) -> BTreeMap<String, BTreeMap<String, Value>> {
    // (type, id) -> (op_id, data)
    let mut newest: HashMap<(String, String), (i64, Option<String>)> = HashMap::new();
    for bucket in buckets {
        let mut current: HashMap<(String, String, Option<String>), &ServerOp> = HashMap::new();
        for op in &bucket.ops {
            match op.op {
                "PUT" | "REMOVE" => {
                    let (Some(t), Some(id)) = (&op.object_type, &op.object_id) else { continue };
                    let key = (t.clone(), id.clone(), op.subkey.clone());
                    if op.op == "PUT" {
                        current.insert(key, op);
                    } else {
                        current.remove(&key);
                    }
                }
                "CLEAR" => current.clear(),
                _ => {}
            }
        }
        for ((t, id, _), op) in current {
            let entry = newest.entry((t, id)).or_insert((i64::MIN, None));
            if op.op_id > entry.0 {
                *entry = (op.op_id, op.data.clone());
            }
        }
    }
    let mut tables: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
    for ((t, id), (_, data)) in newest {
        let mut row = serde_json::Map::new();
        row.insert("id".into(), Value::String(id.clone()));
        if let Some(Value::Object(fields)) = data.as_deref().and_then(|d| serde_json::from_str(d).ok()) {
            for (k, v) in fields {
                if k != "id" {
                    row.insert(k, v);
                }
            }
        }
        tables.entry(t).or_default().insert(id, Value::Object(row));
    }
    tables
}

/// [`expected_tables`] as the JSON of `expected.json`: table → rows by id.
pub fn expected_json(buckets: &[ServerBucket]) -> Value {
    let tables = expected_tables(buckets);
    Value::Object(
        tables
            .into_iter()
            .map(|(t, rows)| (t, Value::Array(rows.into_values().collect())))
            .collect(),
    )
}

/// The directory of the recorded streams (`test-data/recorded`).
pub fn recorded_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recorded")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The files under `recorded/todo-list` are what the definitions say;
    /// `OPLITE_REFRESH_GOLDEN=1` rewrites them.
    #[test]
    fn todo_list_files_are_current() {
        let dir = recorded_dir().join("todo-list");
        let lines = todo_list_lines();
        let files = [
            ("stream.ndjson", to_ndjson(&lines)),
            ("schema.json", format!("{:#}\n", todo_list_schema())),
            ("expected.json", format!("{:#}\n", expected_json(&buckets_from_lines(&lines)))),
        ];
        let refresh = std::env::var_os("OPLITE_REFRESH_GOLDEN").is_some();
        for (name, content) in files {
            let path = dir.join(name);
            if refresh {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &content).unwrap();
            }
            let on_disk = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e} (OPLITE_REFRESH_GOLDEN=1 writes it)", path.display()));
            assert_eq!(on_disk, content, "{} is stale; rerun with OPLITE_REFRESH_GOLDEN=1", path.display());
        }
    }

    #[test]
    fn todo_list_expected_rows() {
        let tables = expected_tables(&buckets_from_lines(&todo_list_lines()));
        let todos: Vec<&String> = tables["todos"].keys().collect();
        assert_eq!(todos, ["t1", "t2", "t4", "t5"]);
        assert_eq!(tables["todos"]["t2"]["completed"], 1);
        assert_eq!(tables["lists"]["l2"]["name"], "Work (shared)");
    }

    #[test]
    fn checkpoint_checksums_match_the_ops() {
        let lines = todo_list_lines();
        let buckets = buckets_from_lines(&lines);
        let checkpoint = lines.iter().find_map(|l| l.get("checkpoint")).unwrap();
        for entry in checkpoint["buckets"].as_array().unwrap() {
            let bucket = buckets.iter().find(|b| b.name == entry["bucket"]).unwrap();
            assert_eq!(entry["checksum"].as_u64().unwrap() as u32, bucket.checksum());
            assert_eq!(entry["count"].as_u64().unwrap() as usize, bucket.ops.len());
        }
    }
}
