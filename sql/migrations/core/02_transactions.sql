-- PowerSync core version 1 -> 2: uploads are grouped into transactions.
-- Entries queued before this step have no transaction (tx_id NULL), as with
-- the core; the counter starts at 1.
CREATE TABLE ps_tx(id INTEGER PRIMARY KEY NOT NULL, current_tx INTEGER, next_tx INTEGER);
INSERT INTO ps_tx(id, current_tx, next_tx) VALUES(1, NULL, 1);
ALTER TABLE ps_crud ADD COLUMN tx_id INTEGER;
