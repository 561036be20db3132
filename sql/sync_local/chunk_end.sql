-- sync_local, an apply in steps: the row id :ops ops of :type after :from
-- (in ps_oplog_row order), where a chunk of about that many ops ends; NULL
-- when fewer are left. The walk reads index entries only.
SELECT row_id FROM ps_oplog INDEXED BY ps_oplog_row
 WHERE row_type = :type AND row_id >= :from
 ORDER BY row_type, row_id
 LIMIT 1 OFFSET :ops
