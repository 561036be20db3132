//! Both cores driven in step by `oplite_test_data::session`'s seeded
//! sessions: every call goes to oplite and to the reference core through a
//! [`Pair`], which compares the answers and the internal tables.

use oplite_test_data::session::{Host, Payload};
use serde_json::Value;

use super::diff::{Answer, Arg, Pair};

/// Both cores, driven in step by the shared session.
pub struct Cores(pub Pair);

impl Host for Cores {
    fn control(&mut self, op: &str, payload: Payload<'_>) -> Option<Value> {
        let arg = match payload {
            Payload::Null => Arg::Null,
            Payload::Text(t) => Arg::Text(t),
            Payload::Blob(b) => Arg::Blob(b),
        };
        match self.0.control(op, arg) {
            Answer::Json(v) => Some(v),
            _ => None,
        }
    }

    fn execute(&mut self, sql: &str) {
        self.0.execute(sql);
    }

    /// A local write through the app's view (its triggers queue the upload
    /// and do the bookkeeping in each core): update, delete or insert.
    fn local_write(&mut self, id: &str, n: u32, kind: u64) {
        let exists: bool =
            self.0.ours.query_row("SELECT EXISTS(SELECT 1 FROM items WHERE id = ?1)", [id], |r| r.get(0)).unwrap();
        let sql = match (exists, kind) {
            (true, 0) => format!("DELETE FROM items WHERE id = '{id}'"),
            (true, _) => format!("UPDATE items SET name = 'local{n}', n = {n} WHERE id = '{id}'"),
            (false, _) => format!("INSERT INTO items(id, name, n) VALUES ('{id}', 'local{n}', {n})"),
        };
        self.0.execute(&format!("BEGIN; {sql}; COMMIT;"));
    }

    /// The bson crate's encoder, independent of the test data's.
    fn bson(&self, line: &Value) -> Vec<u8> {
        bson::serialize_to_vec(line).unwrap()
    }
}
