-- PowerSync core version 7 -> 8: one ps_sync_state row per priority, the
-- latest when there were several.
ALTER TABLE ps_sync_state RENAME TO ps_sync_state_core7;
CREATE TABLE ps_sync_state(
  priority INTEGER NOT NULL PRIMARY KEY,
  last_synced_at TEXT NOT NULL
) STRICT;
INSERT INTO ps_sync_state(priority, last_synced_at)
  SELECT priority, max(last_synced_at) FROM ps_sync_state_core7 GROUP BY priority;
DROP TABLE ps_sync_state_core7;
