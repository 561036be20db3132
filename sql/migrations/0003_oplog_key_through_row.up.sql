-- oplite internal schema, version 3: no (bucket, key) index on ps_oplog.
-- Every op stored paid for an entry in it (about 45 bytes, at a random
-- place in the b-tree, so each line of 1000 ops dirtied up to 1000 of its
-- pages); the only query it served, finding the op a PUT or REMOVE
-- supersedes, now goes through ps_oplog_row: a key is 'type/id/subkey', so
-- the rows an op with a given key can belong to follow from the key (see
-- extension/src/sync/data_line.rs).
DROP INDEX IF EXISTS ps_oplog_key;
