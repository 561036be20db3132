-- Leaves version 4: older builds keep the sync iteration's key in ps_kv.
INSERT OR REPLACE INTO ps_kv(key, value)
  SELECT 'oplite_sync_iteration', value FROM ps_oplite_kv WHERE key = 'sync_iteration';
DROP TABLE IF EXISTS ps_oplite_kv;
