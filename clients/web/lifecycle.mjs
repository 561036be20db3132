// The browser side of the web test's lifecycle checks (run.mjs, browser.mjs
// lifecycle()): an oplite database through @powersync/web that outlives
// its page. window.lifecycle's calls each open the database `name`, do
// one thing, and leave it open: the test then reloads or closes the page,
// which ends the page and its database Worker without db.close(), as a
// user closing a tab does.
//
//   sync({vfs, name})        connect, wait for the first sync, then queue
//                            one local write the connector never uploads
//   openOnly({vfs, name})    open the database and keep it for the next call
//   downloaded({vfs, name})  connect; resolves once every op of the first
//                            checkpoint has arrived and its apply is under way
//   look({vfs, name})        open without connecting: what the database
//                            holds; closes it
//   resync({vfs, name})      connect and wait for the first sync
//   connectAtOnce({vfs, name}) the same, connect() called before init()
//   midDownload, connectAndWait, finish: with multiTab, a syncing tab
//                            closed mid-download and a second tab that
//                            takes over the database and the sync
import * as sdk from '@powersync/web';
import { databaseOptions } from './databases.mjs';
import { dropInSchema } from '../scenario/drop-in.mjs';

// A write queued after the sync: it must survive a reload.
const LOCAL_TODO = "INSERT INTO todos (id, list_id, description, done) VALUES ('kept', 'list1', 'queued before the reload', 0)";

// core: databases.mjs's name (oplite unless given).
async function open({ vfs, name, multiTab = false, core = 'oplite' }) {
  const db = new sdk.PowerSyncDatabase({ schema: dropInSchema(sdk, false), ...databaseOptions({ core, vfs, dbFilename: name, multiTab }) });
  await db.init();
  return db;
}

// Credentials from the service behind the page's origin; uploads never
// finish, so what is queued stays queued.
const connector = {
  async fetchCredentials() {
    const token = await (await fetch(`${location.origin}/dev/token?ttl=3600`)).text();
    return { endpoint: location.origin, token };
  },
  uploadData: () => new Promise(() => {}),
};

async function contents(db) {
  return {
    rows: (await db.get('SELECT (SELECT count(*) FROM lists) + (SELECT count(*) FROM todos) AS n')).n,
    queued: (await db.getAll('SELECT data FROM ps_crud ORDER BY id')).map((r) => JSON.parse(r.data).id),
    buckets: (await db.get('SELECT count(*) AS n FROM ps_buckets')).n,
    integrity: (await db.get('PRAGMA integrity_check')).integrity_check,
    hasSynced: db.currentStatus.hasSynced ?? false,
  };
}

// The database of this page's connectAndWait, for finish.
let waiting = null;
// The database openOnly opened, for the next call.
let opened = null;
const openedOr = async (config) => {
  const db = opened ?? (await open(config));
  opened = null;
  return db;
};

window.lifecycle = {
  // multiTab: connect and resolve once part of the first checkpoint has
  // arrived (the test then closes this page mid-download).
  async midDownload(config) {
    const db = await open(config);
    const partly = new Promise((resolve) => {
      db.registerListener({
        statusChanged(status) {
          const p = status.downloadProgress;
          if (p && p.downloadedOperations > 0 && p.downloadedOperations < p.totalOperations) resolve({ downloaded: p.downloadedOperations, total: p.totalOperations });
        },
      });
    });
    await db.connect(connector, { retryDelayMs: 200 });
    return partly;
  },
  // multiTab: connect while another tab syncs (the SDK's sync lock makes
  // this one wait); finish() then waits for its first sync.
  async connectAndWait(config) {
    waiting = await openedOr(config);
    // Not awaited: connect() waits for the SDK's sync lock, which the
    // syncing tab holds.
    waiting.connect(connector, { retryDelayMs: 200 }).catch(() => {});
    return (await waiting.get('SELECT count(*) AS n FROM ps_buckets')).n;
  },
  async finish() {
    await waiting.waitForFirstSync();
    return contents(waiting);
  },
  async sync(config) {
    const db = await open(config);
    await db.connect(connector, { retryDelayMs: 200 });
    await db.waitForFirstSync();
    await db.execute(LOCAL_TODO);
    return contents(db);
  },
  // Opened ahead, so that a later call starts at once (a second tab must
  // be ready before the first tab's apply ends).
  async openOnly(config) {
    opened = await open(config);
    return 'opened';
  },
  async downloaded(config) {
    const db = await openedOr(config);
    const arrived = new Promise((resolve) => {
      db.registerListener({
        statusChanged(status) {
          const p = status.downloadProgress;
          if (p && p.totalOperations > 0 && p.downloadedOperations === p.totalOperations && !status.hasSynced) resolve(p.totalOperations);
        },
      });
    });
    await db.connect(connector, { retryDelayMs: 200 });
    const ops = await arrived;
    // checkpoint_complete follows the last data line: 30 ms later the
    // apply is under way (a 100k-row apply takes about 300 ms in oplite
    // on a fast machine, over a second in the SDK's own database).
    await new Promise((resolve) => setTimeout(resolve, 30));
    return { ops, synced: db.currentStatus.hasSynced ?? false };
  },
  async look(config) {
    const db = await open(config);
    try {
      return await contents(db);
    } finally {
      await db.close();
    }
  },
  // connect() at once, as apps do, without waiting for init() first.
  async connectAtOnce({ vfs, name, core = 'oplite' }) {
    const db = new sdk.PowerSyncDatabase({ schema: dropInSchema(sdk, false), ...databaseOptions({ core, vfs, dbFilename: name, multiTab: false }) });
    await db.connect(connector, { retryDelayMs: 200 });
    await db.waitForFirstSync();
    return contents(db);
  },
  async resync(config) {
    const db = await open(config);
    await db.connect(connector, { retryDelayMs: 200 });
    await db.waitForFirstSync();
    return contents(db);
  },
};
