// The example's test (scripts/test-examples.sh runs it): the one command,
// run as a user would, three times against one loopback service.
//   1. a first sync: the rows printed and written equal the recorded
//      session's expected tables;
//   2. --add: the new todo reaches the service, once;
//   3. a restart on the same file: the todo is still there, and the stream
//      resumes from the stored positions instead of downloading again.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { startLoopbackService } from './service.mjs';

const expected = JSON.parse(readFileSync(new URL('../../test-data/recorded/todo-list/expected.json', import.meta.url)));
const work = mkdtempSync(join(tmpdir(), 'oplite-example-node-'));
const db = join(work, 'todo.db');
let passed = 0;
let failed = 0;

function check(what, ok, detail = '') {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? 'ok' : 'FAILED'} - ${what}${ok || !detail ? '' : `: ${detail}`}`);
}

// Runs sync.mjs; returns what it printed and the JSON it wrote.
function run(url, name, extra = []) {
  const json = join(work, `${name}.json`);
  const stdout = execFileSync(process.execPath, ['sync.mjs', '--endpoint', url, '--db', db, '--json', json, ...extra], {
    cwd: new URL('.', import.meta.url),
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { stdout, result: JSON.parse(readFileSync(json, 'utf8')) };
}

// The tables as expected.json holds them: rows sorted by id, keys sorted.
const normalise = (rows) =>
  rows.map((row) => Object.fromEntries(Object.keys(row).sort().map((k) => [k, row[k]]))).sort((a, b) => a.id.localeCompare(b.id));

async function serviceLog(url) {
  const res = await fetch(`${url}/dev/log`);
  return res.json();
}

const service = await startLoopbackService();
try {
  const first = run(service.url, 'first');
  check('the SDK loaded oplite', /^oplite /.test(first.result.core), first.result.core);
  check('lists equal the recorded session', isDeepStrictEqual(normalise(first.result.lists), expected.lists), JSON.stringify(first.result.lists));
  check('todos equal the recorded session', isDeepStrictEqual(normalise(first.result.todos), expected.todos), JSON.stringify(first.result.todos));
  check('the rows are printed', expected.todos.every((t) => first.stdout.includes(t.description)), first.stdout);

  const added = run(service.url, 'added', ['--add', 'Buy stamps']);
  const todo = added.result.todos.find((t) => t.description === 'Buy stamps');
  check('the new todo is in the table', todo?.list_id === 'l1' && todo?.completed === 0, JSON.stringify(todo));
  const uploads = (await serviceLog(service.url)).uploads.flatMap((u) => u.batch).filter((e) => e.id === todo?.id);
  check('the service received it once, as a PUT on todos',
    uploads.length === 1 && uploads[0].op === 'PUT' && uploads[0].type === 'todos' && uploads[0].data.description === 'Buy stamps',
    JSON.stringify(uploads));

  const streamsBefore = (await serviceLog(service.url)).streams.length;
  const again = run(service.url, 'again');
  check('after a restart the todo is still there', again.result.todos.some((t) => t.id === todo?.id));
  check('and the synced rows too', isDeepStrictEqual(normalise(again.result.lists), expected.lists));
  const resumed = (await serviceLog(service.url)).streams.slice(streamsBefore);
  check('the restart resumed from stored positions (no bucket from 0)',
    resumed.length > 0 && resumed.every((s) => s.buckets.length > 0 && s.buckets.every((b) => b.after !== '0')),
    JSON.stringify(resumed));
} catch (e) {
  check('the example ran', false, e.stderr || e.message);
} finally {
  service.stop();
  rmSync(work, { recursive: true, force: true });
}
console.log(`examples/node: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
