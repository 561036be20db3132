-- sync_local, from-scratch strategy, partial apply: as from_scratch.sql
-- over the ops of the buckets in :buckets (a JSON array of ps_buckets ids).
-- Rows are resolved among those buckets only, so a row is skipped unless
-- its newest op in scope is above that op's own bucket's last apply (a
-- lower bound over all buckets would rewrite rows that another, out-of-scope
-- bucket decides). :from and :upto bound the ids as there.
SELECT op.row_id AS id, op.data AS data, max(op.op_id) AS op_id
  FROM ps_oplog AS op INDEXED BY ps_oplog_row
 WHERE op.row_type = :type AND op.row_id BETWEEN :from AND :upto
   AND EXISTS (SELECT 1 FROM json_each(:buckets) AS scope WHERE scope.value = op.bucket)
 GROUP BY op.row_id
HAVING max(op.op_id) > (SELECT bucket.last_applied_op FROM ps_buckets AS bucket WHERE bucket.id = op.bucket)
