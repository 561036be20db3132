//! Port of the golden sessions of the reference core's `sync_test.dart`
//! (`dart/test/goldens/*.json`, copied to upstream/goldens/): each golden
//! lists the `powersync_control` calls of a session and the instructions
//! each returned; replaying the calls must give the same instructions, with
//! JSON text lines and with BSON lines (whose inputs are not compared).
mod common;
mod upstream;

use rusqlite::types::Value as SqlValue;
use serde_json::{json, Value};
use upstream::sync::{data_line, Session};
use upstream::Core;

/// Replays a session against a golden, call by call.
struct Golden {
    session: Session,
    expected: Vec<Value>,
    seen: usize,
}

impl Golden {
    fn load(core: Core, bson: bool, golden: &str) -> Golden {
        let expected: Value = serde_json::from_str(golden).unwrap();
        Golden { session: Session::new(core, bson), expected: expected.as_array().unwrap().clone(), seen: 0 }
    }

    /// One call, checked against the next expected entry; `input` is the
    /// JSON the call carries (compared for text lines only).
    fn invoke(&mut self, op: &str, data: SqlValue, input: Value) {
        let expected = self.expected.get(self.seen).unwrap_or_else(|| panic!("call {} ({op}) is not in the golden", self.seen)).clone();
        if !self.session.bson {
            assert_eq!((op, &input), (expected["operation"].as_str().unwrap(), &expected["data"]), "call {}", self.seen);
        }
        let output = self.session.control(op, data);
        assert_eq!(output, expected["output"], "output of call {} ({op})", self.seen);
        self.seen += 1;
    }

    fn start(&mut self, payload: Option<Value>) {
        let data = payload.as_ref().map_or(SqlValue::Null, |p| SqlValue::Text(p.to_string()));
        self.invoke("start", data, payload.unwrap_or(Value::Null));
    }

    fn line(&mut self, line: Value) {
        let (op, data) = self.session.encode(&line);
        self.invoke(op, data, line);
    }

    fn finish(self) {
        assert_eq!(self.seen, self.expected.len(), "calls made vs calls in the golden");
    }
}

fn starting_stream(core: Core, bson: bool) {
    let mut g = Golden::load(core, bson, include_str!("upstream/goldens/starting_stream.json"));
    g.start(Some(json!({"parameters": {"foo": "bar"}})));
    g.finish();
}

fn simple_iteration(core: Core, bson: bool) {
    let mut g = Golden::load(core, bson, include_str!("upstream/goldens/simple_iteration.json"));
    g.start(None);
    g.line(json!({"checkpoint": {"last_op_id": "1", "write_checkpoint": null,
        "buckets": [{"bucket": "a", "checksum": 0, "priority": 3, "count": 1}]}}));
    g.line(json!({"token_expires_in": 60}));
    g.line(data_line("a", "1", "1", "PUT", json!({"col": "hi"}), 0, "items"));
    g.line(json!({"checkpoint_complete": {"last_op_id": "1"}}));
    g.line(json!({"token_expires_in": 10}));
    g.finish();
}

per_core_and_encoding! {
    starting_stream;
    simple_iteration;
}
