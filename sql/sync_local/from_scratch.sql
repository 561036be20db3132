-- sync_local, from-scratch strategy: the rows of one type, :type.
--
-- One walk of ps_oplog in ps_oplog_row order (row_type, row_id, op_id):
-- GROUP BY follows the index, so there is no temporary b-tree, and rows come
-- out sorted by id, which is also the cheapest order to insert them in.
-- max(op_id) makes the bare column data that of the newest op. Rows whose
-- newest op is not above :applied (the lowest last_applied_op of the
-- buckets in scope) cannot have changed and are skipped; rows between that
-- and their own bucket's last apply are rewritten unchanged, which is
-- harmless and cheaper than a lookup per row.
-- The walk covers the ids from :from to :upto (both included): the whole
-- type in one go, or one chunk of an apply done in steps (job.rs).
-- Columns: id, data (NULL: the row is deleted), op_id.
SELECT op.row_id AS id, op.data AS data, max(op.op_id) AS op_id
  FROM ps_oplog AS op INDEXED BY ps_oplog_row
 WHERE op.row_type = :type AND op.row_id BETWEEN :from AND :upto
 GROUP BY op.row_id
HAVING max(op.op_id) > :applied
