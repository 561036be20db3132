// The reader scenario shared by the Node test (idb storage at the module
// level) and the Chromium tests (opfs and idb through the JS API): a writer
// inside a large transaction and a reader from openReader() on the same
// database, coordinated by the lock table of wasm/src/counting.rs.
//
// `db` drives both connections of one fresh database:
//   execute(sql), query(sql) -> rows    on the writer
//   read(sql) -> {value: rows} | {error: {code, message}}    on the reader
//   stats() -> the writer's stats()     (write counters of the module)
import assert from 'node:assert/strict';

// `to - from + 1` rows of 1000 bytes: far beyond a 20-page cache.
const insert = (from, to) =>
  `WITH RECURSIVE c(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM c WHERE i < ${to}) ` +
  'INSERT INTO big SELECT i, zeroblob(1000) FROM c';

async function readerCount(db) {
  const r = await db.read('SELECT count(*) AS n FROM big');
  assert.ok(r.error == null, `the reader's query failed: ${JSON.stringify(r.error)}`);
  return r.value[0].n;
}

async function writerCount(db) {
  return (await db.query('SELECT count(*) AS n FROM big'))[0].n;
}

async function integrity(db) {
  assert.equal((await db.query('PRAGMA integrity_check'))[0].integrity_check, 'ok', 'writer: integrity_check');
  const r = await db.read('PRAGMA integrity_check');
  assert.equal(r.value?.[0]?.integrity_check, 'ok', `reader: integrity_check ${JSON.stringify(r)}`);
}

/** Runs the scenario; the writer ends with 40,000 rows in `big`, no transaction open. */
export async function readerScenario(db) {
  await db.execute('CREATE TABLE big(n INTEGER, pad BLOB); INSERT INTO big VALUES (1, zeroblob(100));');
  assert.equal(await readerCount(db), 1);

  // 1. cache_spill off: the file stays as committed until COMMIT, and the
  // reader reads it, while the writer's journal sits next to it.
  await db.execute('PRAGMA cache_size = 20');
  await db.execute('PRAGMA cache_spill = OFF');
  const before = await db.stats();
  await db.execute('BEGIN');
  await db.execute(insert(2, 20_000));
  const inside = await db.stats();
  assert.equal(inside.dbBytesWritten, before.dbBytesWritten, 'cache_spill=OFF: nothing written to the file before COMMIT');
  assert.ok(inside.journalBytesWritten > before.journalBytesWritten, 'the open transaction has a journal');
  assert.equal(await readerCount(db), 1, 'the reader sees the last committed state');
  const afterRead = await db.stats();
  assert.equal(afterRead.dbBytesWritten, inside.dbBytesWritten, 'the reader did not roll the journal back into the file');
  assert.equal(await writerCount(db), 20_000, 'the writer still sees its own rows');
  await db.execute('COMMIT');
  assert.equal(await writerCount(db), 20_000);
  assert.equal(await readerCount(db), 20_000, 'after COMMIT the reader sees the new rows');
  await integrity(db);

  // 2. cache_spill on: the transaction writes pages into the file early
  // (holding EXCLUSIVE), so the reader gets SQLITE_BUSY, not a half-written file.
  await db.execute('PRAGMA cache_spill = ON');
  const spillBefore = await db.stats();
  await db.execute('BEGIN');
  await db.execute(insert(20_001, 40_000));
  const spilled = await db.stats();
  assert.ok(spilled.dbBytesWritten > spillBefore.dbBytesWritten, 'the transaction spilled pages into the file');
  const refused = await db.read('SELECT count(*) AS n FROM big');
  assert.equal(refused.error?.code, 5, `SQLITE_BUSY while the writer holds EXCLUSIVE: ${JSON.stringify(refused)}`);
  assert.match(refused.error.message, /locked/);
  const afterRefused = await db.stats();
  assert.equal(afterRefused.dbBytesWritten, spilled.dbBytesWritten, 'the refused reader wrote nothing');
  // The reader is idle again: the writer commits.
  await db.execute('COMMIT');
  assert.equal(await writerCount(db), 40_000);
  assert.equal(await readerCount(db), 40_000);
  await integrity(db);
  await db.execute('PRAGMA cache_spill = OFF');
}
