// The page's app: opens the todo database with oplite as the PowerSync web
// SDK's database, shows the rows (and keeps showing them as they change),
// connects to the service, and adds todos from the form.
import { PowerSyncDatabase } from '@powersync/web';
import { OpliteOpenFactory } from '@oplite/powersync-web';
import { LoopbackConnector } from './connector.mjs';
import { schema } from './schema.mjs';

// ?vfs=idb keeps the database in IndexedDB; the default is OPFS.
const vfs = new URLSearchParams(location.search).get('vfs') === 'idb' ? 'idb' : 'opfs';
const storage = vfs === 'idb' ? 'IndexedDB' : 'OPFS';

// Whether a sync completed since this page connected: the status says
// 'synced' only then.
let syncedHere = false;

const db = new PowerSyncDatabase({
  schema,
  // oplite's WASM build in a Worker of its own, instead of the SDK's database.
  factory: new OpliteOpenFactory({ dbFilename: `todo-${vfs}.db`, vfs }),
});

async function main() {
  showStatus('opening', `Opening todo-${vfs}.db on ${storage}…`);
  await db.init();
  // oplite_version() exists only in oplite: proof the SDK is running on it.
  const { core } = await db.get('SELECT oplite_version() AS core');
  document.querySelector('#database').textContent = `Database: ${core} on ${storage}`;

  // Offline first: show what is stored on this device now, and again
  // whenever a sync or a local write changes the tables.
  await render();
  db.onChange({ onChange: render }, { tables: ['lists', 'todos'], throttleMs: 50 });
  db.registerListener({ statusChanged: showSyncStatus });

  showStatus('connecting', 'Connecting…');
  const connectedAt = new Date();
  await db.connect(new LoopbackConnector(location.origin));
  // The first sync ever of this database (at once on later visits) ...
  await db.waitForFirstSync();
  // ... and a sync since this page connected.
  await db.waitForStatus((status) => status.lastSyncedAt >= connectedAt);
  syncedHere = true;
  await showSyncStatus(db.currentStatus);
}

// The lists and their todos, built as elements (never as HTML text: the
// rows come from the server and from users).
async function render() {
  const lists = await db.getAll('SELECT id, name, owner_id FROM lists ORDER BY name, id');
  const todos = await db.getAll('SELECT id, list_id, description, completed FROM todos ORDER BY description, id');
  const sections = lists.map((list) => {
    const heading = el('h2', {}, list.name, ' ', el('small', { class: 'owner' }, `(owner ${list.owner_id})`));
    const items = todos.filter((todo) => todo.list_id === list.id).map((todo) =>
      el('li', { 'data-id': todo.id, 'data-completed': todo.completed },
        el('input', { type: 'checkbox', disabled: '', ...(todo.completed ? { checked: '' } : {}) }),
        ' ', el('span', { class: 'description' }, todo.description)));
    return el('section', { class: 'list', 'data-id': list.id, 'data-owner-id': list.owner_id }, heading, el('ul', {}, ...items));
  });
  document.querySelector('#lists').replaceChildren(...sections);

  // The form's choice of list, kept across renders.
  const select = document.querySelector('#add select');
  const chosen = select.value;
  select.replaceChildren(...lists.map((list) => el('option', { value: list.id }, list.name)));
  if (lists.some((list) => list.id === chosen)) select.value = chosen;
  // A local write is a change to upload: count them again.
  await showSyncStatus(db.currentStatus);
}

// A local write. The SDK records it in its upload queue in the same
// transaction and calls the connector's uploadData to send it.
document.querySelector('#add').addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  const description = form.description.value.trim();
  if (!description || !form.list.value) return;
  try {
    await db.execute('INSERT INTO todos (id, list_id, description, completed) VALUES (?, ?, ?, 0)',
      [crypto.randomUUID(), form.list.value, description]);
    form.description.value = '';
  } catch (e) {
    showStatus('error', `Could not add the todo: ${e.message}`);
  }
});

// The SDK's sync status in words; data-state and data-pending are for
// scripts (test.mjs).
let statusShown = 0;
async function showSyncStatus(status) {
  const call = ++statusShown;
  const pending = (await db.getUploadQueueStats()).count;
  const state = document.querySelector('#status').dataset.state;
  // An older call that finished late; or an error that stays on screen.
  if (call !== statusShown || state === 'opening' || state === 'error') return;
  const { downloadError, uploadError } = status.dataFlowStatus;
  const error = downloadError ?? uploadError;
  const parts = [
    status.connected ? 'Connected' : 'Not connected',
    status.lastSyncedAt ? `synced at ${status.lastSyncedAt.toLocaleTimeString()}` : 'not synced yet',
    pending ? `${pending} local change${pending === 1 ? '' : 's'} to upload` : 'everything uploaded',
  ];
  if (error) parts.push(`last error: ${error.message}`);
  showStatus(syncedHere ? 'synced' : 'connecting', parts.join(' · '), { pending });
}

function showStatus(state, text, { pending } = {}) {
  const status = document.querySelector('#status');
  status.dataset.state = state;
  if (pending != null) status.dataset.pending = pending;
  status.textContent = text;
}

// document.createElement with attributes and children.
function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

main().catch((e) => {
  console.error(e);
  showStatus('error', `The app failed: ${e.message}`);
});
