-- oplite internal schema, version 1: the tables of PROTOCOL.md section 2.
-- Names and columns are part of the contract with the PowerSync SDKs, which
-- read ps_crud, ps_buckets and ps_kv directly.

-- One row per bucket. last_applied_op: highest op applied to the data
-- tables; last_op: highest op downloaded; add_checksum + op_checksum is the
-- bucket's checksum; count_at_last / count_since_last / downloaded_size are
-- download progress as the SDKs read it. The oplite_ columns are oplite's
-- own: the stats sync_local chooses its strategy from (ops held in ps_oplog,
-- and how many of them arrived since the last apply).
CREATE TABLE ps_buckets(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  last_applied_op INTEGER NOT NULL DEFAULT 0,
  last_op INTEGER NOT NULL DEFAULT 0,
  add_checksum INTEGER NOT NULL DEFAULT 0,
  op_checksum INTEGER NOT NULL DEFAULT 0,
  pending_delete INTEGER NOT NULL DEFAULT 0,
  count_at_last INTEGER NOT NULL DEFAULT 0,
  count_since_last INTEGER NOT NULL DEFAULT 0,
  downloaded_size INTEGER NOT NULL DEFAULT 0,
  oplite_op_count INTEGER NOT NULL DEFAULT 0,
  oplite_pending_ops INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE UNIQUE INDEX ps_buckets_name ON ps_buckets(name);

-- The current PUT op per (bucket, key), key = 'type/id/subkey'.
CREATE TABLE ps_oplog(
  bucket INTEGER NOT NULL,
  op_id INTEGER NOT NULL,
  row_type TEXT,
  row_id TEXT,
  key TEXT,
  data TEXT,
  hash INTEGER NOT NULL
) STRICT;
-- op_id is part of the row index (the reference core's has only row_type,
-- row_id): the newest op of a row is then an index-only lookup, and a walk
-- in row order needs no sort.
CREATE INDEX ps_oplog_row ON ps_oplog(row_type, row_id, op_id);
CREATE INDEX ps_oplog_opid ON ps_oplog(bucket, op_id);
-- oplite's own: PUTs without data (the row is deleted). Small, so sync_local
-- can find the deletes of a from-scratch apply without a second full walk.
CREATE INDEX ps_oplog_deleted ON ps_oplog(row_type, row_id) WHERE data IS NULL;
CREATE INDEX ps_oplog_key ON ps_oplog(bucket, key);

-- Rows to re-derive at the next full apply.
CREATE TABLE ps_updated_rows(
  row_type TEXT,
  row_id TEXT,
  PRIMARY KEY(row_type, row_id)
) STRICT, WITHOUT ROWID;

-- The upload queue and its transaction counter.
CREATE TABLE ps_crud(id INTEGER PRIMARY KEY AUTOINCREMENT, data TEXT, tx_id INTEGER);
CREATE TABLE ps_tx(id INTEGER PRIMARY KEY NOT NULL, current_tx INTEGER, next_tx INTEGER);
INSERT INTO ps_tx(id, current_tx, next_tx) VALUES(1, NULL, 1);

CREATE TABLE ps_kv(key TEXT PRIMARY KEY NOT NULL, value BLOB);

-- Synced rows whose type is not in the app's schema.
CREATE TABLE ps_untyped(type TEXT NOT NULL, id TEXT NOT NULL, data TEXT, PRIMARY KEY (type, id));

-- Last successful sync per priority; 2147483647 marks a full sync.
CREATE TABLE ps_sync_state(
  priority INTEGER NOT NULL PRIMARY KEY,
  last_synced_at INTEGER NOT NULL
) STRICT;

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
