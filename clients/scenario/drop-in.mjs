// The drop-in scenario, one run with one core and one SDK: the official
// PowerSync SDK (@powersync/node in Node, @powersync/web in Chromium)
// connects to the loopback service, syncs the `two-tables` dataset (the
// first stream is dropped mid-way and resumed), writes locally, uploads
// through the connector, waits for the write checkpoint, expires the
// token, and ends with disconnectAndClear. Returns what compare.mjs
// compares between cores.
//
// mode is the SDK's checkpoint mode (connect({ checkpointMode })): legacy
// asks GET /write-checkpoint2.json after an upload; requests posts
// client-allocated ids to POST /sync/checkpoint-request (seeded on every
// connection) and also awaits db.requestCheckpoint() after the upload,
// then checks that the uploaded rows' server versions are applied.
//
// raw: the SDK schema has `lists` as a raw table (schema.withRawTables)
// instead of a view: the app creates its own `lists` table first, the sync
// client puts and deletes synced rows there with the raw table's
// statements, and the app's writes are queued for upload by triggers made
// with powersync_create_raw_table_crud_trigger. Everything else is the same.
//
// Nothing here is specific to Node or the browser: the caller passes the
// SDK's exports, how to open its database, a SHA-256 and a log function.

// The raw table: synced `lists` rows go into the app's own table (created
// before connect), not into a view over ps_data__lists.
const RAW_LISTS_DDL = 'CREATE TABLE lists (id TEXT NOT NULL PRIMARY KEY, name TEXT, created_at TEXT)';

/** The scenario's SDK schema, built with the SDK's own classes. */
export function dropInSchema({ Schema, Table, column }, raw) {
  const todos = new Table({ list_id: column.text, description: column.text, done: column.integer }, { indexes: { list: ['list_id'] } });
  // The app's own drafts: a local-only table, never uploaded, which
  // disconnectAndClear() empties and disconnectAndClear({ clearLocal: false }) keeps.
  const drafts = new Table({ body: column.text }, { localOnly: true });
  const schema = raw ? new Schema({ todos, drafts }) : new Schema({ lists: new Table({ name: column.text, created_at: column.text }), todos, drafts });
  if (raw) {
    schema.withRawTables({
      lists: {
        schema: { tableName: 'lists' },
        put: { sql: 'INSERT OR REPLACE INTO lists (id, name, created_at) VALUES (?, ?, ?)', params: ['Id', { Column: 'name' }, { Column: 'created_at' }] },
        delete: { sql: 'DELETE FROM lists WHERE id = ?', params: ['Id'] },
        clear: 'DELETE FROM lists',
      },
    });
  }
  return schema;
}

/**
 * Runs the scenario. Options:
 *   sdk            the SDK's exports (Schema, Table, column, LogLevels, createConsoleLogger)
 *   openDatabase   (schema, logger) => a PowerSyncDatabase, not yet initialised
 *   core, url      the core's name (for logs and the result) and the service's base URL
 *   mode, raw      see above; rows: the dataset's size; dropAfter: lines before the planned drop
 *   triggers       false leaves out the db.triggers.trackTableDiff triggers (benchmarks)
 *   digest         async (text) => its SHA-256 as hex
 *   log            (...parts) => void; debug: SDK trace logs
 *   afterFirstSync an async function called once the first sync is done; what it returns is the result's afterFirstSync
 *   state          an object whose `step` and `lastSdkError` tell, when this throws, what it was doing
 */
