//! Golden traces: hand-written sessions under test-data/golden/<case>/,
//! each a calls.jsonl of powersync_control calls and SQL, and the answers of
//! the reference core 0.5.4 in expected.jsonl. Both cores are run: the
//! reference must still give expected.jsonl (so the file is the reference's
//! word, not oplite's), and oplite must give it too, but for the words of
//! error messages, where only the code and the function named in front are
//! compared (docs/differences.md, "The sync engine"). Refresh from the
//! reference with `OPLITE_UPDATE_GOLDEN=1 cargo test-ext --test golden` and
//! review the diff.
mod common;

use std::path::PathBuf;

use rusqlite::types::Value as SqlValue;
use serde_json::{json, Value};

fn sql_json(value: SqlValue) -> Value {
    match value {
        SqlValue::Null => Value::Null,
        SqlValue::Integer(i) => json!(i),
        SqlValue::Real(r) => json!(r),
        SqlValue::Text(t) => json!(t),
        SqlValue::Blob(b) => json!(format!("<{} bytes>", b.len())),
    }
}

fn run(db: &rusqlite::Connection, calls: &str) -> Vec<String> {
    db.execute_batch("UPDATE ps_kv SET value = '00000000-0000-4000-8000-000000000000' WHERE key = 'client_id'")
        .unwrap();
    let mut out = Vec::new();
    for line in calls.lines().filter(|l| !l.trim().is_empty()) {
        let call: Value = serde_json::from_str(line).unwrap();
        let result = if let Some(sql) = call["sql"].as_str() {
            if sql.trim_start().to_uppercase().starts_with("SELECT") {
                let mut stmt = db.prepare(sql).unwrap();
                let n = stmt.column_count();
                let rows: Vec<Value> = stmt
                    .query_map([], |r| Ok(Value::Array((0..n).map(|i| sql_json(r.get(i).unwrap())).collect())))
                    .unwrap()
                    .map(|r| r.unwrap())
                    .collect();
                json!({"rows": rows})
            } else {
                db.execute_batch(sql).unwrap();
                json!({"sql": "ok"})
            }
        } else {
            let op = call["op"].as_str().unwrap();
            let payload = call["payload"].as_str();
            db.execute_batch("BEGIN").unwrap();
            match db.query_row("SELECT powersync_control(?1, ?2)", (op, payload), |r| r.get::<_, SqlValue>(0)) {
                Ok(value) => {
                    db.execute_batch("COMMIT").unwrap();
                    match value {
                        SqlValue::Text(t) if t.starts_with('[') => {
                            let mut v: Value = serde_json::from_str(&t).unwrap();
                            common::diff::normalise(&mut v);
                            v
                        }
                        other => json!({"value": sql_json(other)}),
                    }
                }
                Err(e) => {
                    db.execute_batch("ROLLBACK").unwrap();
                    json!({"error": common::error_code(&e), "message": e.to_string()})
                }
            }
        };
        out.push(result.to_string());
    }
    out
}

/// An error answer with its message cut to the function that failed.
fn error_prefix(line: &str) -> Option<String> {
    let value: Value = serde_json::from_str(line).ok()?;
    let message = value.get("message")?.as_str()?;
    let function = message.split(':').next().unwrap_or_default();
    Some(json!({"error": value["error"], "function": function}).to_string())
}

#[test]
fn golden_traces() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../test-data/golden");
    let update = std::env::var_os("OPLITE_UPDATE_GOLDEN").is_some();
    let mut cases = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        let calls = std::fs::read_to_string(dir.join("calls.jsonl")).unwrap();
        let reference = common::reference();
        common::init(&reference);
        let from_reference = run(&reference, &calls);
        let from_oplite = run(&common::oplite_initialised(), &calls);
        let expected_path = dir.join("expected.jsonl");
        if update {
            std::fs::write(&expected_path, from_reference.join("\n") + "\n").unwrap();
        }
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|_| panic!("{} missing: run with OPLITE_UPDATE_GOLDEN=1", expected_path.display()));
        let expected: Vec<&str> = expected.lines().collect();
        for (core, actual) in [("reference", &from_reference), ("oplite", &from_oplite)] {
            assert_eq!(actual.len(), expected.len(), "{}: number of results on {core}", dir.display());
            for (i, (a, e)) in actual.iter().zip(&expected).enumerate() {
                match (core, error_prefix(a), error_prefix(e)) {
                    ("oplite", Some(a), Some(e)) => assert_eq!(a, e, "{} call {} on oplite", dir.display(), i + 1),
                    _ => assert_eq!(a, *e, "{} call {} on {core}", dir.display(), i + 1),
                }
            }
        }
        cases += 1;
    }
    assert!(cases >= 5, "expected at least 5 golden cases, found {cases}");
}
