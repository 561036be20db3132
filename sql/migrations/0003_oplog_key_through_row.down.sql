-- Leaves version 3: older builds look ops up through the (bucket, key) index.
CREATE INDEX IF NOT EXISTS ps_oplog_key ON ps_oplog(bucket, key);
