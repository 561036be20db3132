-- PowerSync core version 6 -> 7: the time of the last complete sync moves
-- from ps_kv to a table per priority (2147483647: a complete sync). The
-- ps_kv entry stays, as with the core.
CREATE TABLE ps_sync_state(
  priority INTEGER NOT NULL,
  last_synced_at TEXT NOT NULL
) STRICT;
INSERT OR IGNORE INTO ps_sync_state(priority, last_synced_at)
  SELECT 2147483647, value FROM ps_kv WHERE key = 'last_synced_at';
