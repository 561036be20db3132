-- PowerSync core version 12 -> 13: times are integers in microseconds since
-- the Unix epoch (they were seconds in ps_stream_subscriptions and
-- 'YYYY-MM-DD HH:MM:SS' text in ps_sync_state).
UPDATE ps_stream_subscriptions SET
  expires_at = expires_at * 1000000,
  last_synced_at = last_synced_at * 1000000;
ALTER TABLE ps_sync_state RENAME TO ps_sync_state_core12;
CREATE TABLE ps_sync_state(
  priority INTEGER NOT NULL PRIMARY KEY,
  last_synced_at INTEGER NOT NULL
) STRICT;
INSERT INTO ps_sync_state(priority, last_synced_at)
  SELECT priority, unixepoch(last_synced_at) * 1000000 FROM ps_sync_state_core12;
DROP TABLE ps_sync_state_core12;
