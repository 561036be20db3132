-- Leaves version 2: older builds do not run raw tables' statements.
DROP TABLE IF EXISTS ps_oplite_raw_tables;
