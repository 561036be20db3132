//! The generators' BSON writer agrees with the extension's BSON decoder:
//! every generated line decodes to the same value as its JSON twin.

use std::collections::HashMap;

use oplite_test_data::{recorded, Encoding, StreamSpec};
use serde_json::Value;

#[test]
fn generated_bson_lines_decode_to_their_json_twins() {
    for spec in [
        StreamSpec { ops_per_line: 7, ..StreamSpec::benchmark(200) },
        StreamSpec { ops_per_line: 7, ..StreamSpec::wide(50) },
        StreamSpec { ops_per_line: 7, ..StreamSpec::many_buckets(1_500) },
    ] {
        let json: Vec<Vec<u8>> = spec.lines(Encoding::Json, &HashMap::new()).collect();
        let bson: Vec<Vec<u8>> = spec.lines(Encoding::Bson, &HashMap::new()).collect();
        assert_eq!(json.len(), bson.len());
        for (j, b) in json.iter().zip(&bson) {
            let from_json: Value = serde_json::from_slice(j).unwrap();
            let from_bson: Value = oplite::bson::from_slice(b).unwrap();
            assert_eq!(from_json, from_bson);
        }
    }
}

#[test]
fn recorded_lines_survive_the_bson_round_trip() {
    for line in recorded::todo_list_lines() {
        let bytes = oplite_test_data::lines::encode(Encoding::Bson, &line);
        // Integers may differ in width (int32 here, int64 there); the
        // values may not.
        let ours: Value = oplite::bson::from_slice(&bytes).unwrap();
        let theirs: Value = oplite::bson::from_slice(&bson::serialize_to_vec(&line).unwrap()).unwrap();
        assert_eq!(ours, line);
        assert_eq!(theirs, line);
    }
}
