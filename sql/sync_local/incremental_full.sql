-- sync_local, incremental, full apply.
-- Every (row_type, row_id) with an op above its bucket's last_applied_op,
-- or listed in ps_updated_rows, with the data of its newest PUT across all
-- buckets (NULL when no bucket holds one: the row is deleted).
SELECT touched.row_type, touched.row_id,
       (SELECT op.data FROM ps_oplog AS op
         WHERE op.row_type = touched.row_type AND op.row_id = touched.row_id
         ORDER BY op.op_id DESC LIMIT 1) AS data
  FROM (SELECT op.row_type, op.row_id
          FROM ps_buckets AS bucket
          CROSS JOIN ps_oplog AS op ON op.bucket = bucket.id AND op.op_id > bucket.last_applied_op
        UNION
        SELECT row_type, row_id FROM ps_updated_rows) AS touched