export async function runDropIn({ sdk, openDatabase, core, url, mode: MODE, raw: RAW = false, rows: ROWS, dropAfter, triggers: TRIGGERS = true, digest, log, debug = false, afterFirstSync, state }) {
  const { Schema, LogLevels } = sdk;
  const DROP_AFTER = dropAfter ?? Math.max(8, Math.round((40 * ROWS) / 100000));
  if (MODE !== 'legacy' && MODE !== 'requests') throw new Error(`mode legacy|requests, not ${MODE}`);
  const t0 = performance.now();
  const elapsed = () => Math.round(performance.now() - t0);
  const schema = dropInSchema(sdk, RAW);
  state.step = 'opening the database';

  const consoleLogger = sdk.createConsoleLogger({
    prefix: `PowerSync ${core} ${MODE}`,
    minLevel: debug ? LogLevels.trace : LogLevels.warn,
  });
  // The planned drop of step 1 and the bad line of step 4 each make the SDK
  // log one 'Sync error' with a long stack trace: those are printed as a
  // single line. Anything else, and a
  // second sync error, is printed in full by the console logger.
  let expectedSyncErrors = 0;
  const logger = {
    log(record) {
      if (expectedSyncErrors > 0 && record.message === 'Sync error' && record.error) {
        expectedSyncErrors--;
        log(`expected: a planned fault of the service failed the stream in the SDK (${record.error.message ?? record.error}); reconnecting`);
        return;
      }
      if (record.error || record.level >= LogLevels.error) {
        state.lastSdkError = `${record.message}${record.error ? `: ${record.error.message ?? record.error}` : ''}`;
      }
      consoleLogger.log(record);
    },
  };

  async function http(method, path, body) {
    const res = await fetch(url + path, {
      method,
      headers: { 'content-type': 'application/json', authorization: `Token ${token ?? 'dev'}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }
  const dev = (method, path) => fetch(url + path, { method }).then(async (r) => {
    if (!r.ok) throw new Error(`${method} ${path}: ${r.status}`);
    return r.text();
  });

  // The connector: a token from the service's /dev/token, uploads posted to
  // its /upload endpoint (the stand-in for the app's backend).
  let token = null;
  let credentialFetches = 0;
  const clientBatches = [];
  // uploadData waits while the gate is closed, so that the local
  // transactions below are all queued before the first is uploaded and both
  // runs upload the same batches with one write checkpoint.
  let openGate = () => {};
  let gate = Promise.resolve();
  const closeGate = () => { gate = new Promise((resolve) => { openGate = resolve; }); };
  const connector = {
    async fetchCredentials() {
      credentialFetches++;
      token = await dev('GET', '/dev/token?ttl=3600');
      log(`fetchCredentials #${credentialFetches}`);
      return { endpoint: url, token };
    },
    async uploadData(db) {
      await gate;
      const tx = await db.getNextCrudTransaction();
      if (!tx) return;
      const batch = tx.crud.map((entry) => entry.toJSON());
      await http('POST', '/upload', { batch });
      clientBatches.push(batch);
      await tx.complete();
    },
  };

  const db = openDatabase(schema, logger);
  await db.init();
  const coreVersion = (await db.get('SELECT powersync_rs_version() AS v')).v;
  // Which core is in use: only oplite adds its own columns to ps_buckets.
  const coreIsOplite = (await db.get("SELECT count(*) AS n FROM pragma_table_info('ps_buckets') WHERE name = 'oplite_op_count'")).n > 0;
  log(`core ${coreVersion}${coreIsOplite ? ' (oplite)' : ''}${RAW ? ', lists as a raw table' : ''}`);
  if (RAW) {
    // The app's own table, and the triggers that queue its local writes for
    // upload (the SDK docs: powersync_create_raw_table_crud_trigger with the
    // raw table's JSON, Schema.rawTableToJson).
    state.step = 'creating the raw table and its triggers';
    const definition = JSON.stringify(Schema.rawTableToJson(schema.rawTables[0]));
    await db.writeTransaction(async (tx) => {
      await tx.execute(RAW_LISTS_DDL);
      for (const write of ['INSERT', 'UPDATE', 'DELETE']) {
        await tx.execute('SELECT powersync_create_raw_table_crud_trigger(?, ?, ?)', [definition, `lists_${write.toLowerCase()}`, write]);
      }
    });
  }

  // Sync status transitions, reduced to what the issue lists.
  const transitions = [];
  const progress = [];
  db.registerListener({
    statusChanged(status) {
      const p = status.downloadProgress;
      if (p) progress.push([p.downloadedOperations, p.totalOperations]);
      const reduced = {
        connected: status.connected,
        downloading: status.dataFlowStatus.downloading,
        progress: p != null,
        hasSynced: status.hasSynced ?? false,
        lastSyncedAt: status.lastSyncedAt != null,
      };
      const key = JSON.stringify(reduced);
      if (transitions.at(-1) !== key) transitions.push(key);
    },
  });
  const waitFor = (what, predicate, ms = 120_000) =>
    new Promise((resolve, reject) => {
      const started = Date.now();
      const tick = async () => {
        try {
          if (await predicate()) return resolve();
        } catch (e) {
          return reject(e);
        }
        if (Date.now() - started > ms) return reject(new Error(`timed out waiting for ${typeof what === 'function' ? what() : what}`));
        setTimeout(tick, 20);
      };
      tick();
    });

  // The SDK's trigger API on a synced table (db.triggers.trackTableDiff):
  // AFTER INSERT/UPDATE/DELETE triggers on ps_data__todos that read the
  // row's JSON `data`, fed by syncs and local writes alike.
  state.step = 'tracking todos with db.triggers.trackTableDiff';
  const todoDiffs = [];
  const disposeDiff = !TRIGGERS ? null : await db.triggers.trackTableDiff({
    source: 'todos',
    columns: ['description', 'done'],
    when: { INSERT: 'TRUE', UPDATE: 'TRUE', DELETE: 'TRUE' },
    onChange: async (context) => {
      // One push per event: spreading the initial sync's 990,000 events of a
      // 1M-row run into push() overflows the call stack.
      for (const diff of await context.withDiff('SELECT id, operation, value, previous_value FROM DIFF ORDER BY operation_id')) todoDiffs.push(diff);
    },
  });
  // Resolves once no diff has arrived for 300 ms (onChange is throttled).
  const diffsSettled = async () => {
    for (let seen = -1; seen !== todoDiffs.length;) {
      seen = todoDiffs.length;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  };
  const countOperations = (diffs) => diffs.reduce((counts, d) => ({ ...counts, [d.operation]: (counts[d.operation] ?? 0) + 1 }), {});

  // A watched query; the test waits on what it reports.
  let watched = null;
  let watchResults = 0;
  const abortWatch = new AbortController();
  db.watch(
    `SELECT (SELECT count(*) FROM lists) AS lists, (SELECT count(*) FROM todos) AS todos,
            (SELECT count(*) FROM todos WHERE done = 1) AS done, (SELECT count(*) FROM todos WHERE description LIKE 'local%') AS local`,
    [],
    { onResult: (r) => { watched = r.rows._array[0]; watchResults++; } },
    { signal: abortWatch.signal, throttleMs: 10 },
  );

  // Rejects after ms: the SDK's waits must not hang the run.
  const withTimeout = (what, promise, ms = 60_000) => {
    let timer;
    const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms); });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
  };

  const timings = {};
  // 1. Initial sync: the first stream is cut mid-way; the SDK reconnects and resumes.
  log(`the service drops the first stream after ${DROP_AFTER} lines: expect one sync error, then a reconnect`);
  await dev('POST', `/dev/drop-next-stream?after=${DROP_AFTER}`);
  expectedSyncErrors = 1;
  let mark = performance.now();
  state.step = 'the initial sync';
  await db.connect(connector, { retryDelayMs: 200, crudUploadThrottleMs: 10, checkpointMode: MODE });
  await db.waitForFirstSync();
  timings.initialSyncMs = Math.round(performance.now() - mark);
  const firstSyncExtra = afterFirstSync ? await afterFirstSync() : null;
  await waitFor('the watched query to see every row', () => watched && watched.lists + watched.todos === ROWS);
  log(`initial sync of ${ROWS} rows in ${timings.initialSyncMs} ms`, watched);
  // onChange runs after the SDK's table-change notification, which may come
  // after the watched query saw the rows: wait for one event per row, then
  // for any further ones.
  if (TRIGGERS) {
    await waitFor(() => `trackTableDiff to report the initial sync (${todoDiffs.length} of ${watched.todos} events)`,
      () => todoDiffs.length >= watched.todos, 30_000 * Math.max(1, ROWS / 100000));
    await diffsSettled();
  }
  const initialDiffs = countOperations(todoDiffs);


  // 2. Local writes, uploaded through uploadData, confirmed by a write checkpoint.
  state.step = 'uploading local writes';
  mark = performance.now();
  const syncedBefore = db.currentStatus.lastSyncedAt?.getTime() ?? 0;
  // lastSyncedAt has one-second resolution: start in the next second so the
  // apply of the write checkpoint shows as a later lastSyncedAt.
  const pause = Math.max(0, syncedBefore + 1000 - Date.now());
  await new Promise((resolve) => setTimeout(resolve, pause));
  mark = performance.now();
  closeGate();
  // What an app showing "n changes pending" reads inside its own transaction.
  const pendingInTransaction = [];
  await db.writeTransaction(async (tx) => {
    for (let i = 0; i < 5; i++) {
      await tx.execute('INSERT INTO todos (id, list_id, description, done) VALUES (?, ?, ?, 0)', [`local${i}`, 'list1', `local todo ${i}`]);
    }
    pendingInTransaction.push((await tx.get('SELECT count(*) AS n FROM ps_crud')).n);
    await tx.execute("INSERT INTO lists (id, name, created_at) VALUES ('locallist', 'local list', '2026-02-01T00:00:00Z')");
    pendingInTransaction.push((await tx.get('SELECT count(*) AS n FROM ps_crud')).n);
  });
  await db.writeTransaction(async (tx) => {
    await tx.execute("UPDATE todos SET done = 1, description = 'local edit ' || id WHERE id IN ('todo1', 'todo2', 'todo3')");
    await tx.execute("UPDATE lists SET name = 'renamed' WHERE id = 'list2'");
  });
  await db.execute("DELETE FROM todos WHERE id IN ('todo4', 'todo5', 'local4')");
  openGate();
  await waitFor('the upload queue to drain', async () => (await db.get('SELECT count(*) AS n FROM ps_crud')).n === 0);
  state.step = 'waiting for the write checkpoint of the upload';
  // What the service had counted, for the report of a timeout.
  let seenStats = null;
  const checkpointWait = () => `the write checkpoint to be applied (the service counted ${seenStats?.write_checkpoints} write-checkpoint2.json ` +
    `and ${seenStats?.checkpoint_requests} checkpoint-request requests, ${seenStats?.invalid_requests} refused; ` +
    `status: ${JSON.stringify({ connected: db.currentStatus.connected, uploading: db.currentStatus.dataFlowStatus.uploading })})`;
  await waitFor(checkpointWait, async () => {
    const s = db.currentStatus;
    const log = await http('GET', '/dev/log');
    seenStats = log.stats;
    // Legacy: the SDK asked write-checkpoint2.json; requests: it posted an
    // id to /sync/checkpoint-request (besides the seed of each connection).
    const asked = MODE === 'legacy' ? log.stats.write_checkpoints >= 1 : log.stats.checkpoint_requests >= 1;
    return asked && s.lastSyncedAt && s.lastSyncedAt.getTime() > syncedBefore && !s.dataFlowStatus.uploading && !s.dataFlowStatus.downloading;
  });
  await waitFor('the watched query to see the local writes', () => watched && watched.local === 7);
  timings.uploadRoundTripMs = Math.round(performance.now() - mark);
  log(`uploaded and confirmed in ${timings.uploadRoundTripMs} ms`, watched);

  // Requests mode: an explicit checkpoint request after the upload, awaited
  // until the core applied it; the uploaded rows must then be the service's
  // versions (ps_oplog holds the service's data for each, the app table
  // the same values) and the deleted ones gone from both.
  let checkpointRequest = null;
  if (MODE === 'requests') {
    state.step = 'awaiting db.requestCheckpoint()';
    mark = performance.now();
    const request = await withTimeout('db.requestCheckpoint()', db.requestCheckpoint());
    // Not compared: whether the checkpoint was applied before the promise
    // resolved is timing (either core, either storage, both seen).
    await withTimeout('CheckpointRequest.waitForSync()', request.waitForSync({ signal: AbortSignal.timeout(60_000) }));
    timings.requestCheckpointMs = Math.round(performance.now() - mark);
    state.step = 'checking the server versions of the uploaded rows';
    const uploaded = {
      todos: ['local0', 'local1', 'local2', 'local3', 'todo1', 'todo2', 'todo3'],
      lists: ['locallist', 'list2'],
    };
    const rows = [];
    for (const [table, ids] of Object.entries(uploaded)) {
      for (const id of ids) {
        const local = await db.getOptional(`SELECT * FROM ${table} WHERE id = ?`, [id]);
        const op = await db.getOptional('SELECT data FROM ps_oplog WHERE row_type = ? AND row_id = ?', [table, id]);
        const server = op?.data == null ? null : JSON.parse(op.data);
        const applied = local != null && server != null && Object.entries(server).every(([k, v]) => local[k] === v);
        rows.push({ table, id, applied, server });
        if (!applied) throw new Error(`${table} ${id}: the service's version ${JSON.stringify(server)} is not the local row ${JSON.stringify(local)}`);
      }
    }
    for (const [table, id] of [['todos', 'todo4'], ['todos', 'todo5'], ['todos', 'local4']]) {
      const local = await db.getOptional(`SELECT id FROM ${table} WHERE id = ?`, [id]);
      const op = await db.getOptional('SELECT 1 AS x FROM ps_oplog WHERE row_type = ? AND row_id = ?', [table, id]);
      if (local != null || op != null) throw new Error(`${table} ${id} was deleted and uploaded, but is still there (table: ${local != null}, ps_oplog: ${op != null})`);
      rows.push({ table, id, applied: true, server: null });
    }
    checkpointRequest = { hasSyncedAfter: request.hasSynced, rows };
    log(`requestCheckpoint() applied in ${timings.requestCheckpointMs} ms; ${rows.length} uploaded rows are the service's versions`);
  }

  // 3. Token expiry: the service ends the stream with token_expires_in 0; the
  // SDK fetches new credentials and reconnects.
  state.step = 'refreshing the expired token';
  mark = performance.now();
  const fetchesBefore = credentialFetches;
  const streamsBefore = (await http('GET', '/dev/log')).stats.streams;
  await dev('POST', `/dev/expire-token?token=${encodeURIComponent(token)}`);
  await waitFor('fetchCredentials after the token expired', () => credentialFetches > fetchesBefore);
  await waitFor('a new stream with the new token', async () => (await http('GET', '/dev/log')).stats.streams > streamsBefore && db.currentStatus.connected);
  // One more write on the new connection.
  await db.execute("UPDATE todos SET done = 0 WHERE id = 'todo7'");
  await waitFor('the second upload', async () => (await db.get('SELECT count(*) AS n FROM ps_crud')).n === 0 && clientBatches.length === 4);
  await waitFor('idle', () => { const s = db.currentStatus; return s.connected && !s.dataFlowStatus.uploading && !s.dataFlowStatus.downloading; });
  // The write checkpoint of that upload brings the service's todo7 back;
  // its apply is an event after the local UPDATE's. Idle can come first on
  // a loaded machine: the diffs compared below would then end early.
  if (TRIGGERS) {
    const appliedAfterUpdate = () => {
      const events = todoDiffs.filter((d) => d.id === 'todo7');
      const update = events.findLastIndex((d) => d.operation === 'UPDATE');
      return update >= 0 && events.length > update + 1;
    };
    await waitFor("the apply of the service's todo7 after its upload", appliedAfterUpdate);
  }
  timings.tokenRefreshMs = Math.round(performance.now() - mark);

  // What the app sees at the end, and what the service saw.
  const tables = {};
  const digests = {};
  for (const table of ['lists', 'todos']) {
    const rows = await db.getAll(`SELECT * FROM ${table} ORDER BY id`);
    tables[table] = rows.length;
    digests[table] = await digest(JSON.stringify(rows));
  }
  const sample = await db.getAll("SELECT * FROM todos WHERE id IN ('local0', 'todo1', 'todo4', 'todo7') ORDER BY id");
  const service = await http('GET', '/dev/log');
  // Where the app's `lists` rows live: its own table (raw) or a view over
  // ps_data__lists; and the triggers on it (their SQL is the core's).
  const rawTable = RAW ? {
    listsType: (await db.get("SELECT type FROM sqlite_master WHERE name = 'lists'")).type,
    psDataLists: (await db.get("SELECT count(*) AS n FROM sqlite_master WHERE name = 'ps_data__lists'")).n,
    untypedLists: (await db.get("SELECT count(*) AS n FROM ps_untyped WHERE type = 'lists'")).n,
    oplogLists: (await db.get("SELECT count(*) AS n FROM ps_oplog WHERE row_type = 'lists'")).n,
    triggers: (await db.getAll("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'lists' ORDER BY name")),
  } : null;

  // What the diff triggers reported: replayed in order, they must give the
  // table as it is; the events of the locally written rows (as a set: how
  // often the service echoes a row back depends on timing) are compared
  // between the cores.
  let tableDiff = null;
  if (TRIGGERS) {
    state.step = 'checking the diffs of db.triggers.trackTableDiff';
    const todoRows = await db.getAll('SELECT id, description, done FROM todos');
    // Whether a replayed diff value is the row's description and done, and nothing else.
    const sameTodo = (value, row) => value != null && Object.keys(value).length === 2 && value.description === row.description && value.done === row.done;
    const replayMismatches = () => {
      const replayed = new Map();
      for (const d of todoDiffs) {
        if (d.operation === 'DELETE') replayed.delete(d.id);
        else replayed.set(d.id, JSON.parse(d.value));
      }
      return todoRows.filter((r) => !sameTodo(replayed.get(r.id), r)).length +
        Math.max(0, replayed.size - todoRows.length);
    };
    // The last events may still be on their way (see above).
    await waitFor(() => `the trackTableDiff events replayed to equal the table (${replayMismatches()} rows differ)`,
      () => replayMismatches() === 0, 30_000).catch(() => {});
    await diffsSettled();
    await disposeDiff();
    const written = new Set(['local0', 'local1', 'local2', 'local3', 'local4', 'todo1', 'todo2', 'todo3', 'todo4', 'todo5', 'todo7']);
    tableDiff = {
      initial: initialDiffs,
      operations: Object.keys(countOperations(todoDiffs)).sort(),
      replayMismatches: replayMismatches(),
      writtenRows: [...new Set(todoDiffs.filter((d) => written.has(d.id)).map((d) => `${d.id} ${d.operation} ${d.value} ${d.previous_value ?? ''}`))].sort(),
    };
  }

  // 4. A malformed checkpoint line (last_op_id "invalid line"): the core's
  // iteration fails, the SDK reports the download error and reconnects. In
  // requests mode the wait of a checkpoint requested before the bad line
  // rejects with the sync error, and succeeds once the SDK has reconnected.
  // After the service's log was read above: how many checkpoint requests
  // the SDK sends around a reconnect (a seed, maybe a retry, one perhaps
  // meeting an expired token) is timing, not the core.
  expectedSyncErrors = 1;
  const badLine = await malformedCheckpoint({ db, dev, mode: MODE, waitFor, withTimeout, state, log });

  // 5. Sign-out: disconnectAndClear({ clearLocal: false }) empties the synced
  // tables and keeps the local-only drafts; disconnectAndClear() empties all.
  state.step = 'disconnectAndClear';
  abortWatch.abort();
  await db.writeTransaction(async (tx) => {
    for (let i = 0; i < 3; i++) await tx.execute('INSERT INTO drafts (id, body) VALUES (?, ?)', [`draft${i}`, `draft ${i}`]);
  });
  const counts = async () => ({
    lists: (await db.get('SELECT count(*) AS n FROM lists')).n,
    todos: (await db.get('SELECT count(*) AS n FROM todos')).n,
    drafts: (await db.get('SELECT count(*) AS n FROM drafts')).n,
    ps_oplog: (await db.get('SELECT count(*) AS n FROM ps_oplog')).n,
    ps_crud: (await db.get('SELECT count(*) AS n FROM ps_crud')).n,
    ps_buckets: (await db.get('SELECT count(*) AS n FROM ps_buckets')).n,
    hasSynced: db.currentStatus.hasSynced ?? false,
  });
  await db.disconnectAndClear({ clearLocal: false });
  const afterClearKeepingLocal = await counts();
  mark = performance.now();
  await db.disconnectAndClear();
  timings.disconnectAndClearMs = Math.round(performance.now() - mark);
  const afterClear = await counts();
  await db.close();
  // Without the pause above, which is up to a second of waiting for the clock.
  timings.totalMs = elapsed() - pause;

  const result = {
    core,
    mode: MODE,
    schema: RAW ? 'raw' : 'views',
    rawTable,
    tableDiff,
    coreVersion,
    coreIsOplite,
    timings,
    tables,
    digests,
    sample,
    afterClear,
    afterClearKeepingLocal,
    badLine,
    transitions: transitions.map((t) => JSON.parse(t)),
    progress: { first: progress[0], last: progress.at(-1), maxTotal: Math.max(0, ...progress.map((p) => p[1])) },
    credentialFetches,
    clientBatches,
    serviceUploads: service.uploads,
    serviceStreams: service.streams,
    serviceStats: service.stats,
    watchResults,
    pendingInTransaction,
    checkpointRequest,
    afterFirstSync: firstSyncExtra,
  };
  return result;
}

