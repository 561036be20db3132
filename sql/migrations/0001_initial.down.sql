-- Leaves version 1: removes every internal table (the app's data tables are
-- left alone).
DROP TABLE IF EXISTS ps_stream_subscriptions;
DROP TABLE IF EXISTS ps_sync_state;
DROP TABLE IF EXISTS ps_untyped;
DROP TABLE IF EXISTS ps_kv;
DROP TABLE IF EXISTS ps_tx;
DROP TABLE IF EXISTS ps_crud;
DROP TABLE IF EXISTS ps_updated_rows;
DROP TABLE IF EXISTS ps_oplog;
DROP TABLE IF EXISTS ps_buckets;
DROP TABLE IF EXISTS ps_migration;
