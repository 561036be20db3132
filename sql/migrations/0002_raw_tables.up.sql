-- oplite internal schema, version 2: the raw tables of the app's schema.
-- powersync_replace_schema records them here so that the sync apply can run
-- their put / delete statements (and powersync_clear their clear statement)
-- without the schema being passed again. One row per raw table; definition
-- is the raw table's JSON as the schema gave it.
CREATE TABLE ps_oplite_raw_tables(
  name TEXT PRIMARY KEY NOT NULL,
  definition TEXT NOT NULL
) STRICT;
