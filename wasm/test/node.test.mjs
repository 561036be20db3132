// Node tests of the web package (memory storage): the golden protocol traces
// the native build passes (test-data/golden), generated streams as JSON and
// BSON lines, checksum mismatches, temp-file spills, and the JS API; the
// reader connection on the idb storage at the module level (Node has no
// IndexedDB, and the module's side of idb does not need it).
//
//   node --test wasm/test/node.test.mjs      (after scripts/build-wasm-package.sh)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { open, load, syncStream, DatabaseLockedError, sqliteVersion } from '../pkg/oplite.js';
import * as wasm from '../pkg/oplite_wasm.js';
import { benchmarkStream, bson, checksumOf } from './stream.mjs';
import { readerScenario } from './reader-scenario.mjs';
import { startServer } from './server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const goldenRoot = path.resolve(here, '../../test-data/golden');
let unique = 0;
const fresh = () => open({ name: `t${process.pid}-${unique++}` });

// The native golden harness's normalisation (extension/tests/common/diff.rs).
function normalise(value) {
  if (Array.isArray(value)) {
    return value
      .filter((item) => !(item?.LogLine?.line ?? '').startsWith('sync_local:'))
      .map(normalise);
  }
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) =>
      [k, k === 'last_synced_at' && typeof v === 'number' ? 0 : normalise(v)]));
  }
  return value;
}

function sqlJson(v) {
  if (v instanceof Uint8Array) return `<${v.length} bytes>`;
  if (typeof v === 'bigint') return Number(v);
  return v;
}

for (const name of fs.readdirSync(goldenRoot).sort()) {
  test(`golden trace ${name} matches the reference core`, async () => {
    const db = await fresh();
    await db.execute("UPDATE ps_kv SET value = '00000000-0000-4000-8000-000000000000' WHERE key = 'client_id'");
    const calls = fs.readFileSync(path.join(goldenRoot, name, 'calls.jsonl'), 'utf8').split('\n').filter((l) => l.trim());
    const expected = fs.readFileSync(path.join(goldenRoot, name, 'expected.jsonl'), 'utf8').split('\n').filter((l) => l.trim());
    assert.equal(calls.length, expected.length);
    for (let i = 0; i < calls.length; i++) {
      const call = JSON.parse(calls[i]);
      let actual;
      if (call.sql != null) {
        if (call.sql.trimStart().toUpperCase().startsWith('SELECT')) {
          const rows = await db.query(call.sql);
          actual = { rows: rows.map((r) => Object.values(r).map(sqlJson)) };
        } else {
          await db.execute(call.sql);
          actual = { sql: 'ok' };
        }
      } else {
        try {
          const value = await db.control(call.op, call.payload);
          actual = Array.isArray(value) ? normalise(value) : { value: sqlJson(value) };
        } catch (e) {
          actual = { error: e.code, message: e.message };
        }
      }
      const wanted = JSON.parse(expected[i]);
      // expected.jsonl holds the reference core's answers: of an error,
      // only the code and the function named in front must match.
      const shape = (v) => (v && v.error != null ? { error: v.error, function: v.message.split(':')[0] } : v);
      assert.deepEqual(shape(actual), shape(wanted), `${name} call ${i + 1}: ${calls[i].slice(0, 200)}`);
    }
    await db.close();
  });
}

// Seeded sessions recorded on the native build (wasm/native/src/bin/
// record-sessions.rs: the sessions, schema and local writes of the native
// differential test, and checked against the reference core by
// `record-sessions --check`). Every answer (for SQL: the rows, or how many
// rows a batch changed) and the final dumps must match. Set OPLITE_SESSIONS
// to the directory the recorder wrote (scripts/test-wasm.sh does); without
// it the test fails: a run that replays nothing checks nothing.
const sessionsDir = process.env.OPLITE_SESSIONS;
const sessionFiles = sessionsDir && fs.existsSync(sessionsDir)
  ? fs.readdirSync(sessionsDir).filter((f) => f.endsWith('.jsonl')).sort()
  : [];
