// The database Worker of @oplite/powersync-web: owns one oplite-wasm
// connection (OPFS needs a dedicated Worker) and runs what the page's
// OpliteDBAdapter sends, one call at a time in arrival order.
// Messages: {id, method, args} -> {id, result} or {id, error}; and, after
// each committed write transaction, {event: 'tables', tables}.
import { open } from './oplite.js';

let db = null;

function opened() {
  if (db == null) throw new Error('the database is not open');
  return db;
}

const methods = {
  async open({ name, vfs, onLocked, cacheSizeKb }) {
    db = await open({ name, vfs, onLocked });
    await db.execute(`PRAGMA cache_size = -${cacheSizeKb}`);
    db.onTablesChanged((tables) => postMessage({ event: 'tables', tables }));
    return null;
  },
  executeRaw(sql, params) {
    return opened().executeRaw(sql, params);
  },
  // One statement, many parameter sets: one message instead of one per set.
  async executeBatch(sql, sets) {
    let changes = 0;
    let lastInsertRowid = 0;
    for (const params of sets) {
      const result = await opened().executeRaw(sql, params);
      changes += result.changes;
      lastInsertRowid = result.lastInsertRowid;
    }
    return { changes, lastInsertRowid };
  },
  flush() {
    return opened().flush();
  },
  stats(options) {
    return opened().stats(options);
  },
  async close() {
    const current = db;
    db = null;
    await current?.close();
    return null;
  },
};

onmessage = async ({ data: { id, method, args } }) => {
  try {
    const handler = methods[method];
    if (handler == null) throw new Error(`unknown method ${method}`);
    postMessage({ id, result: await handler(...args) });
  } catch (e) {
    postMessage({ id, error: { name: e?.name ?? 'Error', message: String(e?.message ?? e), code: e?.code } });
  }
};
