// The example's test (scripts/test-examples.sh runs it): the page in headless
// Chromium, as a user would use it, once on OPFS and once on IndexedDB, each
// against a fresh service (serve.mjs's startExample) and a fresh browser
// profile:
//   1. the first sync: the rows shown equal the recorded session's expected tables;
//   2. a todo added through the form is shown and reaches the service, once;
//   3. a reload: the page syncs again, resuming from the positions stored
//      in the database, and shows the same rows and the new todo.
//
// Chromium: OPLITE_CHROMIUM, default /usr/bin/chromium (Debian's package).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { startExample } from './serve.mjs';

const { chromium } = await import('playwright-core').catch(() => {
  console.error('test.mjs: playwright-core is missing: run `npm install` in examples/web');
  process.exit(1);
});

const expected = JSON.parse(fs.readFileSync(new URL('../../test-data/recorded/todo-list/expected.json', import.meta.url), 'utf8'));
const CHROMIUM = process.env.OPLITE_CHROMIUM || '/usr/bin/chromium';
// Headless, and quiet: the machine's closed network refuses Chromium's own connections.
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const STORAGES = [{ vfs: 'opfs', name: 'OPFS' }, { vfs: 'idb', name: 'IndexedDB' }];

let passed = 0;
let failed = 0;
function check(what, ok, detail = '') {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'ok' : 'FAILED'} - ${what}${ok || !detail ? '' : `: ${detail}`}`);
}

// Waits for the status line to say 'synced' (or fails with what it says).
async function waitSynced(page) {
  const done = await page.waitForSelector('#status[data-state="synced"], #status[data-state="error"]', { timeout: 60_000 }).catch(() => null);
  const status = await page.locator('#status').textContent();
  if (!done) throw new Error(`the page did not sync within 60 s; it says: ${status}`);
  if ((await page.locator('#status').getAttribute('data-state')) !== 'synced') throw new Error(`the page says: ${status}`);
  return status;
}

// Prints the first lines of the page's first console errors (the SDK logs
// each failed sync attempt again and again).
function printConsoleErrors(page, name) {
  let count = 0;
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    count++;
    if (count <= 5) console.log(`  [${name} console] ${m.text().split('\n')[0].slice(0, 300)}`);
    else if (count === 6) console.log(`  [${name} console] (more errors not shown)`);
  });
}

// The rows the page shows, as expected.json holds them: sorted by id, keys sorted.
async function shownRows(page) {
  const rows = await page.evaluate(() => ({
    lists: [...document.querySelectorAll('section.list')].map((s) => ({
      id: s.dataset.id, name: s.querySelector('h2').firstChild.textContent, owner_id: s.dataset.ownerId,
    })),
    todos: [...document.querySelectorAll('section.list li')].map((li) => ({
      id: li.dataset.id, list_id: li.closest('section').dataset.id,
      description: li.querySelector('.description').textContent, completed: Number(li.dataset.completed),
    })),
  }));
  const sorted = (list) => list.map((row) => Object.fromEntries(Object.keys(row).sort().map((k) => [k, row[k]])))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { lists: sorted(rows.lists), todos: sorted(rows.todos) };
}

// The names of everything in this origin's OPFS (a walk) and its IndexedDB databases.
function storedNames(page) {
  return page.evaluate(async () => {
    const opfs = [];
    const walk = async (dir, prefix) => {
      for await (const [name, handle] of dir.entries()) {
        opfs.push(prefix + name);
        if (handle.kind === 'directory') await walk(handle, `${prefix}${name}/`);
      }
    };
    await walk(await navigator.storage.getDirectory(), '');
    return { opfs, idb: (await indexedDB.databases()).map((db) => db.name) };
  });
}

async function serviceLog(example) {
  const res = await fetch(`${example.url}/dev/log`);
  if (!res.ok) throw new Error(`GET /dev/log: ${res.status}`);
  return res.json();
}

// Polls until fn() returns something truthy; null after timeoutMs.
async function eventually(fn, timeoutMs = 15_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value || Date.now() > end) return value || null;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function testStorage({ vfs, name }) {
  const example = await startExample();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'oplite-example-web-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS, timeout: 60_000 });
  const pageErrors = [];
  try {
    const page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    printConsoleErrors(page, name);

    await page.goto(`${example.url}/?vfs=${vfs}`);
    const status = await waitSynced(page);
    check(`${name}: the page synced`, /synced at/.test(status), status);
    const database = await page.locator('#database').textContent();
    check(`${name}: the SDK runs on oplite`, new RegExp(`^Database: oplite .+ on ${name}$`).test(database), database);
    const stored = await storedNames(page);
    const file = `todo-${vfs}.db`;
    const inOpfs = stored.opfs.some((n) => n.includes(file));
    const inIdb = stored.idb.some((n) => n.includes(file));
    check(`${name}: the database is stored in ${name}`, vfs === 'opfs' ? inOpfs && !inIdb : inIdb && !inOpfs, JSON.stringify(stored));
    const first = await shownRows(page);
    check(`${name}: the lists shown equal expected.json`, isDeepStrictEqual(first.lists, expected.lists), JSON.stringify(first.lists));
    check(`${name}: the todos shown equal expected.json`, isDeepStrictEqual(first.todos, expected.todos), JSON.stringify(first.todos));

    const description = `Buy stamps (${name})`;
    await page.selectOption('#add select', 'l1');
    await page.fill('#add input[name="description"]', description);
    await page.click('#add button');
    const added = await eventually(async () => (await shownRows(page)).todos.find((t) => t.description === description));
    check(`${name}: the new todo is shown in Groceries`, added?.list_id === 'l1' && added?.completed === 0, JSON.stringify(added));
    const uploads = await eventually(async () => {
      const entries = (await serviceLog(example)).uploads.flatMap((u) => u.batch).filter((e) => e.data?.description === description);
      return entries.length > 0 && entries;
    });
    check(`${name}: the service received it once, as a PUT on todos with the page's id`,
      uploads?.length === 1 && uploads[0].op === 'PUT' && uploads[0].type === 'todos' && uploads[0].id === added?.id && uploads[0].data.list_id === 'l1',
      JSON.stringify(uploads));
    const uploaded = await eventually(() => page.locator('#status[data-pending="0"]').count());
    check(`${name}: the page says everything is uploaded`, uploaded === 1, await page.locator('#status').textContent());

    const streamsBefore = (await serviceLog(example)).streams.length;
    await page.reload();
    const again = await waitSynced(page).catch((e) => e.message);
    const resumed = (await serviceLog(example)).streams.slice(streamsBefore);
    check(`${name}: after a reload the page synced again`, /synced at/.test(again) && resumed.length > 0, `${again}; ${resumed.length} new stream requests`);
    check(`${name}: and resumed from the positions stored in the database (no bucket from 0)`,
      resumed.length > 0 && resumed.every((s) => s.buckets.length > 0 && s.buckets.every((b) => b.after !== '0')), JSON.stringify(resumed));
    const after = await shownRows(page);
    const want = { lists: expected.lists, todos: [...expected.todos, added].sort((a, b) => (a.id < b.id ? -1 : 1)) };
    check(`${name}: it shows the same rows and the new todo`, added != null && isDeepStrictEqual(after, want), JSON.stringify(after));
  } catch (e) {
    check(`${name}: the page ran`, false, e.message);
  } finally {
    check(`${name}: no uncaught errors in the page`, pageErrors.length === 0, pageErrors.join('; '));
    await context.close().catch(() => {});
    fs.rmSync(profile, { recursive: true, force: true });
    await example.stop();
  }
}

const started = Date.now();
if (!fs.existsSync(CHROMIUM)) {
  check('Chromium is there', false, `${CHROMIUM} does not exist: install Debian's chromium package (apt-get install chromium) or set OPLITE_CHROMIUM`);
} else {
  for (const storage of STORAGES) {
    try {
      await testStorage(storage);
    } catch (e) {
      check(`${storage.name}: the example started`, false, e.message);
    }
  }
}
console.log(`(${((Date.now() - started) / 1000).toFixed(1)} s)`);
console.log(`examples/web: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