if (sessionFiles.length === 0) {
  test('seeded sessions recorded on the native build', () => {
    assert.fail(`no recorded sessions in OPLITE_SESSIONS (${sessionsDir ?? 'not set'}): scripts/test-wasm.sh records them`);
  });
}
for (const file of sessionFiles) {
  test(`seeded session ${file} matches the native build`, async () => {
    const steps = fs.readFileSync(path.join(sessionsDir, file), 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
    const db = await fresh();
    const seenActual = { status: null };
    const seenExpected = { status: null };
    for (const [i, step] of steps.entries()) {
      const dumps = step.tables ?? step.shared;
      if (dumps) {
        for (const [table, { sql, rows }] of Object.entries(dumps)) {
          const actual = (await db.query(sql)).map((r) => Object.values(r).map(sqlJson));
          assert.deepEqual(actual, rows, `${file}: table ${table}`);
        }
        continue;
      }
      const { call, expect } = step;
      let actual;
      if (call.sql != null) {
        actual = await runSql(db, call.sql);
      } else {
        const payload = call.bson != null ? Uint8Array.from(Buffer.from(call.bson, 'hex')) : call.payload;
        try {
          const value = await db.control(call.op, payload);
          actual = Array.isArray(value) ? normalise(value) : { value: sqlJson(value) };
        } catch (e) {
          actual = { error: e.code };
        }
      }
      assert.deepEqual(withoutRepeatedStatus(actual, seenActual), withoutRepeatedStatus(expect, seenExpected),
        `${file} step ${i + 1}: ${JSON.stringify(call).slice(0, 300)}`);
    }
    await db.close();
  });
}

// A recorded SQL step on the wasm build, answered as the recorder answers
// it: a SELECT's rows, or how many rows the batch changed; an error's code.
async function runSql(db, sql) {
  const totalChanges = async () => (await db.query('SELECT total_changes() AS n'))[0].n;
  try {
    if (sql.startsWith('SELECT')) return { rows: (await db.query(sql)).map((r) => Object.values(r).map(sqlJson)) };
    const before = await totalChanges();
    await db.execute(sql);
    return { sql: 'ok', changes: sqlJson(await totalChanges()) - sqlJson(before) };
  } catch (e) {
    return { error: e.code };
  }
}

// Instructions without an UpdateSyncStatus equal to the last one seen
// (`seen.status`), timestamps aside: the core sends a status only when it
// changed, and a last_synced_at in seconds changes it or not depending on
// whether the recording and the replay cross a second there.
function withoutRepeatedStatus(value, seen) {
  if (!Array.isArray(value)) return value;
  return value.filter((item) => {
    if (item?.UpdateSyncStatus == null) return true;
    const key = JSON.stringify(normalise(item));
    if (key === seen.status) return false;
    seen.status = key;
    return true;
  });
}

// Feeds a generated stream through powersync_control, as text or BSON lines.
async function feed(db, lines, binary) {
  const out = [];
  for (const line of lines) {
    out.push(await db.control(binary ? 'line_binary' : 'line_text', binary ? bson(line) : JSON.stringify(line)));
  }
  return out;
}

const kinds = (instructions) => instructions.map((i) => Object.keys(i)[0]);

async function contentHash(db) {
  const rows = await db.query('SELECT type, id, data FROM ps_untyped ORDER BY type, id');
  let h = 0;
  for (const r of rows) for (const ch of `${r.type}|${r.id}|${r.data}\n`) h = (Math.imul(h, 31) + ch.charCodeAt(0)) | 0;
  return { count: rows.length, h };
}

for (const binary of [false, true]) {
  test(`start, checkpoint, data, checkpoint_complete apply 20k ops (${binary ? 'BSON' : 'JSON'} lines)`, async () => {
    const db = await fresh();
    const start = await db.control('start', null);
    assert.deepEqual(kinds(start), ['UpdateSyncStatus', 'EstablishSyncStream']);
    const { client_id: clientId, buckets } = start[1].EstablishSyncStream.request;
    assert.deepEqual(buckets, []);
    assert.equal(clientId, (await db.get('SELECT powersync_client_id() AS id')).id);

    const s = benchmarkStream(20_000);
    const [afterCheckpoint] = await feed(db, [s.checkpoint], binary);
    const progress = afterCheckpoint[0].UpdateSyncStatus.status.downloading.buckets.prio_3;
    assert.equal(progress.target_count, 20_000);
    assert.equal(progress.since_last, 0);

    const afterData = await feed(db, s.data, binary);
    assert.equal(afterData.at(-1)[0].UpdateSyncStatus.status.downloading.buckets.prio_3.since_last, 20_000);
    assert.equal((await db.get('SELECT count(*) AS n FROM ps_oplog')).n, 20_000);
    assert.equal((await db.get('SELECT count(*) AS n FROM ps_untyped')).n, 0, 'nothing applied before checkpoint_complete');

    const [complete] = await feed(db, [s.complete], binary);
    assert.ok(kinds(complete).includes('DidCompleteSync'), JSON.stringify(complete));
    assert.equal((await db.get('SELECT count(*) AS n FROM ps_untyped')).n, 20_000);
    const row = await db.get("SELECT data FROM ps_untyped WHERE type = 'thisisatable' AND id = 'thisismyrowid12345'");
    assert.deepEqual(JSON.parse(row.data), { n: 12345 });
    const buckets10 = await db.query('SELECT name, last_applied_op, add_checksum, op_checksum FROM ps_buckets ORDER BY name');
    assert.equal(buckets10.length, 10);
    for (const b of buckets10) {
      const expected = s.checkpoint.checkpoint.buckets.find((x) => x.bucket === b.name);
      assert.equal((b.add_checksum + b.op_checksum) >>> 0, expected.checksum, b.name);
    }
    assert.equal(buckets10.find((b) => b.name === 'bucket9').last_applied_op, 20_000);
    assert.equal(checksumOf(3), 51);
    await db.close();
  });
}

test('JSON and BSON lines store the same rows', async () => {
  const results = [];
  for (const binary of [false, true]) {
    const db = await fresh();
    await db.control('start', null);
    const s = benchmarkStream(5_000);
    await feed(db, [s.checkpoint, ...s.data, s.complete], binary);
    results.push(await contentHash(db));
    await db.close();
  }
  assert.equal(results[0].count, 5_000);
  assert.deepEqual(results[0], results[1]);
});

test('a checksum mismatch applies nothing, drops the bucket and closes the stream', async () => {
  const db = await fresh();
  await db.control('start', null);
  const s = benchmarkStream(10_000);
  s.checkpoint.checkpoint.buckets[3].checksum = (s.checkpoint.checkpoint.buckets[3].checksum + 1) >>> 0;
  await feed(db, [s.checkpoint, ...s.data], false);
  const [complete] = await feed(db, [s.complete], false);
  assert.ok(!kinds(complete).includes('DidCompleteSync'), JSON.stringify(complete));
  assert.ok(kinds(complete).includes('CloseSyncStream'), JSON.stringify(complete));
  const warning = complete.find((i) => i.LogLine)?.LogLine;
  assert.equal(warning.severity, 'WARNING');
  assert.match(warning.line, /bucket3/);
  assert.equal((await db.get('SELECT count(*) AS n FROM ps_untyped')).n, 0);
  const names = (await db.query('SELECT name FROM ps_buckets ORDER BY name')).map((r) => r.name);
  assert.ok(!names.includes('bucket3'), `bucket3 kept: ${names}`);
  // The next connection asks for the good buckets from where they are.
  await db.control('stop', null);
  const restart = await db.control('start', null);
  const request = restart.find((i) => i.EstablishSyncStream).EstablishSyncStream.request;
  assert.ok(!request.buckets.some((b) => b.name === 'bucket3'));
  await db.close();
});

test('a line before start is SQLITE_MISUSE and changes nothing', async () => {
  const db = await fresh();
  const s = benchmarkStream(1_000);
  await assert.rejects(db.control('line_text', JSON.stringify(s.checkpoint)), (e) => e.name === 'SqliteError' && e.code === 21);
  assert.equal((await db.get('SELECT count(*) AS n FROM ps_buckets')).n, 0);
  await db.close();
});

test('syncing 100k ops writes no temporary-file pages, even with temp_store=FILE and a small cache', async () => {
  const server = await startServer();
  const db = await fresh();
  await db.execute('PRAGMA temp_store = FILE; PRAGMA cache_size = -2000;');
  const before = await db.stats();
  const r = await syncStream(db, { url: `${server.url}/sync/stream?ops=100000` });
  const after = await db.stats();
  await server.close();
  assert.ok(r.completed);
  assert.equal((await db.get('SELECT count(*) AS n FROM ps_untyped')).n, 100_000);
  assert.equal(after.tempBytesWritten - before.tempBytesWritten, 0);
  assert.ok(after.dbBytesWritten > before.dbBytesWritten);
  await db.close();
});

test('syncStream over HTTP: BSON stream, progress, resume asks only for what is missing', async () => {
  const server = await startServer();
  const db = await fresh();
  const seen = [];
  const r = await syncStream(db, { url: `${server.url}/sync/stream?ops=30000`, binary: true, onStatus: (s) => seen.push(s) });
  assert.ok(r.completed);
  assert.equal(r.lines, 32);
  assert.ok(seen.some((s) => s.downloading?.buckets?.prio_3?.since_last === 30_000));
  assert.equal((await db.get('SELECT count(*) AS n FROM ps_untyped')).n, 30_000);
  const again = await syncStream(db, { url: `${server.url}/sync/stream?ops=30000` });
  assert.ok(again.completed);
  assert.equal(again.lines, 2, 'only checkpoint and checkpoint_complete the second time');
  await server.close();
  await db.close();
});

test('execute and query bind positional and named parameters and round-trip values', async () => {
  const db = await fresh();
  await db.execute('CREATE TABLE v(i, r, t, b, n, big)');
  const blob = Uint8Array.of(0, 1, 255);
  const r = await db.execute('INSERT INTO v VALUES (?, ?, ?, ?, ?, ?)', [42, 1.5, 'text', blob, null, 2n ** 60n]);
  assert.deepEqual(r, { changes: 1, lastInsertRowid: 1 });
  await db.execute('INSERT INTO v(i, t) VALUES (:i, @t)', { i: true, t: 'named' });
  const rows = await db.query('SELECT * FROM v ORDER BY rowid');
  assert.deepEqual(rows[0], { i: 42, r: 1.5, t: 'text', b: blob, n: null, big: 2n ** 60n });
  assert.equal(rows[1].i, 1);
  assert.equal(rows[1].t, 'named');
  assert.equal((await db.get('SELECT $x + 1 AS y', { x: 41 })).y, 42);
  // Parameters given no value are NULL; values past them are not bound.
  assert.deepEqual(await db.query('SELECT ? AS a, ? AS b', [1]), [{ a: 1, b: null }]);
  assert.deepEqual(await db.query('SELECT ? AS a', [1, 2]), [{ a: 1 }]);
  assert.deepEqual(await db.query('SELECT :x AS x, :y AS y', { x: 3 }), [{ x: 3, y: null }]);
  await assert.rejects(db.query('SELEC 1'), (e) => e.name === 'SqliteError' && e.code === 1);
  await assert.rejects(db.query('SELECT ?', [{}]), /cannot bind/);
  await db.close();
});

test('executeRaw returns rows as arrays in column order, repeated and numeric names kept', async () => {
  const db = await fresh();
  // Object rows would lose the repeated name and put "0" first.
  const raw = await db.executeRaw('SELECT 1 AS b, 2 AS a, 3 AS b, 4 AS "0", ? AS blob', [Uint8Array.of(7)]);
  assert.deepEqual(raw.columnNames, ['b', 'a', 'b', '0', 'blob']);
  assert.deepEqual(raw.rawRows, [[1, 2, 3, 4, Uint8Array.of(7)]]);
  await db.execute('CREATE TABLE t(x)');
  const empty = await db.executeRaw('SELECT x, rowid FROM t');
  assert.deepEqual(empty.columnNames, ['x', 'rowid']);
  assert.deepEqual(empty.rawRows, []);
  const insert = await db.executeRaw('INSERT INTO t VALUES (?), (?) RETURNING x', [2n ** 60n, null]);
  assert.deepEqual(insert.rawRows, [[2n ** 60n], [null]]);
  assert.equal(insert.changes, 2);
  assert.equal(insert.lastInsertRowid, 2);
  await db.transaction((tx) => {
    assert.deepEqual(tx.executeRaw('SELECT count(*) AS n FROM t').rawRows, [[2]]);
  });
  assert.deepEqual((await db.executeRaw('SELECT ? AS x')).rawRows, [[null]]);
  await db.close();
});

test('a cached statement follows a schema change; EXPLAIN shows the schema as it is', async () => {
  const db = await fresh();
  await db.execute('CREATE TABLE s(a)');
  assert.deepEqual((await db.executeRaw('SELECT * FROM s')).columnNames, ['a']);
  await db.execute('INSERT INTO s VALUES (1)');
  await db.execute('ALTER TABLE s ADD COLUMN b');
  // The same SQL again: SQLite prepares the cached statement anew, with or without rows.
  assert.deepEqual(await db.query('SELECT * FROM s'), [{ a: 1, b: null }]);
  assert.deepEqual((await db.executeRaw('SELECT * FROM s WHERE a = 2')).columnNames, ['a', 'b']);
  const plan = async () => (await db.query('EXPLAIN QUERY PLAN SELECT * FROM s WHERE a = 1')).map((r) => r.detail).join();
  await db.execute('CREATE INDEX s_a ON s(a)');
  assert.match(await plan(), /s_a/);
  await db.execute('DROP INDEX s_a');
  assert.doesNotMatch(await plan(), /s_a/);
  await db.close();
});

test('transactions commit, roll back on throw, and notify changed tables after commit only', async () => {
  const db = await fresh();
  await db.execute('CREATE TABLE a(x); CREATE TABLE b(x);');
  const heard = [];
  const stop = db.onTablesChanged((tables) => heard.push(tables));
  const value = await db.transaction((tx) => {
    tx.execute('INSERT INTO a VALUES (1)');
    tx.execute('INSERT INTO b VALUES (1)');
    assert.deepEqual(heard, [], 'no notification inside the transaction');
    return tx.get('SELECT count(*) AS n FROM a').n;
  });
  assert.equal(value, 1);
  assert.deepEqual(heard, [['a', 'b']]);
  await assert.rejects(db.transaction(async (tx) => {
    tx.execute('INSERT INTO a VALUES (2)');
    await new Promise((r) => setTimeout(r, 5));
    throw new Error('boom');
  }), /boom/);
  assert.equal((await db.get('SELECT count(*) AS n FROM a')).n, 1, 'rolled back');
  assert.deepEqual(heard, [['a', 'b']], 'no notification for a rollback');
  await db.execute('INSERT INTO a VALUES (3)');
  assert.deepEqual(heard.at(-1), ['a']);
  // Synced rows: the tables the apply changed (ps_untyped until schemas exist).
  await db.control('start', null);
  const s = benchmarkStream(2_000);
  await feed(db, [s.checkpoint, ...s.data, s.complete], false);
  assert.ok(heard.some((t) => t.includes('ps_untyped') || t.some((n) => n.startsWith('ps_data__'))), JSON.stringify(heard));
  stop();
  const count = heard.length;
  await db.execute('INSERT INTO a VALUES (4)');
  assert.equal(heard.length, count, 'unsubscribed');
  await db.close();
});

test('calls queue behind a running transaction', async () => {
  const db = await fresh();
  await db.execute('CREATE TABLE q(x)');
  const order = [];
  const tx = db.transaction(async (t) => {
    t.execute('INSERT INTO q VALUES (1)');
    await new Promise((r) => setTimeout(r, 20));
    order.push('tx');
  });
  const read = db.get('SELECT count(*) AS n FROM q').then((r) => { order.push(`read ${r.n}`); });
  await Promise.all([tx, read]);
  assert.deepEqual(order, ['tx', 'read 1']);
  await db.close();
});

test('one connection per memory database; closed databases refuse calls', async () => {
  const name = `dup${process.pid}`;
  const db = await open({ name });
  await assert.rejects(open({ name }), DatabaseLockedError);
  await db.close();
  await assert.rejects(db.query('SELECT 1'), /closed/);
  await assert.rejects(db.transaction(() => 1), /closed/);
  const again = await open({ name });
  assert.equal((await again.get("SELECT count(*) AS n FROM sqlite_master WHERE name = 'ps_oplog'")).n, 1);
  await again.close();
  await assert.rejects(open({ name: '../x' }), /invalid database name/);
  await assert.rejects(open({ name: 'x', vfs: 'opfs' }), /Web Locks|dedicated Worker/);
});

test('idb (module level): a reader sees the last committed state during a write, also beside a spilled writer', async () => {
  await load();
  const name = `reader${process.pid}`;
  const writer = await wasm.openDatabase(name, 'idb');
  const reader = writer.openReader();
  try {
    await readerScenario({
      execute: async (sql) => writer.execute(sql, null),
      query: async (sql) => writer.query(sql, null),
      read: async (sql) => {
        try {
          return { value: reader.query(sql, null) };
        } catch (e) {
          return { error: { code: e.code, message: e.message } };
        }
      },
      stats: async () => writer.stats(false),
    });
    // The reader only reads, takes no write lock, and runs no powersync_init.
    assert.throws(() => reader.execute('INSERT INTO big VALUES (0, NULL)', null), (e) => e.code === 8);
    writer.execute('BEGIN IMMEDIATE', null);
    assert.equal(reader.query('SELECT count(*) AS n FROM big', null)[0].n, 60_001);
    writer.execute('INSERT INTO big VALUES (0, NULL)', null);
    writer.execute('COMMIT', null);
    assert.equal(reader.query('SELECT count(*) AS n FROM big', null)[0].n, 60_002);
    assert.throws(() => reader.openReader(), /not on a reader/);
    // Two readers read side by side.
    const second = writer.openReader();
    assert.equal(second.query('SELECT count(*) AS n FROM big', null)[0].n, 60_002);
    second.close();
    assert.throws(() => writer.close(), /reader\(s\) opened with openReader\(\) are still open/);
    reader.close();
    assert.throws(() => reader.query('SELECT 1', null), /closed/);
    writer.close();
  } finally {
    reader.free();
    writer.free();
    wasm.mirrorForget(name);
  }
});

test('idb (module level): a connection whose snapshot is stale reads on but may not write', async () => {
  await load();
  const name = `stale${process.pid}`;
  const a = await wasm.openDatabase(name, 'idb');
  const b = await wasm.openDatabase(name, 'idb');
  const count = (db) => db.query('SELECT count(*) AS n FROM t', null)[0].n;
  try {
    a.execute('CREATE TABLE t(x)', null);
    b.execute('BEGIN', null);
    assert.equal(count(b), 0);
    // a commits while b's read transaction is open: it does not wait for b.
    a.execute('INSERT INTO t VALUES (1)', null);
    assert.equal(count(b), 0, "b's snapshot predates a's insert");
    assert.throws(() => b.execute('INSERT INTO t VALUES (2)', null), (e) => e.code === 5,
      'a write on a stale snapshot is refused with SQLITE_BUSY');
    b.execute('ROLLBACK', null);
    // A writer that never unlocks would keep every reader on an old version.
    assert.throws(() => b.execute('PRAGMA locking_mode = EXCLUSIVE', null), /locking_mode = EXCLUSIVE is not supported/);
    b.execute('PRAGMA locking_mode = NORMAL', null);
    b.execute('INSERT INTO t VALUES (2)', null);
    assert.equal(count(a), 2);
    assert.equal(count(b), 2);
    assert.equal(a.stats(false).snapshotBytes, 0);
  } finally {
    b.close();
    a.close();
    b.free();
    a.free();
    wasm.mirrorForget(name);
  }
});

test('idb (module level): a batch copied out in slices is the committed state it began at, whatever is written meanwhile', async () => {
  await load();
  const name = `batch${process.pid}`;
  const copy = `batchcopy${process.pid}`;
  const db = await wasm.openDatabase(name, 'idb');
  let restored = null;
  try {
    db.execute('CREATE TABLE t(n INTEGER, pad BLOB)', null);
    db.execute("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 5000) INSERT INTO t SELECT i, zeroblob(1000) FROM c", null);
    const before = db.query('SELECT count(*) AS n, sum(n) AS s FROM t', null)[0];
    const size = db.beginBatch();
    assert.ok(size > 5_000_000, `the batch covers the file: ${size}`);
    assert.equal(db.beginBatch(), undefined, 'one batch at a time');
    const taken = new Map();
    const take = (max) => {
      const { indices, chunks } = db.takeChunks(max);
      indices.forEach((index, i) => taken.set(index, chunks[i]));
      return indices.length;
    };
    assert.equal(take(10), 10);
    // Rewrite every row, grow the file, and spill inside an open transaction.
    db.execute('UPDATE t SET n = -n, pad = zeroblob(900)', null);
    db.execute("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3000) INSERT INTO t SELECT i, zeroblob(1000) FROM c", null);
    db.execute('PRAGMA cache_size = 10', null);
    db.execute('BEGIN', null);
    db.execute('DELETE FROM t WHERE n > 0', null);
    while (take(7) > 0);
    db.execute('ROLLBACK', null);
    assert.equal(take(7), 0, 'the batch has ended');
    assert.ok(taken.size >= Math.ceil(size / wasm.idbChunkSize()) - 1, `chunks taken: ${taken.size}`);
    for (const [index, bytes] of taken) wasm.mirrorLoadChunk(copy, index, bytes);
    wasm.mirrorSetSize(copy, size);
    restored = await wasm.openDatabase(copy, 'idb');
    assert.deepEqual(restored.query('SELECT count(*) AS n, sum(n) AS s FROM t', null)[0], before);
    assert.equal(restored.query('PRAGMA integrity_check', null)[0].integrity_check, 'ok');
    // The writes made meanwhile are the next batch.
    assert.ok(db.beginBatch() > size);
    assert.ok(take(1_000_000) > 0);
  } finally {
    restored?.close();
    restored?.free();
    db.close();
    db.free();
    wasm.mirrorForget(name);
    wasm.mirrorForget(copy);
  }
});

test('openReader: a memory database and a closed one refuse', async () => {
  const db = await fresh();
  await assert.rejects(db.openReader(), /memory database; readers need the 'opfs' or 'idb' storage/);
  await db.close();
  await assert.rejects(db.openReader(), /closed/);
});

// oplite has powersync_replace_schema (the schema landed before the web
// package): a build without it fails these tests instead of skipping them.
async function assertHasReplaceSchema(db) {
  const has = await db.get("SELECT count(*) AS n FROM pragma_function_list WHERE name = 'powersync_replace_schema'");
  assert.ok(has.n > 0, 'powersync_replace_schema is missing from this build');
}

test('a local write queues a ps_crud entry', async () => {
  const db = await fresh();
  await assertHasReplaceSchema(db);
  const schema = { tables: [{ name: 'todos', columns: [{ name: 'title', type: 'text' }] }] };
  await db.transaction((tx) => tx.execute('SELECT powersync_replace_schema(?)', [JSON.stringify(schema)]));
  await db.execute("INSERT INTO todos(id, title) VALUES (uuid(), 'write tests')");
  const crud = await db.query('SELECT data FROM ps_crud');
  assert.equal(crud.length, 1);
  assert.equal(JSON.parse(crud[0].data).op, 'PUT');
  await db.close();
});

test('with a schema, synced rows land in the typed view and notifications name its data table', async () => {
  const db = await fresh();
  await assertHasReplaceSchema(db);
  const schema = { tables: [{ name: 'thisisatable', columns: [{ name: 'n', type: 'integer' }] }] };
  await db.transaction((tx) => tx.execute('SELECT powersync_replace_schema(?)', [JSON.stringify(schema)]));
  const heard = [];
  db.onTablesChanged((tables) => heard.push(...tables));
  await db.control('start', null);
  const s = benchmarkStream(3_000);
  await feed(db, [s.checkpoint, ...s.data, s.complete], false);
  assert.equal((await db.get('SELECT count(*) AS n FROM thisisatable')).n, 3_000);
  assert.deepEqual(await db.get("SELECT n FROM thisisatable WHERE id = 'thisismyrowid42'"), { n: 42 });
  assert.equal((await db.get('SELECT count(*) AS n FROM ps_untyped')).n, 0);
  assert.ok(heard.includes('ps_data__thisisatable'), JSON.stringify([...new Set(heard)]));
  await db.close();
});

test('the module reports its SQLite and oplite versions', async () => {
  const db = await fresh();
  assert.match(sqliteVersion(), /^3\.\d+\.\d+$/);
  const { v } = await db.get('SELECT powersync_rs_version() AS v');
  assert.match(v, /^0\.5\.\d+\//);
  await db.close();
});
