-- oplite internal schema, version 4: oplite's own keys leave ps_kv.
-- ps_kv is the reference core's table; the SDKs read it, and apps and
-- tools list it, so it holds only the reference's keys. oplite's own state
-- (today the sync iteration that owns sync state, see extension/src/kv.rs)
-- goes here. A database an earlier oplite wrote has its key moved.
CREATE TABLE ps_oplite_kv(
  key TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
) STRICT;
INSERT INTO ps_oplite_kv(key, value)
  SELECT 'sync_iteration', CAST(value AS TEXT) FROM ps_kv WHERE key = 'oplite_sync_iteration' AND value IS NOT NULL;
DELETE FROM ps_kv WHERE key = 'oplite_sync_iteration';
