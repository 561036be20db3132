// The reader scenario shared by the Node test (idb storage at the module
// level) and the Chromium tests (opfs and idb through the JS API): a writer
// inside a large transaction and a reader from openReader() on the same
// database, coordinated by the lock table of wasm/src/vfs_wrapper.rs.
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

/** Runs the scenario; the writer ends with 60,001 rows in `big`, no transaction open. */
export async function readerScenario(db) {
  await db.execute('CREATE TABLE big(n INTEGER, pad BLOB); INSERT INTO big VALUES (1, zeroblob(100));');
  assert.equal(await readerCount(db), 1);

  // 1. cache_spill off: the file stays as committed until COMMIT, and the
  // reader reads it, while the writer's journal sits next to it. With the
  // default synchronous=FULL SQLite writes the journal header's magic only
  // when it syncs the journal (before it first writes the file), so until
  // then no connection would take the journal for a hot one anyway; with
  // synchronous=OFF the header is complete at once, and a reader that saw
  // no RESERVED lock would roll it back and delete it.
  await db.execute('PRAGMA cache_size = 20');
  await db.execute('PRAGMA cache_spill = OFF');
  let rows = 1;
  for (const synchronous of ['FULL', 'OFF']) {
    await db.execute(`PRAGMA synchronous = ${synchronous}`);
    const before = await db.stats();
    await db.execute('BEGIN');
    await db.execute(insert(rows + 1, rows + 20_000));
    const inside = await db.stats();
    const what = `synchronous=${synchronous}`;
    assert.equal(inside.dbBytesWritten, before.dbBytesWritten, `${what}: nothing written to the file before COMMIT`);
    assert.ok(inside.journalBytesWritten > before.journalBytesWritten, `${what}: the open transaction has a journal`);
    assert.equal(await readerCount(db), rows, `${what}: the reader sees the last committed state`);
    const afterRead = await db.stats();
    assert.equal(afterRead.dbBytesWritten, inside.dbBytesWritten, `${what}: the reader rolled nothing back into the file`);
    assert.equal(afterRead.journalsDeleted, inside.journalsDeleted, `${what}: the reader deleted no journal`);
    assert.equal(await writerCount(db), rows + 20_000, `${what}: the writer still sees its own rows`);
    await db.execute('COMMIT');
    assert.equal((await db.stats()).journalsDeleted, inside.journalsDeleted + 1, `${what}: COMMIT deleted its journal`);
    rows += 20_000;
    assert.equal(await writerCount(db), rows);
    assert.equal(await readerCount(db), rows, `${what}: after COMMIT the reader sees the new rows`);
    await integrity(db);
  }
  await db.execute('PRAGMA synchronous = FULL');

  // 2. cache_spill on: the transaction writes pages into the file early
  // (holding EXCLUSIVE), appended ones and changed ones. The reader still
  // reads the last committed state, from the before images the wrapper
  // keeps (wasm/src/snapshot.rs), and writes nothing.
  await db.execute('PRAGMA cache_spill = ON');
  const sumBefore = (await db.query('SELECT sum(n) AS s FROM big'))[0].s;
  const spillBefore = await db.stats();
  await db.execute('BEGIN');
  await db.execute('UPDATE big SET n = -n WHERE n % 2 = 0');
  await db.execute(insert(rows + 1, rows + 20_000));
  const spilled = await db.stats();
  assert.ok(spilled.dbBytesWritten > spillBefore.dbBytesWritten + 4_000_000, 'the transaction spilled pages into the file');
  assert.ok(spilled.snapshotBytes > 1_000_000, `before images kept for the changed pages: ${spilled.snapshotBytes}`);
  assert.equal(await readerCount(db), rows, 'the reader sees the last committed state beside a spilled writer');
  const readerSum = await db.read('SELECT sum(n) AS s FROM big');
  assert.equal(readerSum.value?.[0]?.s, sumBefore, `the reader sees no changed row: ${JSON.stringify(readerSum)}`);
  const check = await db.read('PRAGMA integrity_check');
  assert.equal(check.value?.[0]?.integrity_check, 'ok', `reader beside a spilled writer: integrity_check ${JSON.stringify(check)}`);
  const afterRead = await db.stats();
  assert.equal(afterRead.dbBytesWritten, spilled.dbBytesWritten, 'the reader wrote nothing');
  // A read transaction open across the COMMIT keeps its snapshot: the
  // COMMIT does not wait for it, and it sees the new rows once it ends.
  await db.read('BEGIN');
  assert.equal(await readerCount(db), rows, 'the read transaction has the old snapshot');
  await db.execute('COMMIT');
  assert.equal(await readerCount(db), rows, 'the read transaction keeps the old snapshot after COMMIT');
  await db.read('COMMIT');
  rows += 20_000;
  assert.equal(await writerCount(db), rows);
  assert.equal(await readerCount(db), rows, 'after its read transaction the reader sees the new rows');
  const sumAfter = (await db.query('SELECT sum(n) AS s FROM big'))[0].s;
  assert.notEqual(sumAfter, sumBefore);
  assert.equal((await db.read('SELECT sum(n) AS s FROM big')).value?.[0]?.s, sumAfter, 'and the changed ones');
  assert.equal((await db.stats()).snapshotBytes, 0, 'no before image is kept once no reader needs it');
  await integrity(db);
  await db.execute('PRAGMA cache_spill = OFF');
}
