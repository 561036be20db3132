// Unit tests of the adapter's batched line commits (powersync-web/line-batch.js)
// on a real oplite-wasm connection in Node (memory storage): the SDK's line
// transactions (BEGIN IMMEDIATE, powersync_control, COMMIT) go through a
// LineBatch as the host sends them, and the tests read what the connection
// holds and what a new sync iteration asks the service for.
//
//   node --test wasm/test/line-batch.test.mjs      (after scripts/build-wasm-package.sh)
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { open } from '../pkg/oplite.js';
import { LineBatch, isDataLine } from '../powersync-web/line-batch.js';
import { benchmarkStream, bson } from './stream.mjs';

const CONTROL = 'SELECT CAST(powersync_control(?, ?) AS TEXT)';
let unique = 0;

// A connection after powersync_init, the statements it ran, and a LineBatch on it.
async function setUp({ maxMs = 60_000, write } = {}) {
  const db = await open({ name: `batch${process.pid}-${unique++}` });
  for (const sql of ['BEGIN', 'SELECT powersync_init()', 'COMMIT']) await db.execute(sql);
  const ran = [];
  const run = write ?? ((sql, params) => db.executeRaw(sql, params));
  const batch = new LineBatch(db, (sql, params) => { ran.push(sql); return run(sql, params); }, { maxMs });
  let nextLock = 1;
  // One lock of the host: its statements, in order, through the batch; a
  // failed one after a BEGIN is followed by a ROLLBACK, as the SDK's
  // writeTransaction does.
  const lock = async (...statements) => {
    const key = `page:${nextLock++}`;
    const send = (sql, params) => batch.statement(key, sql, params ?? [], () => { ran.push(sql); return run(sql, params ?? []); });
    try {
      for (const [sql, params] of statements) await send(sql, params);
    } catch (e) {
      if (statements[0][0].startsWith('BEGIN')) await send('ROLLBACK');
      throw e;
    } finally {
      await batch.released(key);
    }
  };
  // The SDK's control(): one transaction around powersync_control.
  const control = (op, payload) => lock(['BEGIN IMMEDIATE'], [CONTROL, [op, payload]], ['COMMIT']);
  return { db, batch, ran, lock, control };
}

const count = async (db, sql) => (await db.executeRaw(sql, [])).rawRows[0][0];
const stream = benchmarkStream(3000);
const line = (doc, binary) => (binary ? ['line_binary', bson(doc)] : ['line_text', JSON.stringify(doc)]);

test('isDataLine knows a data line, as BSON and as JSON, from every other line', () => {
  for (const binary of [true, false]) {
    assert.equal(isDataLine(...line(stream.data[0], binary)), true);
    assert.equal(isDataLine(...line(stream.checkpoint, binary)), false);
    assert.equal(isDataLine(...line(stream.complete, binary)), false);
    assert.equal(isDataLine(...line({ token_expires_in: 30 }, binary)), false);
    // A key that only begins with "data".
    assert.equal(isDataLine(...line({ datas: {} }, binary)), false);
  }
  assert.equal(isDataLine('line_binary', bson(stream.data[0]).buffer), true);
  assert.equal(isDataLine('start', JSON.stringify(stream.data[0])), false);
  assert.equal(isDataLine('line_binary', new Uint8Array(3)), false);
});

test("data lines' transactions share one commit; a checkpoint's line and any other statement commit it", async () => {
  const { db, batch, ran, control, lock } = await setUp();
  await control('start', null);
  await control(...line(stream.checkpoint, true));
  ran.length = 0;
  for (const data of stream.data) await control(...line(data, true));
  assert.equal(await db.inTransaction(), true, 'the batch stays open');
  assert.equal(ran.filter((s) => s === 'COMMIT').length, 0);
  assert.equal(ran.filter((s) => s.startsWith('BEGIN')).length, 1);
  assert.equal(await count(db, 'SELECT count(*) FROM ps_oplog'), 3000);
  // The checkpoint's line applies it and commits the batch with it.
  await control(...line(stream.complete, true));
  assert.equal(await db.inTransaction(), false);
  assert.equal(await count(db, 'SELECT count(*) FROM ps_untyped'), 3000);
  assert.deepEqual(batch.counts, { batches: 1, lines: 3 });
  // An app's write after a data line: the batch commits first, then its own transaction runs as sent.
  await control(...line({ data: { ...stream.data[0].data, data: [] } }, true));
  assert.equal(await db.inTransaction(), true);
  ran.length = 0;
  await lock(['BEGIN IMMEDIATE'], ["INSERT INTO ps_kv(key, value) VALUES ('app', 1)"], ['COMMIT']);
  assert.deepEqual(ran, ['COMMIT', 'BEGIN IMMEDIATE', "INSERT INTO ps_kv(key, value) VALUES ('app', 1)", 'COMMIT']);
  assert.equal(await db.inTransaction(), false);
  // A statement outside a transaction commits it too.
  await control(...line(stream.data[1], false));
  await lock(['SELECT 1']);
  assert.equal(await db.inTransaction(), false);
  assert.deepEqual(batch.counts, { batches: 3, lines: 5 });
});

