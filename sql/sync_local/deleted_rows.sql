-- sync_local, from-scratch strategy: rows whose newest op is a PUT without
-- data, found through the small partial index ps_oplog_deleted instead of a
-- second walk of the oplog. :buckets is a JSON array of ps_buckets ids, or
-- NULL for all buckets; :applied is the lower bound of from_scratch.sql for
-- a full apply, and each op's own bucket decides for a partial one.
SELECT op.row_type, op.row_id, NULL AS data
  FROM ps_oplog AS op INDEXED BY ps_oplog_deleted
 WHERE op.data IS NULL
   AND op.op_id > CASE WHEN :buckets IS NULL THEN :applied
                       ELSE (SELECT bucket.last_applied_op FROM ps_buckets AS bucket WHERE bucket.id = op.bucket) END
   AND (:buckets IS NULL OR EXISTS (SELECT 1 FROM json_each(:buckets) AS scope WHERE scope.value = op.bucket))
   AND op.op_id = (SELECT max(newest.op_id) FROM ps_oplog AS newest INDEXED BY ps_oplog_row
                    WHERE newest.row_type = op.row_type AND newest.row_id = op.row_id
                      AND (:buckets IS NULL
                           OR EXISTS (SELECT 1 FROM json_each(:buckets) AS s WHERE s.value = newest.bucket)))
