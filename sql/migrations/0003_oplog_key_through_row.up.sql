-- oplite internal schema, version 3: no full (bucket, key) index on
-- ps_oplog. Every op stored paid for an entry in it (about 45 bytes, at a
-- random place in the b-tree, so each line of 1000 ops dirtied up to 1000
-- of its pages); the only query it served is the lookup of the op a PUT or
-- REMOVE supersedes, which now goes through ps_oplog_row:
--
-- A key is 'type/id/subkey'. When neither type nor id is NULL or holds a
-- '/', the key's first two '/' end them, so the op with key K has
-- (row_type, row_id) = K's text before its first '/' and between its first
-- and second; ps_oplog_row finds it. The other ops ("irregular": a NULL or
-- a '/' in type or id, rare) are kept in this small partial index and
-- looked up by key as before.
DROP INDEX IF EXISTS ps_oplog_key;
CREATE INDEX ps_oplog_irregular_key ON ps_oplog(bucket, key)
  WHERE row_type IS NULL OR row_id IS NULL OR instr(row_type, '/') > 0 OR instr(row_id, '/') > 0;
