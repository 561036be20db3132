// Browser tests in headless Chromium (Debian's chromium, playwright-core):
// the demo page's worker syncs generated streams into OPFS and IndexedDB,
// the page reloads and the rows are still there; a second tab cannot open a
// database the first has open (clear error, or waits), and nothing breaks;
// a reader from openReader() reads the committed state during a write; an
// encrypted database holds no plaintext and refuses a wrong or missing key.
//
//   node --test --test-concurrency=1 wasm/test/browser.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, call, attempt } from './browser.mjs';
import { readerScenario } from './reader-scenario.mjs';
import { storedNeedles } from './stored-bytes.mjs';

const OPS = Number(process.env.OPLITE_BROWSER_OPS || 100_000);
let browser;

before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

async function checkRows(page, ops) {
  assert.equal(await call(page, 'count'), ops);
  const [first] = await call(page, 'query', { sql: "SELECT data FROM ps_untyped WHERE id = 'thisismyrowid' || ?", params: [ops] });
  assert.deepEqual(JSON.parse(first.data), { n: ops });
  const [check] = await call(page, 'query', { sql: 'PRAGMA integrity_check' });
  assert.equal(check.integrity_check, 'ok');
}

for (const vfs of ['opfs', 'idb']) {
  test(`${vfs}: sync ${OPS} ops, reload the page, the rows are still there`, { timeout: 300_000 }, async () => {
    const page = await browser.newPage();
    const name = `reload-${vfs}`;
    const info = await call(page, 'open', { name, vfs });
    assert.equal(info.vfs, vfs);
    const r = await call(page, 'sync', { ops: OPS });
    assert.ok(r.completed, JSON.stringify(r));
    assert.equal(r.tempBytesWritten, 0, 'no temporary-file pages');
    console.log(`  ${vfs}: ${OPS} ops in ${r.totalMs.toFixed(0)} ms, apply ${r.applyMs.toFixed(0)} ms, longest call ${r.longestCallMs.toFixed(0)} ms`);
    await checkRows(page, OPS);

    await page.reload();
    await page.waitForFunction(() => window.demo != null);
    await call(page, 'open', { name, vfs });
    await checkRows(page, OPS);
    // Syncing again downloads nothing new: the buckets were stored too.
    const again = await call(page, 'sync', { ops: OPS });
    assert.equal(again.lines, 2);
    await call(page, 'close');
    await page.close();
  });

  test(`${vfs}: a second tab gets a clear error or waits, and nothing is corrupted`, { timeout: 120_000 }, async () => {
    const first = await browser.newPage();
    const second = await browser.newPage();
    const name = `tabs-${vfs}`;
    await call(first, 'open', { name, vfs });
    await call(first, 'sync', { ops: 10_000 });

    const refused = await attempt(second, 'open', { name, vfs });
    assert.equal(refused.error?.name, 'DatabaseLockedError', JSON.stringify(refused));
    assert.match(refused.error.message, /open in another tab or worker/);

    // A waiting open resolves once the first tab closes the database.
    const waiting = call(second, 'open', { name, vfs, onLocked: 'wait' });
    let opened = false;
    waiting.then(() => { opened = true; }, () => {});
    await call(first, 'execute', { sql: "INSERT INTO ps_untyped(type, id, data) VALUES ('local', 'x', '{}')" });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(opened, false, 'the second tab waits while the first has it open');
    await call(first, 'close');
    await waiting;
    assert.equal(await call(second, 'count'), 10_000);
    const [local] = await call(second, 'query', { sql: "SELECT count(*) AS n FROM ps_untyped WHERE type = 'local'" });
    assert.equal(local.n, 1, 'the first tab\'s last write is there');
    const [check] = await call(second, 'query', { sql: 'PRAGMA integrity_check' });
    assert.equal(check.integrity_check, 'ok');
    await call(second, 'close');
    await first.close();
    await second.close();
  });
}

