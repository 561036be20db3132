-- PowerSync core version 11 -> 12: bytes downloaded per bucket.
ALTER TABLE ps_buckets ADD COLUMN downloaded_size INTEGER NOT NULL DEFAULT 0;
