// The demo page: the database lives in a Worker (worker.js); this page only
// sends requests and draws. window.demo.call(method, args) is also what the
// browser tests and the benchmark drive.
const worker = new Worker('/www/worker.js', { type: 'module' });
const pending = new Map();
let nextId = 1;
const $ = (id) => document.getElementById(id);

function call(method, args) {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    worker.postMessage({ id, method, args });
  });
}

worker.onmessage = (event) => {
  const msg = event.data;
  if (msg.type === 'progress') {
    if (msg.total > 0) {
      $('progress').max = msg.total;
      $('progress').value = msg.downloaded;
    }
    $('status').textContent = msg.syncing ? `Downloading: ${msg.downloaded} / ${msg.total} ops` : 'Synced.';
    return;
  }
  if (msg.type === 'tables') {
    refresh();
    return;
  }
  const waiter = pending.get(msg.id);
  if (!waiter) return;
  pending.delete(msg.id);
  if (msg.error) {
    const e = new Error(msg.error.message);
    e.name = msg.error.name;
    e.code = msg.error.code;
    waiter.reject(e);
  } else {
    waiter.resolve(msg.value);
  }
};

// One refresh at a time; a refresh asked for while one runs runs again
// after it (it used to be dropped: a refresh that counted before the sync
// wrote its rows left "Rows (0)" above a full table).
let running = null;
let again = false;
function refresh() {
  if (running) {
    again = true;
    return running;
  }
  running = (async () => {
    try {
      do {
        again = false;
        const count = await call('count');
        const rows = await call('rows', { limit: 20 });
        $('count').textContent = count;
        $('rows').replaceChildren(...rows.map((r) => {
          const tr = document.createElement('tr');
          for (const v of [r.id, r.data]) {
            const td = document.createElement('td');
            td.textContent = v;
            tr.append(td);
          }
          return tr;
        }));
      } while (again);
    } finally {
      // In the same turn as the last check of `again`: a later call starts anew.
      running = null;
    }
  })();
  return running;
}

async function guarded(fn) {
  $('error').textContent = '';
  try {
    return await fn();
  } catch (e) {
    $('error').textContent = `${e.name}: ${e.message}`;
    throw e;
  }
}

$('open').onclick = () => guarded(async () => {
  const info = await call('open', { name: 'demo', vfs: $('vfs').value });
  $('status').textContent = `Open: ${info.vfs}, SQLite ${info.sqlite}, ${info.oplite}.`;
  $('sync').disabled = false;
  $('close').disabled = false;
  await refresh();
});
$('sync').onclick = () => guarded(async () => {
  const r = await call('sync', { ops: Number($('ops').value), binary: $('binary').checked });
  $('status').textContent = `Synced ${r.lines} lines in ${r.totalMs.toFixed(0)} ms ` +
    `(apply ${r.applyMs.toFixed(0)} ms, longest call ${r.longestCallMs.toFixed(0)} ms).`;
  await refresh();
});
$('close').onclick = () => guarded(async () => {
  await call('close');
  $('sync').disabled = true;
  $('close').disabled = true;
  $('status').textContent = 'Closed.';
});

window.demo = { call, refresh };
