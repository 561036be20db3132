-- sync_local: the stats the strategy is chosen from, over every bucket.
SELECT count(*),
       ifnull(sum(last_applied_op = 0), 0),
       ifnull(sum(oplite_op_count), 0),
       ifnull(sum(oplite_pending_ops), 0),
       (SELECT count(*) FROM ps_updated_rows),
       ifnull(sum(oplite_op_count), 0),
       ifnull(min(last_applied_op), 0)
  FROM ps_buckets
