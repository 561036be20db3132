-- sync_local, incremental strategy, partial apply of the buckets in ?1 (a
-- JSON array of ps_buckets ids): as incremental.sql, with rows resolved
-- among those buckets only. json_each drives the outer loop, so the bucket
-- filter needs no temporary index.
SELECT op.row_type, op.row_id, op.data
  FROM json_each(?1) AS scope
 CROSS JOIN ps_buckets AS bucket ON bucket.id = scope.value
 CROSS JOIN ps_oplog AS op INDEXED BY ps_oplog_opid
    ON op.bucket = bucket.id AND op.op_id > bucket.last_applied_op
 WHERE op.op_id = (SELECT max(newest.op_id) FROM ps_oplog AS newest INDEXED BY ps_oplog_row
                    WHERE newest.row_type = op.row_type AND newest.row_id = op.row_id
                      AND EXISTS (SELECT 1 FROM json_each(?1) AS s WHERE s.value = newest.bucket))
