// The demo's database worker: owns the oplite database (OPFS needs a
// dedicated Worker), syncs from the fixture server with fetch streaming and
// answers the page's requests. Messages: {id, method, args} -> {id, value}
// or {id, error}; unsolicited {type: 'progress' | 'tables'} updates.
import { open, syncStream, sqliteVersion } from '/pkg/oplite.js';

let db = null;
let reader = null; // db.openReader(), for the browser tests

// Synced rows: the schema's view once schemas exist, ps_untyped before.
async function rowSource() {
  const view = await db.get("SELECT 1 AS ok FROM sqlite_master WHERE type = 'view' AND name = 'thisisatable'");
  return view ? { table: 'thisisatable', where: '' } : { table: 'ps_untyped', where: "WHERE type = 'thisisatable'" };
}

function progressOf(status) {
  let downloaded = 0;
  let total = 0;
  const buckets = status.downloading?.buckets ?? {};
  for (const p of Object.values(buckets)) {
    downloaded += p.since_last;
    total += p.target_count - p.at_last;
  }
  return { downloaded, total, connected: status.connected, syncing: status.downloading != null };
}

const methods = {
  async open({ name = 'demo', vfs = 'opfs', onLocked = 'error', skipLockForTests = false, key }) {
    if (db) await db.close();
    db = null;
    reader = null;
    db = await open({ name, vfs, onLocked, skipLockForTests, key });
    db.onTablesChanged((tables) => postMessage({ type: 'tables', tables }));
    const { v } = await db.get('SELECT oplite_version() AS v');
    return { name, vfs, sqlite: sqliteVersion(), oplite: v };
  },

  async sync({ ops = 100000, binary = false }) {
    await db.stats({ reset: true });
    const before = await db.stats();
    const started = performance.now();
    let lastPost = 0;
    let last = { downloaded: 0, total: 0, syncing: false };
    const result = await syncStream(db, {
      url: `/sync/stream?ops=${ops}`,
      binary,
      onStatus(status) {
        const now = performance.now();
        let progress = progressOf(status);
        // When a download ends the status drops its counts: report the last ones.
        if (!progress.syncing && last.syncing) progress = { ...progress, downloaded: last.total, total: last.total };
        const changed = progress.syncing !== last.syncing;
        if (progress.syncing) last = progress;
        else last = { ...progress };
        if (changed || now - lastPost > 100) {
          lastPost = now;
          postMessage({ type: 'progress', ...progress });
        }
      },
    });
    const totalMs = performance.now() - started;
    const after = await db.stats();
    return {
      ...result,
      totalMs,
      longestCallMs: after.longestCallMs,
      tempBytesWritten: after.tempBytesWritten - before.tempBytesWritten,
      stats: after,
    };
  },

  async count() {
    const { table, where } = await rowSource();
    return (await db.get(`SELECT count(*) AS n FROM ${table} ${where}`)).n;
  },

  async rows({ limit = 20, offset = 0 }) {
    const { table, where } = await rowSource();
    return db.query(`SELECT id, data FROM ${table} ${where} ORDER BY id LIMIT ? OFFSET ?`, [limit, offset]);
  },

  async query({ sql, params }) {
    return db.query(sql, params);
  },

  async execute({ sql, params }) {
    return db.execute(sql, params);
  },

  async stats() {
    return db.stats();
  },

  async flush() {
    await db.flush();
    return true;
  },

  async close() {
    if (db) await db.close();
    db = null;
    reader = null;
    return true;
  },

  // The read-only second connection (tests).
  async openReader() {
    if (reader) await reader.close();
    reader = await db.openReader();
    return true;
  },

  async readerQuery({ sql, params }) {
    if (reader == null) throw new Error('no reader is open');
    return reader.query(sql, params);
  },

  // Runs sync({ops}) and, until it ends, `sql` on the reader every few ms
  // from this worker (no page round trip between reads, which on a loaded
  // machine can outlast a short apply); resolves to the sync's result and
  // the reads, each {at: Date.now() when issued, answeredAt, n}.
  async syncWhileReading({ ops, sql }) {
    if (reader == null) throw new Error('no reader is open');
    let done = false;
    const syncing = methods.sync({ ops }).finally(() => { done = true; });
    const reads = [];
    while (!done) {
      const at = Date.now();
      const [row] = await reader.query(sql);
      reads.push({ at, answeredAt: Date.now(), n: row.n });
      await new Promise((r) => setTimeout(r, 2));
    }
    return { ...(await syncing), reads };
  },

  async closeReader() {
    if (reader) await reader.close();
    reader = null;
    return true;
  },

  // Runs `write` inside db.transaction() and, before it commits, `read` on
  // the reader while the event loop turns; resolves to {inside, error}.
  async readDuringTransaction({ write, read }) {
    if (reader == null) throw new Error('no reader is open');
    return db.transaction(async (tx) => {
      tx.execute(write);
      await new Promise((r) => setTimeout(r, 0));
      try {
        return { inside: await reader.query(read) };
      } catch (e) {
        return { error: { name: e.name, message: e.message, code: e.code } };
      }
    });
  },
};

onmessage = async (event) => {
  const { id, method, args } = event.data;
  try {
    if (!(method in methods)) throw new Error(`unknown method ${method}`);
    if (method !== 'open' && db == null) throw new Error('no database is open');
    postMessage({ id, value: await methods[method](args ?? {}) });
  } catch (e) {
    postMessage({ id, error: { name: e?.name, message: e?.message ?? String(e), code: e?.code } });
  }
};