test("a data line's ROLLBACK drops that line only, and oplite ends the iteration; an empty transaction runs nothing", async () => {
  const { db, batch, control, lock, ran } = await setUp();
  await control('start', null);
  await control(...line(stream.checkpoint, false));
  await control(...line(stream.data[0], false));
  await lock(['BEGIN IMMEDIATE'], [CONTROL, line(stream.data[1], false)], ['ROLLBACK']);
  assert.equal(await count(db, 'SELECT count(*) FROM ps_oplog'), 1000);
  // The iteration remembers a line the database no longer has: oplite's core says so at the next one.
  await assert.rejects(control(...line(stream.data[2], false)), /was rolled back/);
  assert.equal(await count(db, 'SELECT count(*) FROM ps_oplog'), 1000);
  ran.length = 0;
  await lock(['BEGIN IMMEDIATE'], ['COMMIT']);
  assert.deepEqual(ran, []);
  assert.equal(await db.inTransaction(), true);
  await batch.commit();
});

test('a batch lost before it committed is downloaded again: the stored positions went with it', async () => {
  const { db, batch, control } = await setUp();
  const first = benchmarkStream(1000);
  await control('start', null);
  await control(...line(first.checkpoint, true));
  await control(...line(first.data[0], true));
  await control(...line(first.complete, true));
  const positions = async () => (await db.executeRaw('SELECT name, last_op FROM ps_buckets ORDER BY name', [])).rawRows;
  const stored = await positions();
  // Lines of a second checkpoint, then the tab goes: the open batch is rolled back.
  const next = benchmarkStream(4000);
  await control(...line(next.checkpoint, true));
  await control(...line(next.data[3], true));
  assert.equal(await db.inTransaction(), true);
  await db.executeRaw('ROLLBACK', []);
  assert.deepEqual(await positions(), stored);
  await db.executeRaw('BEGIN', []);
  const [[instructions]] = (await db.executeRaw(CONTROL, ['start', null])).rawRows;
  await db.executeRaw('COMMIT', []);
  const request = JSON.parse(instructions).find((i) => i.EstablishSyncStream).EstablishSyncStream.request;
  assert.equal(request.buckets.find((b) => b.name === 'bucket0').after, '1000');
  assert.ok(['0', undefined].includes(request.buckets.find((b) => b.name === 'bucket3')?.after));
  await batch.commit();
});

test('a batch commits once it is maxMs old: by its timer between locks, or at the end of the lock inside it', async () => {
  const { db, control, batch } = await setUp({ maxMs: 30 });
  const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  await control('start', null);
  await control(...line(stream.checkpoint, true));
  await control(...line(stream.data[0], true));
  assert.equal(await db.inTransaction(), true);
  await wait(80);
  assert.equal(await db.inTransaction(), false, 'committed by its timer');
  await control(...line(stream.data[1], true));
  const send = (sql, params) => batch.statement('page:slow', sql, params ?? [], () => db.executeRaw(sql, params ?? []));
  await send('BEGIN IMMEDIATE');
  await wait(80);
  assert.equal(await db.inTransaction(), true, 'not while a lock is inside it');
  await send(CONTROL, line(stream.data[2], true));
  await send('COMMIT');
  assert.equal(await db.inTransaction(), false, 'committed at the end of that lock');
  assert.equal(batch.counts.batches, 2);
  assert.equal(await count(db, 'SELECT count(*) FROM ps_oplog'), 3000);
});

