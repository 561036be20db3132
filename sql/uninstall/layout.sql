-- The PowerSync core 0.5.3's internal tables and indexes (its internal
-- schema version 14), as that core leaves them in sqlite_master: the text of
-- each statement is what SQLite stores, spacing included, so that an
-- uninstalled database cannot be told from one the core wrote itself.
-- oplite_uninstall (extension/src/uninstall/) rebuilds every table whose
-- stored text differs from its statement here, and creates the indexes.
-- One statement per block; blocks end with a line holding only ';'.
CREATE TABLE ps_buckets(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  last_applied_op INTEGER NOT NULL DEFAULT 0,
  last_op INTEGER NOT NULL DEFAULT 0,
  add_checksum INTEGER NOT NULL DEFAULT 0,
  op_checksum INTEGER NOT NULL DEFAULT 0,
  pending_delete INTEGER NOT NULL DEFAULT 0
, count_at_last INTEGER NOT NULL DEFAULT 0, count_since_last INTEGER NOT NULL DEFAULT 0, downloaded_size INTEGER NOT NULL DEFAULT 0) STRICT
;
CREATE TABLE ps_crud (id INTEGER PRIMARY KEY AUTOINCREMENT, data TEXT, tx_id INTEGER)
;
CREATE TABLE ps_kv(key TEXT PRIMARY KEY NOT NULL, value BLOB)
;
CREATE TABLE ps_migration(id INTEGER PRIMARY KEY, down_migrations TEXT)
;
CREATE TABLE ps_oplog(
  bucket INTEGER NOT NULL,
  op_id INTEGER NOT NULL,
  row_type TEXT,
  row_id TEXT,
  key TEXT,
  data TEXT,
  hash INTEGER NOT NULL) STRICT
;
CREATE TABLE ps_stream_subscriptions (
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
) STRICT
;
CREATE TABLE ps_sync_state (
  priority INTEGER NOT NULL PRIMARY KEY,
  last_synced_at INTEGER NOT NULL
) STRICT
;
CREATE TABLE ps_tx(id INTEGER PRIMARY KEY NOT NULL, current_tx INTEGER, next_tx INTEGER)
;
CREATE TABLE ps_untyped(type TEXT NOT NULL, id TEXT NOT NULL, data TEXT, PRIMARY KEY (type, id))
;
CREATE TABLE ps_updated_rows(
  row_type TEXT,
  row_id TEXT,
  PRIMARY KEY(row_type, row_id)) STRICT, WITHOUT ROWID
;
CREATE UNIQUE INDEX ps_buckets_name ON ps_buckets (name)
;
CREATE INDEX ps_oplog_key ON ps_oplog (bucket, key)
;
CREATE INDEX ps_oplog_opid ON ps_oplog (bucket, op_id)
;
CREATE INDEX ps_oplog_row ON ps_oplog (row_type, row_id)
;
