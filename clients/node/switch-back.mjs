// The way back, as an app takes it (scripts/test-node.sh runs it): the
// official @powersync/node 1.1.0 syncs the two-tables dataset with oplite
// as its core, queues two todos while offline, runs SELECT oplite_uninstall()
// in a write transaction and closes. Reopened on the SDK's bundled core, the
// app must carry on: the core opens the file and takes the schema, the
// service sees stream requests only from the stored positions (no bucket
// from 0, every bucket where oplite left it), the queued todos are uploaded
// once each and in order, and the synced rows are all there.
//
//   OPLITE_SO=target/release/liboplite.so \
//   OPLITE_TEST_SERVER=target/release/oplite-test-server node switch-back.mjs
//
// OPLITE_NODE_ROWS (default 20000) sets the size of the first sync.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import * as sdk from '@powersync/node';
import { checklist } from '../scenario/checks.mjs';
import { dropInSchema } from '../scenario/drop-in.mjs';
import { startService } from './service.mjs';

const so = process.env.OPLITE_SO;
const server = process.env.OPLITE_TEST_SERVER;
const rows = Number(process.env.OPLITE_NODE_ROWS ?? 20000);
if (!so || !server) {
  console.error('set OPLITE_SO (liboplite.so) and OPLITE_TEST_SERVER (the oplite-test-server binary)');
  process.exit(2);
}

const checks = checklist();
const check = (what, ok, detail = '') => checks.check(what, ok ? [] : [detail]);

// Opens the app's database; worker.mjs loads OPLITE_CORE_PATH when set
// (the worker gets this process's environment when it starts).
function open(dir, core) {
  if (core) process.env.OPLITE_CORE_PATH = core;
  else delete process.env.OPLITE_CORE_PATH;
  return new sdk.PowerSyncDatabase({
    schema: dropInSchema(sdk, false),
    database: {
      dbFilename: 'app.db',
      dbLocation: dir,
      openWorker: (_url, options) => new Worker(new URL('./worker.mjs', import.meta.url), options),
    },
    logger: sdk.createConsoleLogger({ minLevel: sdk.LogLevels.warn }),
  });
}

function connector(url) {
  let token = null;
  return {
    async fetchCredentials() {
      const res = await fetch(`${url}/dev/token?ttl=3600`);
      token = await res.text();
      return { endpoint: url, token };
    },
    async uploadData(db) {
      const tx = await db.getNextCrudTransaction();
      if (!tx) return;
      const res = await fetch(`${url}/upload`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Token ${token}` },
        body: JSON.stringify({ batch: tx.crud.map((entry) => entry.toJSON()) }),
      });
      if (!res.ok) throw new Error(`POST /upload: ${res.status} ${await res.text()}`);
      await tx.complete();
    },
  };
}

async function waitFor(what, test, ms = 60_000) {
  const end = Date.now() + ms;
  while (!(await test())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const serviceLog = (url) => fetch(`${url}/dev/log`).then((r) => r.json());
const positions = (db) => db.getAll('SELECT name, last_op FROM ps_buckets ORDER BY name');
const counts = async (db) => ({
  lists: (await db.get('SELECT count(*) AS n FROM lists')).n,
  todos: (await db.get('SELECT count(*) AS n FROM todos')).n,
});

const work = mkdtempSync(join(tmpdir(), 'oplite-switch-back-'));
const { child, url } = await startService(server, rows);
try {
  // 1. oplite: the first sync, then two todos written offline.
  let db = open(work, so);
  await db.connect(connector(url));
  await db.waitForFirstSync();
  const { core } = await db.get('SELECT oplite_version() AS core');
  check('the first sync ran on oplite', /^oplite /.test(core), core);
  await db.disconnect();
  const queued = ['a', 'b'].map((n) => `switch-back-${n}`);
  for (const id of queued) {
    await db.execute('INSERT INTO todos (id, list_id, description, done) VALUES (?, ?, ?, 0)', [id, 'l1', `todo ${id}`]);
  }
  const stored = await positions(db);
  const before = await counts(db);
  const report = JSON.parse((await db.writeTransaction((tx) => tx.get('SELECT oplite_uninstall() AS r'))).r);
  check('oplite_uninstall() reports the core layout and the two queued uploads',
    report.changed === true && report.core_version === 14 && report.uploads_queued === 2, JSON.stringify(report));
  await db.close();

  // 2. The bundled core on the same file.
  const streamsBefore = (await serviceLog(url)).streams.length;
  db = open(work, null);
  await db.init();
  const hasOplite = await db.get("SELECT count(*) AS n FROM pragma_function_list WHERE name = 'oplite_version'");
  check('the reopened database runs on the bundled core', hasOplite.n === 0, (await db.get('SELECT powersync_rs_version() AS v')).v);
  check('the uploads are still queued', (await db.getUploadQueueStats()).count === 2);
  check('the synced rows are all there, with the local writes', JSON.stringify(await counts(db)) === JSON.stringify(before), JSON.stringify(await counts(db)));
  await db.connect(connector(url));
  await waitFor('the queue uploaded', async () => (await db.getUploadQueueStats()).count === 0);
  await waitFor('a stream request', async () => (await serviceLog(url)).streams.length > streamsBefore);
  const log = await serviceLog(url);
  const requests = log.streams.slice(streamsBefore);
  const expected = Object.fromEntries(stored.map((b) => [b.name, String(b.last_op)]));
  check('the core asked for every bucket from where oplite left it',
    requests.length > 0 && requests.every((r) => r.buckets.length === stored.length && r.buckets.every((b) => b.after === expected[b.name])),
    JSON.stringify({ requests, expected }));
  const uploaded = log.uploads.flatMap((u) => u.batch).filter((e) => queued.includes(e.id));
  check('each queued todo was uploaded once, in order',
    uploaded.map((e) => e.id).join() === queued.join() && uploaded.every((e) => e.op === 'PUT' && e.type === 'todos'), JSON.stringify(uploaded));
  await waitFor('synced again', () => db.currentStatus.connected && !db.currentStatus.dataFlowStatus.downloading);
  const after = await counts(db);
  check('the rows survive the sync on the core', after.todos >= before.todos && after.lists === before.lists, JSON.stringify({ before, after }));
  await db.close();
} catch (e) {
  check('the switch back ran', false, e.stack ?? e.message);
} finally {
  child.kill();
  rmSync(work, { recursive: true, force: true });
}
console.log(`switch-back: ${checks.summary()}`);
process.exit(checks.failed === 0 ? 0 : 1);
