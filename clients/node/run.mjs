// The Node SDK drop-in test (README "Node SDK drop-in"): runs scenario.mjs
// twice, with @powersync/node's bundled core and with oplite, each against
// a fresh loopback service, and fails on any difference the app or the
// service could see.
//
//   OPLITE_SO=target/release/liboplite.so \
//   OPLITE_TEST_SERVER=target/release/oplite-test-server node run.mjs
//
// OPLITE_NODE_ROWS (default 100000) sets the size of the initial sync.
import { spawn } from 'node:child_process';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';

const so = process.env.OPLITE_SO;
const server = process.env.OPLITE_TEST_SERVER;
const rows = Number(process.env.OPLITE_NODE_ROWS ?? 100000);
if (!so || !server) {
  console.error('set OPLITE_SO (liboplite.so) and OPLITE_TEST_SERVER (the oplite-test-server binary)');
  process.exit(2);
}
const work = mkdtempSync(join(tmpdir(), 'oplite-node-'));

function startService() {
  return new Promise((resolve, reject) => {
    const child = spawn(server, ['--shape', 'two-tables', '--ops', String(rows)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const url = out.match(/listening on (http:\/\/\S+)/)?.[1];
      if (url) resolve({ child, url });
    });
    child.on('exit', (code) => reject(new Error(`oplite-test-server exited with ${code}`)));
    child.on('error', reject);
  });
}

async function run(core) {
  const { child, url } = await startService();
  try {
    const env = { ...process.env };
    if (core === 'oplite') env.OPLITE_CORE_PATH = so;
    else delete env.OPLITE_CORE_PATH;
    const out = join(work, `${core}.json`);
    const args = ['scenario.mjs', '--core', core, '--url', url, '--dir', join(work, core), '--out', out, '--rows', String(rows)];
    const code = await new Promise((resolve) => {
      const scenario = spawn(process.execPath, args, { cwd: fileURLToPath(new URL('.', import.meta.url)), env, stdio: 'inherit' });
      const timer = setTimeout(() => scenario.kill('SIGKILL'), 300_000);
      scenario.on('exit', (c, signal) => { clearTimeout(timer); resolve(c ?? signal); });
    });
    if (code !== 0) throw new Error(`the ${core} run failed (${code})`);
    return JSON.parse(readFileSync(out, 'utf8'));
  } finally {
    child.kill();
  }
}

const results = {};
try {
  for (const core of ['bundled', 'oplite']) results[core] = await run(core);
} finally {
  rmSync(work, { recursive: true, force: true });
}
const { bundled, oplite } = results;

// What both runs must agree on. Left out: timings, the core version
// strings, how many times the watched query fired and the service's
// line and byte counts (they depend on how the service's stream thread
// batches changes into checkpoint diffs, i.e. on timing, not on the core).
const pick = (r) => ({
  tables: r.tables,
  digests: r.digests,
  sample: r.sample,
  afterClear: r.afterClear,
  transitions: r.transitions,
  progress: r.progress,
  credentialFetches: r.credentialFetches,
  clientBatches: r.clientBatches,
  serviceUploads: r.serviceUploads,
  pendingInTransaction: r.pendingInTransaction,
  serviceStreams: r.serviceStreams,
  serviceStats: (({ streams, dropped_streams, unauthorized, upload_batches, uploaded_ops, write_checkpoints }) =>
    ({ streams, dropped_streams, unauthorized, upload_batches, uploaded_ops, write_checkpoints }))(r.serviceStats),
});
const failures = [];
const a = pick(bundled);
const b = pick(oplite);
for (const key of Object.keys(a)) {
  if (!isDeepStrictEqual(a[key], b[key])) {
    failures.push(`${key} differs:\n  bundled ${JSON.stringify(a[key])}\n  oplite  ${JSON.stringify(b[key])}`);
  }
}

// And what the scenario must have shown at all (checked on the reference run).
const lists = Math.max(1, Math.floor(rows / 100));
const expect = (what, ok) => { if (!ok) failures.push(`expected ${what}`); };
expect(`${lists + 1} lists and ${rows - lists + 2} todos`, a.tables.lists === lists + 1 && a.tables.todos === rows - lists + 2);
expect('4 upload batches of 14 entries', a.serviceStats.upload_batches === 4 && a.serviceStats.uploaded_ops === 14);
expect(`one dropped stream, resumed from where it broke off (${a.serviceStats.dropped_streams} dropped; stream requests ${JSON.stringify(a.serviceStreams)})`, a.serviceStats.dropped_streams === 1 &&
  a.serviceStreams.length === 3 && a.serviceStreams[1].buckets.some((bucket) => Number(bucket.after) > 0));
expect(`ps_crud counted inside the writing transaction: 5, then 6 (bundled ${bundled.pendingInTransaction}, oplite ${oplite.pendingInTransaction})`,
  [bundled, oplite].every((r) => isDeepStrictEqual(r.pendingInTransaction, [5, 6])));
expect('fetchCredentials twice (connect, expired token)', a.credentialFetches === 2);
expect(`no request refused by the service's validation (bundled ${bundled.serviceStats.invalid_requests}, oplite ${oplite.serviceStats.invalid_requests})`,
  bundled.serviceStats.invalid_requests === 0 && oplite.serviceStats.invalid_requests === 0);
expect('download progress up to every row', a.progress.maxTotal === rows);
expect('the bundled core in the first run and oplite in the second', !bundled.coreIsOplite && oplite.coreIsOplite);
const seen = (f) => a.transitions.some(f);
expect('connected, downloading with progress, hasSynced and lastSyncedAt in the status',
  seen((t) => t.connected) && seen((t) => t.downloading && t.progress) && seen((t) => t.hasSynced && t.lastSyncedAt));
expect('no rows left after disconnectAndClear', Object.values(a.afterClear).every((v) => v === 0 || v === false));

const t = (r) => r.timings;
console.log(`\nNode SDK drop-in (@powersync/node 1.1.0, ${rows} rows; ms)`);
console.log('| core | initial sync | upload round trip | token refresh | disconnectAndClear | whole run |');
console.log('|---|---:|---:|---:|---:|---:|');
for (const r of [bundled, oplite]) {
  console.log(`| ${r.core} (${r.coreVersion}) | ${t(r).initialSyncMs} | ${t(r).uploadRoundTripMs} | ${t(r).tokenRefreshMs} | ${t(r).disconnectAndClearMs} | ${t(r).totalMs} |`);
}
if (failures.length) {
  console.error(`\nFAILED: the runs differ or missed a step:\n${failures.join('\n')}`);
  process.exit(1);
}
console.log(`\nidentical: app tables (${a.tables.lists} lists, ${a.tables.todos} todos), ${a.serviceStats.upload_batches} upload batches, ` +
  `${a.transitions.length} status transitions, ${a.serviceStats.streams} streams (1 dropped and resumed), ${a.credentialFetches} credential fetches, empty after disconnectAndClear`);
