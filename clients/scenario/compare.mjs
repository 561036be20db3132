// What the drop-in comparison checks, shared by the Node SDK test
// (clients/node/run.mjs) and the web SDK test (clients/web/run.mjs): two
// results of drop-in.mjs, one with the SDK's own core and one with oplite,
// must agree on everything an app or the service could see, and the
// reference run must have shown every step of the scenario.

// Deep equality of JSON-like values (what the results are made of).
export function sameValue(x, y) {
  if (x === y) return true;
  if (x === null || y === null || typeof x !== 'object' || typeof y !== 'object' || Array.isArray(x) !== Array.isArray(y)) return false;
  const kx = Object.keys(x);
  const ky = Object.keys(y);
  return kx.length === ky.length && kx.every((k) => Object.hasOwn(y, k) && sameValue(x[k], y[k]));
}

/**
 * The first difference inside a value, as a path, so that a long value (a
 * transition list, a batch) does not hide where it differs.
 */
export function firstDifference(x, y, path = '') {
  if (sameValue(x, y)) return null;
  if (x && y && typeof x === 'object' && typeof y === 'object' && Array.isArray(x) === Array.isArray(y)) {
    if (Array.isArray(x) && x.length !== y.length) return `${path || '.'}: length ${x.length} vs ${y.length}`;
    for (const k of new Set([...Object.keys(x), ...Object.keys(y)])) {
      const d = firstDifference(x[k], y[k], `${path}.${k}`);
      if (d) return d;
    }
  }
  return `${path || '.'}: ${JSON.stringify(x)} vs ${JSON.stringify(y)}`;
}

/**
 * Compares `bundled` with `oplite` (oplite may be null: then only the
 * scenario's own checks run, on the bundled run). Returns the list of
 * failures (empty when everything agrees) and `reference`, the compared
 * view of the reference run, for the summary.
 *
 * browserTiming: three things that depend on timing in a browser are not
 * compared between the runs; each run is checked on its own instead. Where
 * the stream after the drop starts: when the cut stream errors, fetch's
 * ReadableStream discards the chunks the SDK has not read yet, so how many
 * lines reach the core depends on how fast it took the earlier ones. Its
 * parameters are compared, and on every run (in Node too) its positions
 * must be ones the core stored (resumeProblems: each named bucket above 0
 * and not past the last stream's position; at least one bucket in Node). For the
 * same reason, whether the status shows the drop as a disconnect and a new
 * download before the first sync completes: the states between the first
 * download and the first complete sync are left out (the dropped and
 * resumed stream is still checked, in the service's streams). And how many
 * write checkpoints (legacy) or checkpoint requests (requests mode) the SDK
 * asked for: the SDK asks once per upload round, and how the local writes
 * fall into rounds depends on how long each database takes to queue them;
 * each run must have asked at least once (legacy: at most once per upload
 * batch; requests: twice or more), and the other kind is compared exactly
 * (none). The Node test compares all three exactly.
 */
