-- PowerSync core version 3 -> 4: each bucket keeps the checksum of the ops
-- it holds (32-bit wrapping sum of their hashes) beside add_checksum.
-- remove_operations existed only until version 5, which drops it again.
ALTER TABLE ps_buckets ADD COLUMN op_checksum INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ps_buckets ADD COLUMN remove_operations INTEGER NOT NULL DEFAULT 0;
UPDATE ps_buckets SET op_checksum = 0xffffffff & (
  SELECT ifnull(sum(op.hash), 0) FROM ps_oplog op WHERE op.bucket = ps_buckets.name
);
