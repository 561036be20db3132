-- sync_local, both strategies, full apply: rows marked in ps_updated_rows
-- (REMOVEs, cleared or deleted buckets, local writes) resolved to the data
-- of their newest op (NULL: delete). ORDER BY ... LIMIT 1 follows the index.
SELECT updated.row_type, updated.row_id,
       (SELECT op.data FROM ps_oplog AS op INDEXED BY ps_oplog_row
         WHERE op.row_type = updated.row_type AND op.row_id = updated.row_id
         ORDER BY op.op_id DESC LIMIT 1) AS data
  FROM ps_updated_rows AS updated