export function compareRuns({ bundled, oplite, rows, mode, raw, browserTiming = false }) {
  const failures = [];
  // The status sequence with each run of repeated cycles kept once: the
  // service's stream thread may send one checkpoint diff or several after an
  // upload, depending on timing, and each diff is one more "downloading, then
  // idle" pair (A B A B -> A B). Any other difference in order or content
  // still fails the comparison.
  const collapseRepeatedCycles = (list) => {
    const out = [];
    for (const item of list) {
      out.push(item);
      const n = out.length;
      if (n >= 4 && sameValue(out[n - 1], out[n - 3]) && sameValue(out[n - 2], out[n - 4])) out.length = n - 2;
    }
    return out;
  };

  // Before the first complete sync: up to the first download only.
  const fromFirstDownload = (list) => {
    if (!browserTiming) return list;
    const synced = list.findIndex((t) => t.hasSynced);
    const downloading = list.findIndex((t) => t.downloading);
    if (synced < 0 || downloading < 0 || downloading > synced) return list;
    return [...list.slice(0, downloading + 1), ...list.slice(synced)];
  };

  // What both runs must agree on. Left out: timings, the core version
  // strings, how many times the watched query fired and the service's
  // line and byte counts (they depend on how the service's stream thread
  // batches changes into checkpoint diffs, i.e. on timing, not on the core).
  const pick = (r) => ({
    tables: r.tables,
    digests: r.digests,
    sample: r.sample,
    afterClear: r.afterClear,
    afterClearKeepingLocal: r.afterClearKeepingLocal,
    badLine: reduceBadLine(r.badLine),
    transitions: collapseRepeatedCycles(fromFirstDownload(r.transitions)),
    progress: r.progress,
    credentialFetches: r.credentialFetches,
    clientBatches: r.clientBatches,
    serviceUploads: r.serviceUploads,
    pendingInTransaction: r.pendingInTransaction,
    serviceStreams: browserTiming
      ? r.serviceStreams.map((stream, i) => (i === 1 ? { parameters: stream.parameters, buckets: 'positions checked per run (resumeProblems)' } : stream))
      : r.serviceStreams,
    serviceStats: (({ streams, dropped_streams, unauthorized, upload_batches, uploaded_ops, write_checkpoints, checkpoint_requests }) =>
      ({ streams, dropped_streams, unauthorized, upload_batches, uploaded_ops,
        // The kind of the mode is counted per run in a browser (see above).
        write_checkpoints: browserTiming && mode === 'legacy' ? 'checked per run' : write_checkpoints,
        checkpoint_requests: browserTiming && mode !== 'legacy' ? 'checked per run' : checkpoint_requests }))(r.serviceStats),
    checkpointRequest: r.checkpointRequest,
    rawTable: r.rawTable,
    tableDiff: r.tableDiff,
  });

  const a = pick(bundled);

  if (oplite) {
    const b = pick(oplite);
    // The SDK bundles core 0.5.3; oplite follows 0.5.4, which shows the
    // malformed line otherwise and writes other raw-table triggers.
    const to054 = minor(oplite) !== minor(bundled) && minor(oplite) === '0.5.4';
    const expected = to054 ? { ...a, badLine: badLineOnCore054(a.badLine), rawTable: rawTableOnCore054(a.rawTable) } : a;
    for (const key of Object.keys(expected)) {
      if (!sameValue(expected[key], b[key])) {
        failures.push(`${key} differs (first at ${firstDifference(expected[key], b[key])}):\n  bundled ${JSON.stringify(expected[key])}\n  oplite  ${JSON.stringify(b[key])}`);
      }
    }
  }
  const ran = [bundled, oplite].filter(Boolean);

  // And what the scenario must have shown at all (checked on the reference run).
  const lists = Math.max(1, Math.floor(rows / 100));
  const expect = (what, ok) => { if (!ok) failures.push(`expected ${what}`); };
  expect(`after disconnectAndClear({ clearLocal: false }) no synced rows and the 3 local-only drafts (${JSON.stringify(a.afterClearKeepingLocal)})`,
    a.afterClearKeepingLocal.drafts === 3 && a.afterClearKeepingLocal.lists === 0 && a.afterClearKeepingLocal.todos === 0 && a.afterClearKeepingLocal.ps_oplog === 0);
  expect(`the malformed checkpoint line reported as a download error, with no "disconnected, no error" status first, and synced again after it (${ran.map((r) => `${r.core} ${JSON.stringify(reduceBadLine(r.badLine))}`).join(', ')})`,
    ran.filter((r) => minor(r) !== '0.5.4').every((r) => { const b = reduceBadLine(r.badLine); return b.sawError && b.recovered && b.firstError?.downloadError && !b.disconnectedWithoutErrorFirst && b.newStreams === 1; }));
  if (mode === 'requests') {
    expect(`CheckpointRequest.waitForSync() rejected with the sync error after the bad line, and resolved after the reconnect (${ran.map((r) => `${r.core} ${JSON.stringify(r.badLine.waits)}`).join(', ')})`,
      ran.filter((r) => minor(r) !== '0.5.4').every((r) => r.badLine.waits?.first.rejected === 'Sync error while waiting for checkpoint request' && r.badLine.waits.first.withCause && r.badLine.waits.again.resolved && r.badLine.waits.hasSynced));
  }
  expect(`${lists + 1} lists and ${rows - lists + 2} todos`, a.tables.lists === lists + 1 && a.tables.todos === rows - lists + 2);
  expect('4 upload batches of 14 entries', bundled.serviceStats.upload_batches === 4 && bundled.serviceStats.uploaded_ops === 14);
  for (const r of ran) {
    const problems = resumeProblems(r.serviceStreams, { mayBeEmpty: browserTiming });
    expect(`${r.core}: one dropped stream, resumed from where it broke off (${r.serviceStats.dropped_streams} dropped; ${problems.join('; ') || 'positions fine'}; stream requests ${JSON.stringify(r.serviceStreams)})`,
      r.serviceStats.dropped_streams === 1 && r.serviceStreams.length === 3 && problems.length === 0);
  }
  expect(`ps_crud counted inside the writing transaction: 5, then 6 (${ran.map((r) => `${r.core} ${r.pendingInTransaction}`).join(', ')})`,
    ran.every((r) => sameValue(r.pendingInTransaction, [5, 6])));
  // In requests mode the SDK posts the connection's checkpoint request while
  // it opens the stream: both ask the connector for credentials at once, on
  // connect and after the token expired.
  const fetches = mode === 'legacy' ? 2 : 4;
  expect(`fetchCredentials ${fetches} times (connect, expired token${mode === 'legacy' ? '' : ': each for the stream and the checkpoint request'}; ${a.credentialFetches})`,
    a.credentialFetches === fetches);
  expect(`no request refused by the service's validation (${ran.map((r) => `${r.core} ${r.serviceStats.invalid_requests}`).join(', ')})`,
    ran.every((r) => r.serviceStats.invalid_requests === 0));
  expect('download progress up to every row', a.progress.maxTotal === rows);
  expect('the bundled core in the first run and oplite in the second', !bundled.coreIsOplite && (!oplite || oplite.coreIsOplite));
  if (raw) {
    const rt = a.rawTable;
    expect(`lists as the app's own table, no ps_data__lists, synced rows not in ps_untyped (${JSON.stringify(rt && { ...rt, triggers: rt.triggers.length })})`,
      rt?.listsType === 'table' && rt.psDataLists === 0 && rt.untypedLists === 0 && rt.oplogLists === lists + 1 && rt.triggers.length === 3);
    const uploaded = a.clientBatches.flat().filter((e) => e.type === 'lists').map((e) => `${e.op} ${e.id}`);
    expect(`the raw table's local writes uploaded through its triggers (${JSON.stringify(uploaded)})`,
      sameValue(uploaded, ['PUT locallist', 'PATCH list2']));
  }
  // On every run: in a browser these counts are not compared between the
  // runs (see above), so each must be right on its own. A legacy write
  // checkpoint is asked for when the upload queue drains after a local
  // write, so once per upload round at most, and a round uploads a batch.
  if (mode === 'legacy') {
    for (const r of ran) {
      const { write_checkpoints: asked, checkpoint_requests: requests, upload_batches: batches } = r.serviceStats;
      expect(`${r.core}: write checkpoints from write-checkpoint2.json only, at least one and at most one per upload batch (${asked} for ${batches} batches, checkpoint requests ${requests})`,
        asked >= 1 && asked <= batches && requests === 0);
    }
  } else {
    for (const r of ran) {
      const { write_checkpoints: asked, checkpoint_requests: requests } = r.serviceStats;
      expect(`${r.core}: write checkpoints from /sync/checkpoint-request only (${requests}, write-checkpoint2.json ${asked})`,
        requests >= 2 && asked === 0);
    }
    expect('requestCheckpoint() applied, with the service versions of every uploaded row',
      a.checkpointRequest?.hasSyncedAfter === true && a.checkpointRequest.rows.length === 12 && a.checkpointRequest.rows.every((r) => r.applied));
  }
  const todos = rows - lists;
  expect(`trackTableDiff on todos: ${todos} INSERTs and nothing else in the initial sync, INSERT/UPDATE/DELETE in all, the diffs replayed equal to the table (${ran.map((r) => `${r.core} ${JSON.stringify({ ...r.tableDiff, writtenRows: r.tableDiff?.writtenRows.length })}`).join(', ')})`,
    ran.every((r) => sameValue(r.tableDiff?.initial, { INSERT: todos }) && sameValue(r.tableDiff.operations, ['DELETE', 'INSERT', 'UPDATE']) && r.tableDiff.replayMismatches === 0));
  const seen = (f) => a.transitions.some(f);
  expect('connected, downloading with progress, hasSynced and lastSyncedAt in the status',
    seen((t) => t.connected) && seen((t) => t.downloading && t.progress) && seen((t) => t.hasSynced && t.lastSyncedAt));
  expect('no rows left after disconnectAndClear', Object.values(a.afterClear).every((v) => v === 0 || v === false));
  return { failures, reference: a, ran };
}

