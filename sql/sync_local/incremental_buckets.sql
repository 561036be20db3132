-- sync_local, incremental, partial apply of the buckets in ?1 (a JSON array
-- of ps_buckets ids): rows with an op above last_applied_op in those
-- buckets, resolved to the newest PUT among those buckets.
SELECT touched.row_type, touched.row_id,
       (SELECT op.data FROM ps_oplog AS op
         WHERE op.row_type = touched.row_type AND op.row_id = touched.row_id
           AND op.bucket IN (SELECT value FROM json_each(?1))
         ORDER BY op.op_id DESC LIMIT 1) AS data
  FROM (SELECT DISTINCT op.row_type, op.row_id
          FROM ps_buckets AS bucket
          CROSS JOIN ps_oplog AS op ON op.bucket = bucket.id AND op.op_id > bucket.last_applied_op
         WHERE bucket.id IN (SELECT value FROM json_each(?1))) AS touched