for (const vfs of ['opfs', 'idb']) {
  test(`${vfs}: a transaction cut off by a reload leaves the last committed state`, { timeout: 60_000 }, async () => {
    let page = await browser.newPage();
    const name = `cutoff-${vfs}`;
    await call(page, 'open', { name, vfs });
    await call(page, 'execute', { sql: 'CREATE TABLE big(n INTEGER, pad BLOB); INSERT INTO big VALUES (1, zeroblob(100));' });
    await call(page, 'flush');
    // A transaction larger than the page cache: SQLite spills its pages into
    // the file before it commits. Give background writers time, then reload.
    await call(page, 'execute', { sql: 'PRAGMA cache_size = 20' });
    await call(page, 'execute', { sql: 'BEGIN' });
    await call(page, 'execute', {
      sql: 'WITH RECURSIVE c(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM c WHERE i < 20000) INSERT INTO big SELECT i, zeroblob(1000) FROM c',
    });
    const [inside] = await call(page, 'query', { sql: 'SELECT count(*) AS n FROM big' });
    assert.equal(inside.n, 20_000);
    const stats = await call(page, 'stats');
    assert.ok(stats.dbBytesWritten > 1_000_000, `pages were spilled into the file: ${JSON.stringify(stats)}`);
    await new Promise((r) => setTimeout(r, 500));
    await page.close();

    page = await browser.newPage();
    await call(page, 'open', { name, vfs });
    const [after] = await call(page, 'query', { sql: 'SELECT count(*) AS n FROM big' });
    assert.equal(after.n, 1, 'only the committed row');
    const [check] = await call(page, 'query', { sql: 'PRAGMA integrity_check' });
    assert.equal(check.integrity_check, 'ok');
    await call(page, 'close');
    await page.close();
  });
}

for (const vfs of ['opfs', 'idb']) {
  test(`${vfs}: a reader sees the last committed state during a write, also beside a spilled writer`, { timeout: 120_000 }, async () => {
    const page = await browser.newPage();
    const name = `reader-${vfs}`;
    await call(page, 'open', { name, vfs });
    await call(page, 'openReader');
    await readerScenario({
      execute: (sql) => call(page, 'execute', { sql }),
      query: (sql) => call(page, 'query', { sql }),
      read: (sql) => attempt(page, 'readerQuery', { sql }),
      stats: () => call(page, 'stats'),
    });
    // Through transaction(): the reader's query resolves while the writer's
    // transaction is open (it does not queue behind it) and sees the old count.
    const during = await call(page, 'readDuringTransaction', {
      write: 'INSERT INTO big SELECT n + 60000, NULL FROM big',
      read: 'SELECT count(*) AS n FROM big',
    });
    assert.deepEqual(during, { inside: [{ n: 60_001 }] });
    assert.equal((await call(page, 'readerQuery', { sql: 'SELECT count(*) AS n FROM big' }))[0].n, 120_002);
    const write = await attempt(page, 'readerQuery', { sql: 'DELETE FROM big' });
    assert.equal(write.error?.code, 8, `the reader is query_only: ${JSON.stringify(write)}`);
    // close() closes the reader first; the storage reopens with everything.
    await call(page, 'close');
    await call(page, 'open', { name, vfs });
    assert.equal((await call(page, 'query', { sql: 'SELECT count(*) AS n FROM big' }))[0].n, 120_002);
    await call(page, 'openReader');
    await call(page, 'closeReader');
    assert.equal((await call(page, 'query', { sql: 'PRAGMA integrity_check' }))[0].integrity_check, 'ok');
    await call(page, 'close');
    await page.close();
  });
}

for (const vfs of ['opfs', 'idb']) {
  test(`${vfs}: with a reader open, control() applies a checkpoint in steps and the reader answers meanwhile`, { timeout: 180_000 }, async () => {
    const ops = 60_000;
    const page = await browser.newPage();
    await call(page, 'open', { name: `paced-${vfs}`, vfs });
    await call(page, 'openReader');
    // Reads on the reader all through the sync, issued in the worker: each
    // sees none of the checkpoint or all of it, and some are answered while
    // the apply is still running.
    const { stats, reads } = await call(page, 'syncWhileReading', {
      ops, sql: "SELECT count(*) AS n FROM ps_untyped WHERE type = 'thisisatable'",
    });
    assert.ok(stats.applySteps > 1, `the apply ran in ${stats.applySteps} steps`);
    const { start, end } = stats.lastApply;
    const during = reads.filter((r) => r.at >= start && r.answeredAt <= end);
    assert.ok(during.length > 0, `no read was issued and answered during the ${end - start} ms apply (${reads.length} reads in all)`);
    assert.deepEqual([...new Set(reads.map((r) => r.n))].filter((n) => n !== 0 && n !== ops), [], 'a read saw part of the checkpoint');
    assert.equal(await call(page, 'count'), ops);
    await call(page, 'close');
    await page.close();
  });
}

