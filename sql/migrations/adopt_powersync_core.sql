-- Adopting a database written by the PowerSync core (its internal schema
-- version 14) as oplite's internal schema version 1. The two share every
-- table and column the SDKs read; this adds what is oplite's own.

-- sync_local's strategy stats: ops held per bucket, and how many of them
-- arrived after the last apply.
ALTER TABLE ps_buckets ADD COLUMN oplite_op_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ps_buckets ADD COLUMN oplite_pending_ops INTEGER NOT NULL DEFAULT 0;
UPDATE ps_buckets SET
  oplite_op_count = (SELECT count(*) FROM ps_oplog WHERE ps_oplog.bucket = ps_buckets.id),
  oplite_pending_ops = (SELECT count(*) FROM ps_oplog
                        WHERE ps_oplog.bucket = ps_buckets.id AND ps_oplog.op_id > ps_buckets.last_applied_op);

-- oplite's row index carries op_id, and it keeps a small index of deletes.
DROP INDEX ps_oplog_row;
CREATE INDEX ps_oplog_row ON ps_oplog(row_type, row_id, op_id);
CREATE INDEX ps_oplog_deleted ON ps_oplog(row_type, row_id) WHERE data IS NULL;

-- The core's migration history is replaced by oplite's (written by the caller).
DELETE FROM ps_migration;
