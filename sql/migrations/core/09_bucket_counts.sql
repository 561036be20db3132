-- PowerSync core version 8 -> 9: download progress per bucket (ops counted
-- at the last checkpoint and since). Zero: the next checkpoint recounts.
ALTER TABLE ps_buckets ADD COLUMN count_at_last INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ps_buckets ADD COLUMN count_since_last INTEGER NOT NULL DEFAULT 0;
