-- sync_local, incremental strategy, partial apply of the buckets in ?1 (a
-- JSON array of ps_buckets ids): as incremental.sql, with rows resolved
-- among those buckets only. json_each drives the outer loop, so the bucket
-- filter needs no temporary index. The probe's bucket test is an IN list,
-- read from ?1 once per apply (a correlated EXISTS over json_each parsed
-- the array again for every op: 7% of a 50k-row partial apply).
SELECT op.row_type, op.row_id, op.data
  FROM json_each(?1) AS scope
 CROSS JOIN ps_buckets AS bucket ON bucket.id = scope.value
 CROSS JOIN ps_oplog AS op INDEXED BY ps_oplog_opid
    ON op.bucket = bucket.id AND op.op_id > bucket.last_applied_op
 WHERE op.op_id = (SELECT max(newest.op_id) FROM ps_oplog AS newest INDEXED BY ps_oplog_row
                    WHERE newest.row_type = op.row_type AND newest.row_id = op.row_id
                      AND newest.bucket IN (SELECT s.value FROM json_each(?1) AS s))
