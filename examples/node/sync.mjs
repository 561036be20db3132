// The example's one command: sync the todo list and print it.
//
//   node sync.mjs                      start the loopback service, sync, print
//   node sync.mjs --add "Buy stamps"   also add a todo, and wait until it is uploaded
//   node sync.mjs --endpoint URL       use a service that is already running
//
// --db FILE picks the database (default todo.db here); --json FILE also
// writes the rows as JSON (the example's test reads it).
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { PowerSyncDatabase } from '@powersync/node';
import { LoopbackConnector } from './connector.mjs';
import { corePath } from './paths.mjs';
import { schema } from './schema.mjs';
import { startLoopbackService } from './service.mjs';

const { values: args } = parseArgs({
  options: {
    endpoint: { type: 'string' },
    db: { type: 'string', default: new URL('todo.db', import.meta.url).pathname },
    add: { type: 'string' },
    json: { type: 'string' },
  },
});

async function main() {
  corePath(); // fails here, saying what to build, rather than in the worker
  const service = args.endpoint ? null : await startLoopbackService();
  try {
    await syncAndPrint(args.endpoint ?? service.url);
  } finally {
    service?.stop();
  }
}

async function syncAndPrint(endpoint) {
  const db = openDatabase(resolve(args.db));
  try {
    await db.connect(new LoopbackConnector(endpoint));
    await withTimeout(db.waitForFirstSync(), `the first sync from ${endpoint}`);
    // oplite_version() exists only in oplite: proof the SDK loaded it.
    const { core } = await db.get('SELECT oplite_version() AS core');
    console.log(`synced from ${endpoint} with ${core}`);
    if (args.add != null) await addTodo(db, args.add);
    const lists = await db.getAll('SELECT id, name, owner_id FROM lists ORDER BY id');
    const todos = await db.getAll('SELECT id, list_id, description, completed FROM todos ORDER BY id');
    print(lists, todos);
    if (args.json) writeFileSync(args.json, JSON.stringify({ core, lists, todos }, null, 2));
  } finally {
    await db.close();
  }
}

function openDatabase(file) {
  return new PowerSyncDatabase({
    schema,
    database: {
      dbFilename: basename(file),
      dbLocation: dirname(file),
      // The SDK's worker, told to load oplite instead of its bundled core.
      openWorker: (_url, options) => new Worker(new URL('./worker.mjs', import.meta.url), options),
    },
  });
}

// A local write: the SDK records it in the upload queue (ps_crud) in the
// same transaction, and the connector's uploadData sends it.
async function addTodo(db, description) {
  await db.execute('INSERT INTO todos (id, list_id, description, completed) VALUES (?, ?, ?, 0)', [randomUUID(), 'l1', description]);
  const uploaded = async () => {
    while ((await db.getUploadQueueStats()).count > 0) await new Promise((r) => setTimeout(r, 50));
  };
  await withTimeout(uploaded(), 'the upload');
}

function print(lists, todos) {
  for (const list of lists) {
    console.log(`${list.name} (${list.id}, owner ${list.owner_id})`);
    for (const todo of todos.filter((t) => t.list_id === list.id)) {
      console.log(`  [${todo.completed ? 'x' : ' '}] ${todo.description}`);
    }
  }
}

function withTimeout(promise, what, ms = 30_000) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

main().catch((e) => {
  console.error(`sync.mjs: ${e.message}`);
  process.exit(1);
});
