//! Port of the reference core's `dart/test/js_key_encoding_test.dart`:
//! `powersync_remove_duplicate_key_encoding` repairs oplog keys the old
//! JavaScript client wrote with a JSON-encoded subkey.
mod common;
mod upstream;

use upstream::{exec, init, replace_schema, scalar, select, test_schema, Core};

fn fixes_js_key_encoding(core: Core) {
    let db = core.open();
    init(&db);
    replace_schema(&db, &test_schema());
    let bucket = scalar(&db, "INSERT INTO ps_buckets(name) VALUES (?) RETURNING id", &[&"a"]);
    exec(
        &db,
        "INSERT INTO ps_oplog(bucket, op_id, key, row_type, row_id, data, hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
        &[&bucket.as_i64().unwrap(), &"1", &"items/1/\"subkey\"", &"items", &"1", &"{}", &0],
    );
    exec(&db, "UPDATE ps_oplog SET key = powersync_remove_duplicate_key_encoding(key)", &[]);
    let rows = select(&db, "SELECT * FROM ps_oplog", &[]);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["key"], "items/1/subkey");
}

per_core! {
    fixes_js_key_encoding;
}
