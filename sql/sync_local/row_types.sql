-- sync_local: the next row type in ps_oplog after :after (a loose index
-- scan: one seek per type, however many ops there are).
SELECT min(row_type) FROM ps_oplog INDEXED BY ps_oplog_row WHERE row_type > :after
