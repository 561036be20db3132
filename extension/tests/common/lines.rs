//! Sync lines written by hand for the differential tests.

use serde_json::{json, Value};

/// One PUT (with `data`, sent as the text given: key order and spacing
/// kept) or REMOVE (without) of a row of `row_type`; its checksum is its
/// op id.
pub fn op(op_id: u32, row_type: &str, id: &str, data: Option<&str>) -> Value {
    let mut entry = json!({"op_id": op_id.to_string(), "object_type": row_type, "object_id": id, "checksum": op_id});
    match data {
        Some(d) => {
            entry["op"] = "PUT".into();
            entry["data"] = d.into();
        }
        None => entry["op"] = "REMOVE".into(),
    }
    entry
}
