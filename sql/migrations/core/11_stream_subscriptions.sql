-- PowerSync core version 10 -> 11: sync stream subscriptions (none yet).
-- (Version 10 changed no table: it only marked the generated views for
-- re-creation, which powersync_replace_schema does anyway.)
CREATE TABLE ps_stream_subscriptions(
  id INTEGER NOT NULL PRIMARY KEY,
  stream_name TEXT NOT NULL,
  active INTEGER NOT NULL DEFAULT FALSE,
  is_default INTEGER NOT NULL DEFAULT FALSE,
  local_priority INTEGER,
  local_params TEXT NOT NULL DEFAULT 'null',
  ttl INTEGER,
  expires_at INTEGER,
  last_synced_at INTEGER,
  UNIQUE (stream_name, local_params)
) STRICT;
