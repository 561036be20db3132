-- sync_local, from-scratch strategy: the lowest and highest row id of
-- :type in ps_oplog (two seeks; min and max in one SELECT would walk the
-- whole type).
SELECT (SELECT min(row_id) FROM ps_oplog INDEXED BY ps_oplog_row WHERE row_type = :type),
       (SELECT max(row_id) FROM ps_oplog INDEXED BY ps_oplog_row WHERE row_type = :type)
