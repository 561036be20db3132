//! The `two-tables` dataset: an app-shaped stream for the SDK drop-in test
//! (`clients/node`), where the benchmark shape has a single table.
//!
//! `lists` (one row per 100 rows) and `todos` (the rest) in explicit buckets:
//! `lists` and four `todos{k}` buckets. Every row is a deterministic function
//! of its index, so two runs against fresh services see the same data.

use oplite_test_data::server::{ServerBucket, ServerOp};
use serde_json::json;

/// Buckets holding `rows` rows in total, one PUT op each.
pub fn buckets(rows: u64) -> Vec<ServerBucket> {
    let list_count = (rows / 100).max(1).min(rows);
    let mut lists = ServerBucket { name: "lists".into(), priority: 3, ops: Vec::new() };
    let mut todos: Vec<ServerBucket> =
        (0..4).map(|k| ServerBucket { name: format!("todos{k}"), priority: 3, ops: Vec::new() }).collect();
    for i in 0..rows {
        let op_id = i as i64 + 1;
        let checksum = (op_id as u64).wrapping_mul(0x2545_F491) as u32;
        let (bucket, row_type, id, data) = if i < list_count {
            let data = json!({"name": format!("List {i}"), "created_at": format!("2026-01-01T00:00:{:02}Z", i % 60)});
            (&mut lists, "lists", format!("list{i}"), data)
        } else {
            let t = i - list_count;
            let data = json!({
                "list_id": format!("list{}", t % list_count),
                "description": format!("Todo {t}"),
                "done": t.is_multiple_of(7) as i64,
            });
            (&mut todos[(t % 4) as usize], "todos", format!("todo{t}"), data)
        };
        bucket.ops.push(ServerOp {
            op_id,
            op: "PUT",
            object_type: Some(row_type.into()),
            object_id: Some(id),
            subkey: None,
            checksum,
            data: Some(data.to_string()),
        });
    }
    std::iter::once(lists).chain(todos).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_split_into_lists_and_todos() {
        let buckets = buckets(1000);
        assert_eq!(buckets.len(), 5);
        assert_eq!(buckets[0].ops.len(), 10);
        assert_eq!(buckets.iter().map(|b| b.ops.len()).sum::<usize>(), 1000);
        let first_todo = &buckets[1].ops[0];
        assert_eq!(first_todo.object_id.as_deref(), Some("todo0"));
        assert_eq!(first_todo.data.as_deref(), Some(r#"{"description":"Todo 0","done":1,"list_id":"list0"}"#));
        // Op ids are unique and increasing within each bucket.
        for bucket in &buckets {
            assert!(bucket.ops.windows(2).all(|w| w[0].op_id < w[1].op_id));
        }
    }
}
