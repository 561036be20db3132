-- sync_local, an apply in steps: the first row id of :type after :after.
SELECT min(row_id) FROM ps_oplog INDEXED BY ps_oplog_row WHERE row_type = :type AND row_id > :after
