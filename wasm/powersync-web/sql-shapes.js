// The shapes of SQL the adapter's host recognises in the statements it is
// sent: the SDK's powersync_control calls and the statements that begin
// and end transactions. One place, so that the host (oplite-host.js), the
// line batches (line-batch.js) and the check of the installed SDK's SQL
// (clients/web/run.mjs) read the same patterns.

// A statement that calls powersync_control with two bound parameters, the
// op and the payload, in whatever SQL around it: the SDK's sync client
// (BucketStorageAdapter's rawPowerSyncControl, 'SELECT CAST(powersync_control(?, ?)
// AS TEXT)') and its subscription calls. oplite_apply_prepare decides from
// the op and payload whether the call applies a checkpoint. A statement that
// names powersync_control otherwise (the op written into the SQL) is not
// stepped: it is counted (stats().unsteppedControlCalls) and reported once
// on the console, so a change in the SDK cannot turn the stepped apply off
// unseen; clients/web checks every such statement of the installed SDK.
export const CONTROL_CALL = /\bpowersync_control\s*\(\s*\?\s*,\s*\?\s*\)/i;
export const NAMES_CONTROL = /\bpowersync_control\b/i;
// Any BEGIN of a transaction.
export const BEGIN = /^\s*BEGIN(\s+(DEFERRED|IMMEDIATE|EXCLUSIVE))?(\s+TRANSACTION)?\s*;?\s*$/i;
// The SDK's readTransaction opens with BEGIN IMMEDIATE; on the reader a
// deferred BEGIN gives the same snapshot without asking for the writer's lock.
export const BEGIN_WRITE = /^\s*BEGIN\s+(IMMEDIATE|EXCLUSIVE)(\s+TRANSACTION)?\s*;?\s*$/i;
export const COMMIT = /^\s*(COMMIT|END)(\s+TRANSACTION)?\s*;?\s*$/i;
export const ROLLBACK = /^\s*ROLLBACK(\s+TRANSACTION)?\s*;?\s*$/i;
// A statement that begins or ends a transaction or savepoint: a client
// tab's such statement runs as sent (tabWrite).
export const TRANSACTION_CONTROL = /^\s*(BEGIN|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE)\b/i;
// What SQLite says of a statement that cannot run in a transaction (VACUUM, some PRAGMAs).
export const NOT_IN_TRANSACTION = /(within|inside) a transaction/i;
// A statement that may create or drop a TEMP table or view (the writer's
// own: the reader cannot see them, so the adapter sends the reads that
// name one to the writer).
export const TEMP_DDL = /\b(TEMP|TEMPORARY)\b|^\s*DROP\b/i;
