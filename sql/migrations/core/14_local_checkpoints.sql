-- PowerSync core version 13 -> 14: the '$local' bucket, which tracked write
-- checkpoints, becomes three ps_kv entries and leaves ps_buckets:
--   last_op         -> last_seen_checkpoint_request_id
--   last_applied_op -> last_applied_checkpoint_request_id
--   target_op       -> target_checkpoint_request_id (also the i64 maximum
--                      that meant "local writes pending")
-- each only when positive. Entries a previous version 14 left (a database
-- that was stepped down and used by an older core since) are replaced: the
-- '$local' row is what that core kept up to date. target_op then goes.
DELETE FROM ps_kv WHERE key IN (
  'last_applied_checkpoint_request_id',
  'last_seen_checkpoint_request_id',
  'target_checkpoint_request_id'
);
INSERT INTO ps_kv(key, value)
  SELECT entry.key, entry.value FROM (
      SELECT 'last_applied_checkpoint_request_id' AS key, last_applied_op AS value
        FROM ps_buckets WHERE name = '$local'
      UNION ALL
      SELECT 'last_seen_checkpoint_request_id', last_op FROM ps_buckets WHERE name = '$local'
      UNION ALL
      SELECT 'target_checkpoint_request_id', target_op FROM ps_buckets WHERE name = '$local'
    ) entry
  WHERE entry.value > 0;
DELETE FROM ps_buckets WHERE name = '$local';
ALTER TABLE ps_buckets DROP COLUMN target_op;
