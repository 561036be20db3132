-- Leaves version 3: older builds look ops up through the (bucket, key) index.
DROP INDEX IF EXISTS ps_oplog_irregular_key;
CREATE INDEX IF NOT EXISTS ps_oplog_key ON ps_oplog(bucket, key);