test("a batch that fails to commit is rolled back, and the sync client's next line fails", async () => {
  let failNext = false;
  let db;
  const write = async (sql, params) => {
    if (failNext && sql === 'COMMIT') {
      failNext = false;
      throw new Error('disk I/O error');
    }
    return db.executeRaw(sql, params);
  };
  const setup = await setUp({ write });
  db = setup.db;
  const { batch, control, lock } = setup;
  await control('start', null);
  await control(...line(stream.checkpoint, true));
  await control(...line(stream.data[0], true));
  failNext = true;
  // An app's statement commits the batch first: its failure is not the app's.
  await lock(['SELECT 1']);
  assert.equal(await db.inTransaction(), false, 'the failed batch was rolled back');
  assert.equal(await count(db, 'SELECT count(*) FROM ps_oplog'), 0);
  await assert.rejects(control(...line(stream.data[1], true)), /was rolled back \(or its COMMIT failed\)/);
  // The next iteration starts from what is stored.
  await control('start', null);
  await control(...line(stream.checkpoint, true));
  await control(...line(stream.data[1], true));
  assert.equal(await count(db, 'SELECT count(*) FROM ps_oplog'), 1000);
  await batch.commit();
});

test('a lock that ends inside its transaction leaves it open, as without batching', async () => {
  const { db, batch, control } = await setUp();
  await control('start', null);
  await control(...line(stream.checkpoint, true));
  await control(...line(stream.data[0], true));
  // BEGIN only, while a batch is open: the batch commits, the BEGIN runs.
  await batch.statement('page:x', 'BEGIN IMMEDIATE', [], async () => assert.fail('the BEGIN is held back'));
  await batch.released('page:x');
  assert.equal(await db.inTransaction(), true);
  await db.executeRaw("INSERT INTO ps_kv(key, value) VALUES ('later', 1)", []);
  await db.executeRaw('ROLLBACK', []);
  assert.equal(await count(db, 'SELECT count(*) FROM ps_oplog'), 1000, 'the batch had committed');
  assert.equal(await count(db, "SELECT count(*) FROM ps_kv WHERE key = 'later'"), 0);
});

test("a lock's statements sent at once (a host in the page) run in order, in the lock's own transaction", async () => {
  const { db, batch, control } = await setUp();
  await control('start', null);
  await control(...line(stream.checkpoint, true));
  await control(...line(stream.data[0], true));
  const send = (sql) => batch.statement('page:app', sql, [], () => db.executeRaw(sql, []));
  await send('BEGIN IMMEDIATE');
  await Promise.all([
    send("INSERT INTO ps_kv(key, value) VALUES ('a', 1)"),
    send("INSERT INTO ps_kv(key, value) VALUES ('b', 2)"),
  ]);
  await send('COMMIT');
  assert.equal(await db.inTransaction(), false);
  assert.equal(await count(db, "SELECT count(*) FROM ps_kv WHERE key IN ('a', 'b')"), 2);
  assert.equal(await count(db, 'SELECT count(*) FROM ps_oplog'), 1000);
});

test('a lock in the batch whose transaction SQLite rolled back ends cleanly, and the writer goes on', async () => {
  const { db, batch, control, lock } = await setUp();
  await control('start', null);
  await control(...line(stream.checkpoint, true));
  await control(...line(stream.data[0], true));
  const send = (sql, params) => batch.statement('page:gone', sql, params ?? [], () => db.executeRaw(sql, params ?? []));
  await send('BEGIN IMMEDIATE');
  await send(CONTROL, line(stream.data[1], true));
  // What an I/O error does to the whole transaction; then the lock ends without a ROLLBACK.
  await db.executeRaw('ROLLBACK', []);
  await batch.released('page:gone');
  await lock(['BEGIN IMMEDIATE'], ["INSERT INTO ps_kv(key, value) VALUES ('after', 1)"], ['COMMIT']);
  assert.equal(await db.inTransaction(), false);
  assert.equal(await count(db, "SELECT count(*) FROM ps_kv WHERE key = 'after'"), 1);
  await assert.rejects(control(...line(stream.data[2], true)), /was rolled back/);
});
