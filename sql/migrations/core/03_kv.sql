-- PowerSync core version 2 -> 3: the key-value table. The client id it
-- introduced is written by the caller (a fresh random UUID, as the core did).
CREATE TABLE ps_kv(key TEXT PRIMARY KEY NOT NULL, value BLOB);