test('close and reopen in the same worker (opfs resumes its pool, idb reloads from IndexedDB)', { timeout: 60_000 }, async () => {
  const page = await browser.newPage();
  for (const vfs of ['opfs', 'idb']) {
    const name = `reopen-${vfs}`;
    await call(page, 'open', { name, vfs });
    await call(page, 'sync', { ops: 3_000 });
    await call(page, 'close');
    await call(page, 'open', { name, vfs });
    assert.equal(await call(page, 'count'), 3_000, vfs);
    await call(page, 'execute', { sql: "INSERT INTO ps_untyped(type, id, data) VALUES ('local', 'y', '{}')" });
    await call(page, 'close');
    await call(page, 'open', { name, vfs });
    const [local] = await call(page, 'query', { sql: "SELECT count(*) AS n FROM ps_untyped WHERE type = 'local'" });
    assert.equal(local.n, 1, vfs);
    await call(page, 'close');
  }
  await page.close();
});

test('opfs: access handles stay exclusive even without the Web Lock', { timeout: 60_000 }, async () => {
  const first = await browser.newPage();
  const second = await browser.newPage();
  const name = 'nolock-opfs';
  await call(first, 'open', { name, vfs: 'opfs' });
  await call(first, 'sync', { ops: 2_000 });
  const refused = await attempt(second, 'open', { name, vfs: 'opfs', skipLockForTests: true });
  assert.ok(refused.error, 'the second open must fail');
  assert.match(refused.error.message, /cannot open OPFS storage/);
  assert.equal(await call(first, 'count'), 2_000);
  await call(first, 'close');
  await first.close();
  await second.close();
});

test('the demo page shows progress and lists rows', { timeout: 60_000 }, async () => {
  const page = await browser.newPage();
  await page.selectOption('#vfs', 'idb');
  await page.fill('#ops', '5000');
  await page.click('#open');
  await page.waitForSelector('#sync:not([disabled])');
  await page.click('#sync');
  await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('Synced 7 lines'));
  await page.waitForFunction(() => document.getElementById('count').textContent === '5000');
  assert.equal(await page.locator('#rows tr').count(), 20);
  assert.equal(await page.evaluate(() => document.getElementById('progress').value), 5000);
  assert.equal(await page.textContent('#error'), '');
  await page.click('#close');
  await page.close();
});

for (const vfs of ['opfs', 'idb']) {
  test(`${vfs}: an encrypted database holds no plaintext, refuses a wrong or missing key, and opens with its key`, { timeout: 120_000 }, async () => {
    const page = await browser.newPage();
    const marker = 'local-marker-5d1c9e0b';
    // oplite's storage: its OPFS pool directory, or its IndexedDB chunks.
    const where = (name) => (vfs === 'opfs' ? { opfs: ['oplite', name] } : { idb: `oplite:${name}`, store: 'chunks' });
    const needles = ['thisismyrowid', marker, 'SQLite format 3'];
    const fill = async (name, key) => {
      await call(page, 'open', { name, vfs, key });
      await call(page, 'sync', { ops: 2_000 });
      await call(page, 'execute', { sql: "INSERT INTO ps_untyped(type, id, data) VALUES ('local', 'm', ?)", params: [marker] });
      await call(page, 'close');
      return page.evaluate(storedNeedles, { where: where(name), needles });
    };
    // The same search finds all three in a plain database: it can fail.
    const plain = await fill(`plain-${vfs}`);
    assert.deepEqual(plain.found, needles, JSON.stringify(plain));
    const name = `encrypted-${vfs}`;
    const encrypted = await fill(name, 'correct horse');
    assert.ok(encrypted.files > 0);
    assert.deepEqual(encrypted.found, [], JSON.stringify(encrypted));

    const wrong = await attempt(page, 'open', { name, vfs, key: 'wrong' });
    assert.equal(wrong.error?.code, 26, JSON.stringify(wrong));
    assert.match(wrong.error.message, /the key is wrong/);
    const missing = await attempt(page, 'open', { name, vfs });
    assert.equal(missing.error?.code, 26, JSON.stringify(missing));
    assert.match(missing.error.message, /the file is encrypted/);
    const plainWithKey = await attempt(page, 'open', { name: `plain-${vfs}`, vfs, key: 'k' });
    assert.equal(plainWithKey.error?.code, 26, JSON.stringify(plainWithKey));

    // Nothing the refused opens did reached the file.
    assert.equal((await page.evaluate(storedNeedles, { where: where(name), needles })).digest, encrypted.digest, 'a refused open changed the stored bytes');

    await call(page, 'open', { name, vfs, key: 'correct horse' });
    await checkRows(page, 2_000);
    const [local] = await call(page, 'query', { sql: "SELECT data FROM ps_untyped WHERE type = 'local'" });
    assert.equal(local.data, marker);
    await call(page, 'close');
    assert.deepEqual((await page.evaluate(storedNeedles, { where: where(name), needles })).found, []);
    await page.close();
  });
}