// Step 4: plans a checkpoint line the core must refuse and makes the open
// stream send it, then waits for the SDK to reconnect and sync again.
// Returns what compare.mjs compares: the statuses from the plan to the
// first one that carries the download error, whether the error was shown
// and cleared again, and (requests mode) how the waits of a checkpoint
// request ended. The error's own text is the core's and not compared.
async function malformedCheckpoint({ db, dev, mode, waitFor, withTimeout, state, log }) {
  state.step = 'a malformed checkpoint line';
  const statuses = [];
  let errored = false;
  const stopListening = db.registerListener({
    statusChanged(status) {
      if (errored) return;
      const downloadError = status.dataFlowStatus.downloadError;
      statuses.push({ connected: status.connected, connecting: status.connecting, downloadError: downloadError != null });
      if (downloadError != null) errored = true;
    },
  });
  const streams = async () => JSON.parse(await dev('GET', '/dev/log')).stats.streams;
  const streamsBefore = await streams();
  const result = { statuses, sawError: false, waits: null, recovered: false, newStreams: null };
  let errorText = null;
  try {
    if (mode === 'requests') {
      // The request's checkpoint is the change the bad line comes before.
      await dev('POST', '/dev/bad-next-checkpoint');
      const request = await withTimeout('db.requestCheckpoint()', db.requestCheckpoint());
      const outcome = (promise) => promise.then(() => ({ resolved: true }), (e) => {
        errorText ??= String(e.cause?.message ?? e.cause ?? e.message);
        return { rejected: e.message, withCause: e.cause != null };
      });
      const first = await outcome(withTimeout('CheckpointRequest.waitForSync()', request.waitForSync()));
      await waitFor('the SDK to reconnect after the bad line', () => db.currentStatus.connected && db.currentStatus.dataFlowStatus.downloadError == null);
      const again = await outcome(withTimeout('CheckpointRequest.waitForSync() after the reconnect', request.waitForSync()));
      result.waits = { first, again, hasSynced: request.hasSynced };
    } else {
      await dev('POST', '/dev/bad-next-checkpoint?now=1');
    }
    await waitFor('the download error of the bad line in the status', () => errored);
    errorText ??= String(db.currentStatus.dataFlowStatus.downloadError?.message ?? 'cleared already');
    result.sawError = true;
    await waitFor('the SDK to sync again after the bad line', () => {
      const s = db.currentStatus;
      return s.connected && s.dataFlowStatus.downloadError == null && !s.dataFlowStatus.downloading;
    });
    result.recovered = true;
    // After the reconnect the SDK seeds and may retry checkpoint requests
    // (requests mode): let them land before the next step.
    state.step = 'waiting for the requests after the reconnect';
    let seen = null;
    let quietSince = Date.now();
    await waitFor('the service to see no more requests for 500 ms', async () => {
      const { stats } = JSON.parse(await dev('GET', '/dev/log'));
      const now = `${stats.checkpoint_requests} ${stats.write_checkpoints} ${stats.streams}`;
      if (now !== seen) {
        seen = now;
        quietSince = Date.now();
      }
      return Date.now() - quietSince >= 500;
    });
    result.newStreams = (await streams()) - streamsBefore;
  } finally {
    stopListening();
  }
  log(`the bad checkpoint line: ${errorText}; ${statuses.length} statuses until the error, recovered`);
  return result;
}
