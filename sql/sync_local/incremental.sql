-- sync_local, incremental strategy, full apply.
--
-- Walks only the ops that arrived since each bucket's last apply (index
-- ps_oplog_opid, in table order) and keeps those that are the newest op of
-- their row across all buckets (an index-only probe of ps_oplog_row, which
-- ends in op_id). A row whose newest op is older than its bucket's last
-- apply did not change. Each changed row comes out exactly once, so no
-- temporary b-tree is needed for de-duplication.
-- The walk resumes after op :op of bucket :bucket (an apply in steps,
-- job.rs; both the smallest integer to start at the beginning).
-- Columns: row_type, row_id, data (NULL: delete the row), bucket, op_id.
SELECT op.row_type, op.row_id, op.data, bucket.id, op.op_id
  FROM ps_buckets AS bucket
 CROSS JOIN ps_oplog AS op INDEXED BY ps_oplog_opid
    ON op.bucket = bucket.id
   AND op.op_id > CASE WHEN bucket.id = :bucket THEN max(bucket.last_applied_op, :op) ELSE bucket.last_applied_op END
 WHERE bucket.id >= :bucket
   AND op.op_id = (SELECT max(newest.op_id) FROM ps_oplog AS newest INDEXED BY ps_oplog_row
                    WHERE newest.row_type = op.row_type AND newest.row_id = op.row_id)
