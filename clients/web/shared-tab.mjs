// The browser side of the multi-tab check (browser.mjs sharedTabs): one
// database, oplite's or the SDK's own (databases.mjs), opened in several
// pages of one profile, sharing between tabs left to its default (on in
// Chromium: oplite's multiTab, the SDK's enableMultiTabs).
// window.sharedTab's calls act on this page's PowerSyncDatabase; a watched
// count of notes records what this page saw.
import * as sdk from '@powersync/web';
import { databaseOptions } from './databases.mjs';

const schema = new sdk.Schema({ notes: new sdk.Table({ body: sdk.column.text }) });
let db = null;
const seen = [];
// A write started by start(), and how it ended.
let started = null;
// swallow(): the answers this page's database Worker, as the owner, keeps
// from the other tabs (swallow-worker.js, told over `control`).
const control = new BroadcastChannel(`swallow-${crypto.randomUUID()}`);
const worker = `/dist/swallow-worker.js?control=${encodeURIComponent(control.name)}`;
let dropped = 0;
let acknowledged = null;
control.onmessage = ({ data }) => {
  if (data.dropped) dropped += data.dropped;
  if ('kept' in data) acknowledged?.(data.kept);
};

window.sharedTab = {
  // swallowing: oplite's Worker is swallow-worker.js (see swallow()).
  async open(vfs, dbFilename = 'shared.db', core = 'oplite', swallowing = false) {
    const options = databaseOptions({ core, vfs, dbFilename, ...(swallowing ? { worker } : {}) });
    db = new sdk.PowerSyncDatabase({ schema, ...options });
    try {
      await db.init();
    } catch (e) {
      return e?.name ?? String(e);
    }
    db.watch('SELECT count(*) AS n FROM notes', [], { onResult: (r) => seen.push(r.rows._array[0].n) }, { throttleMs: 10 });
    return 'opened';
  },
  async write(id) {
    await db.execute('INSERT INTO notes (id, body) VALUES (?, ?)', [id, `from ${id}`]);
    return (await db.get('SELECT count(*) AS n FROM notes')).n;
  },
  // Whether the watched count reached n within ms.
  async waitSeen(n, ms) {
    const end = Date.now() + ms;
    while (!seen.includes(n)) {
      if (Date.now() > end) return `saw ${JSON.stringify(seen)}`;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return true;
  },
  async transaction(id) {
    return db.writeTransaction(async (tx) => {
      await tx.execute('INSERT INTO notes (id, body) VALUES (?, ?)', [id, 'in a transaction']);
      return (await tx.get('SELECT count(*) AS n FROM notes')).n;
    });
  },
  // Opens a write transaction, writes in it and never ends it (the test
  // then closes this page); resolves once the write ran.
  async hangInTransaction(id) {
    let wrote;
    const written = new Promise((resolve) => { wrote = resolve; });
    db.writeTransaction(async (tx) => {
      await tx.execute('INSERT INTO notes (id, body) VALUES (?, ?)', [id, 'never committed']);
      wrote();
      await new Promise(() => {});
    });
    await written;
    return true;
  },
  async count(id) {
    return (await db.get(`SELECT count(*) AS n FROM notes${id ? ' WHERE id = ?' : ''}`, id ? [id] : [])).n;
  },
  // As the owner, opened swallowing: keeps answers to other tabs (null
  // none, 'commits' those of calls that committed, 'all' every one), as if
  // this tab closed right after running their calls.
  async swallow(kind) {
    dropped = 0;
    const kept = new Promise((resolve) => { acknowledged = resolve; });
    control.postMessage({ keep: kind });
    const late = new Promise((_, reject) => setTimeout(() => reject(new Error('no database Worker of this page answered: is it the owner?')), 5000));
    await Promise.race([kept, late]);
    return true;
  },
  dropped() {
    return dropped;
  },
  // Starts a write ('execute': one INSERT; 'transaction': BEGIN, INSERT,
  // COMMIT) and returns at once; settled() tells how it ended.
  start(kind, id) {
    const insert = (ctx) => ctx.execute('INSERT INTO notes (id, body) VALUES (?, ?)', [id, kind]);
    const write = kind === 'execute' ? insert(db) : db.writeTransaction(insert);
    started = write.then(() => ({ committed: true }), (e) => ({ error: String(e?.message ?? e) }));
    return true;
  },
  settled() {
    return started;
  },
  async integrity() {
    return (await db.get('PRAGMA integrity_check')).integrity_check;
  },
};
