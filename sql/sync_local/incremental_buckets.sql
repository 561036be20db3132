-- sync_local, incremental strategy, partial apply of the buckets in
-- :buckets (a JSON array of ps_buckets ids): as incremental.sql, with rows
-- resolved among those buckets only. json_each drives the outer loop, so
-- the bucket filter needs no temporary index. The probe's bucket test is an
-- IN list, read from :buckets once per apply (a correlated EXISTS over
-- json_each parsed the array again for every op: 7% of a 50k-row partial
-- apply). The walk resumes after op :op of the bucket at array index
-- :bucket (both the smallest integer to start at the beginning).
-- Columns: row_type, row_id, data (NULL: delete the row), array index, op_id.
SELECT op.row_type, op.row_id, op.data, scope.key, op.op_id
  FROM json_each(:buckets) AS scope
 CROSS JOIN ps_buckets AS bucket ON bucket.id = scope.value
 CROSS JOIN ps_oplog AS op INDEXED BY ps_oplog_opid
    ON op.bucket = bucket.id
   AND op.op_id > CASE WHEN scope.key = :bucket THEN max(bucket.last_applied_op, :op) ELSE bucket.last_applied_op END
 WHERE scope.key >= :bucket
   AND op.op_id = (SELECT max(newest.op_id) FROM ps_oplog AS newest INDEXED BY ps_oplog_row
                    WHERE newest.row_type = op.row_type AND newest.row_id = op.row_id
                      AND newest.bucket IN (SELECT s.value FROM json_each(:buckets) AS s))
