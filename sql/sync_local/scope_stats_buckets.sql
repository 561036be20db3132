-- sync_local: the stats the strategy is chosen from, over the buckets in ?1
-- (a JSON array of ps_buckets ids). The last column counts every op in
-- ps_oplog: the from-scratch walk visits them all, whatever the scope.
SELECT count(*),
       ifnull(sum(bucket.last_applied_op = 0), 0),
       ifnull(sum(bucket.oplite_op_count), 0),
       ifnull(sum(bucket.oplite_pending_ops), 0),
       0,
       (SELECT ifnull(sum(oplite_op_count), 0) FROM ps_buckets),
       ifnull(min(bucket.last_applied_op), 0)
  FROM json_each(?1) AS scope
 CROSS JOIN ps_buckets AS bucket ON bucket.id = scope.value
