-- PowerSync core version 4 -> 5: buckets get integer ids and ps_oplog keeps
-- only the live PUT of each key, referring to its bucket by id. What the old
-- oplog held besides (superseded ops, REMOVE/MOVE/CLEAR ops, and the '$local'
-- bucket's markers of rows written locally) is folded in:
--  * a row touched by such an op must be re-derived at the next apply, so
--    it goes to ps_updated_rows;
--  * the hashes of ops no longer held move from op_checksum to
--    add_checksum, keeping every bucket's total checksum unchanged.
-- The triggers of the generated views were dropped before this runs (they
-- wrote to the old oplog); the next powersync_replace_schema recreates them.
ALTER TABLE ps_buckets RENAME TO ps_buckets_core4;
ALTER TABLE ps_oplog RENAME TO ps_oplog_core4;

CREATE TABLE ps_buckets(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  last_applied_op INTEGER NOT NULL DEFAULT 0,
  last_op INTEGER NOT NULL DEFAULT 0,
  target_op INTEGER NOT NULL DEFAULT 0,
  add_checksum INTEGER NOT NULL DEFAULT 0,
  op_checksum INTEGER NOT NULL DEFAULT 0,
  pending_delete INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE UNIQUE INDEX ps_buckets_name ON ps_buckets(name);

CREATE TABLE ps_oplog(
  bucket INTEGER NOT NULL,
  op_id INTEGER NOT NULL,
  row_type TEXT,
  row_id TEXT,
  key TEXT,
  data TEXT,
  hash INTEGER NOT NULL
) STRICT;
CREATE INDEX ps_oplog_row ON ps_oplog(row_type, row_id);
CREATE INDEX ps_oplog_opid ON ps_oplog(bucket, op_id);
CREATE INDEX ps_oplog_key ON ps_oplog(bucket, key);

CREATE TABLE ps_updated_rows(
  row_type TEXT,
  row_id TEXT,
  PRIMARY KEY(row_type, row_id)
) STRICT, WITHOUT ROWID;

INSERT INTO ps_buckets(name, last_applied_op, last_op, target_op, add_checksum, op_checksum, pending_delete)
  SELECT name, last_applied_op, last_op, target_op, add_checksum, op_checksum, pending_delete
  FROM ps_buckets_core4;

-- The hashes of the ops that are not carried over, per bucket name.
CREATE TEMP TABLE oplite_dropped_hashes AS
  SELECT bucket AS name, sum(hash) AS hashes FROM ps_oplog_core4
  WHERE superseded != 0 OR op != 3
  GROUP BY bucket;
UPDATE ps_buckets SET
  add_checksum = 0xffffffff & (add_checksum + dropped.hashes),
  op_checksum = 0xffffffff & (op_checksum - dropped.hashes)
  FROM temp.oplite_dropped_hashes dropped
  WHERE dropped.name = ps_buckets.name;
DROP TABLE temp.oplite_dropped_hashes;

INSERT INTO ps_oplog(bucket, op_id, row_type, row_id, key, data, hash)
  SELECT b.id, op.op_id, op.row_type, op.row_id, op.key, op.data, op.hash
  FROM ps_oplog_core4 op JOIN ps_buckets b ON b.name = op.bucket
  WHERE op.superseded = 0 AND op.op = 3
  ORDER BY op.bucket, op.op_id;

INSERT OR IGNORE INTO ps_updated_rows(row_type, row_id)
  SELECT row_type, row_id FROM ps_oplog_core4 WHERE op != 3;

DROP TABLE ps_buckets_core4;
DROP TABLE ps_oplog_core4;