/**
 * What is wrong with where the stream after the drop (the second of the
 * three) resumed, as a list (empty when nothing is). The core names in its
 * request the buckets it stored data of, each at the last op it stored: a
 * bucket gets its row with its first data line, so every named position is
 * above 0; and none is past the same bucket's position in the last stream
 * (after the bad line, when everything was synced). At least one bucket
 * must be named: a stream that names none starts from 0.
 */
export function resumeProblems(streams, { mayBeEmpty = false } = {}) {
  if (!Array.isArray(streams) || streams.length < 3) return [`${streams?.length ?? 0} stream requests, not 3`];
  const resumed = streams[1].buckets ?? [];
  const last = new Map((streams.at(-1).buckets ?? []).map((b) => [b.name, b.after]));
  const problems = [];
  // In a browser the cut stream may error before the core stored a line
  // (fetch drops the chunks not yet read), so it may resume from nothing.
  if (resumed.length === 0 && !mayBeEmpty) problems.push('the stream after the drop names no bucket: it starts from 0');
  const seen = new Set();
  for (const { name, after } of resumed) {
    if (seen.has(name)) problems.push(`${name} named twice`);
    seen.add(name);
    const position = /^[0-9]+$/.test(String(after)) ? Number(after) : NaN;
    if (!(position > 0)) problems.push(`${name} from ${JSON.stringify(after)}, not a stored position above 0`);
    else if (!last.has(name)) problems.push(`${name} is not a bucket of the last stream`);
    else if (!(position <= Number(last.get(name)))) problems.push(`${name} from ${position}, past its position ${last.get(name)} in the last stream`);
  }
  return problems;
}

/**
 * What is compared of step 4 (drop-in.mjs malformedCheckpoint): whether a
 * status said "disconnected, no error" before the first one carrying the
 * download error (what an SDK shows when the core's `stop` still answers
 * a status after the failed line), that first status, and how it ended.
 */
export function reduceBadLine(badLine) {
  const statuses = badLine?.statuses ?? [];
  const errorAt = statuses.findIndex((s) => s.downloadError);
  const before = errorAt < 0 ? statuses : statuses.slice(0, errorAt);
  return {
    sawError: badLine?.sawError ?? false,
    recovered: badLine?.recovered ?? false,
    firstError: errorAt < 0 ? null : statuses[errorAt],
    disconnectedWithoutErrorFirst: before.some((s) => !s.connected && !s.connecting),
    newStreams: badLine?.newStreams ?? null,
    waits: badLine?.waits ?? null,
  };
}

/** A run's core version without its build: `0.5.3`, `0.5.4`. */
function minor(run) {
  return String(run?.coreVersion ?? '').split('/')[0];
}

/**
 * What the SDK shows of the malformed line on core 0.5.4, from what it
 * shows on 0.5.3 (reduceBadLine's shape). 0.5.4 keeps the sync iteration
 * after the failed call, so the SDK's `stop` still gets a "disconnected"
 * status before the SDK records the download error, and a checkpoint
 * request waiting then is rejected as "disconnected" instead of with the
 * sync error. Everything else (the error itself, the reconnect, one new
 * stream, the request resolved after it) stays. This is what the SDK
 * shows on the reference core 0.5.4 itself: `OPLITE_SO=<the 0.5.4
 * reference> node clients/node/run.mjs` passes with it.
 */
export function badLineOnCore054(reduced) {
  return {
    ...reduced,
    firstError: reduced.firstError && { ...reduced.firstError, connected: false },
    disconnectedWithoutErrorFirst: true,
    waits: reduced.waits && { ...reduced.waits, first: { rejected: 'Cannot request checkpoints, sync client is disconnected.', withCause: false } },
  };
}

/**
 * The raw table's triggers as core 0.5.4 writes them, from 0.5.3's: a
 * refused write raises ABORT (the statement is undone) instead of FAIL.
 */
export function rawTableOnCore054(rawTable) {
  if (!rawTable?.triggers) return rawTable;
  const abort = (sql) => sql.replaceAll('RAISE (FAIL,', 'RAISE (ABORT,').replaceAll('RAISE(FAIL,', 'RAISE(ABORT,');
  return { ...rawTable, triggers: rawTable.triggers.map((t) => ({ ...t, sql: abort(t.sql) })) };
}

/** One line saying what both runs agreed on. */
export function agreementSummary(label, a, raw) {
  return `${label}, identical: app tables (${a.tables.lists} ${raw ? 'lists in the raw table' : 'lists'}, ${a.tables.todos} todos), ${a.serviceStats.upload_batches} upload batches, ` +
    `${a.transitions.length} status transitions, ${a.serviceStats.streams} streams (1 dropped and resumed), ${a.credentialFetches} credential fetches, ` +
    `a malformed checkpoint line surfaced as the download error${a.badLine.waits ? ' and rejected waitForSync()' : ''} and one new stream, ` +
    `local-only drafts kept by disconnectAndClear({ clearLocal: false }), everything empty after disconnectAndClear()` +
    (a.tableDiff ? `; trackTableDiff: ${a.tableDiff.initial.INSERT} INSERTs in the initial sync, ${a.tableDiff.writtenRows.length} distinct events on the locally written rows (${[...new Set(a.tableDiff.writtenRows.map((e) => e.split(' ')[1]))].join('/')})` : '');
}
