// One run of the drop-in scenario (../scenario/drop-in.mjs) with the
// official Node SDK and one core: node scenario.mjs
// --core bundled|oplite --mode legacy|requests --url http://127.0.0.1:PORT
// --dir DIR --out result.json [--rows N] [--schema views|raw] [--triggers off]
//
// The SDK opens its database in DIR with two read workers; worker.mjs loads
// the core named by OPLITE_CORE_PATH (oplite) or the bundled one.
// A failing run still writes --out: {"failed": message, "step": step}.
import { createHash } from 'node:crypto';
import { writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { parseArgs } from 'node:util';
import * as sdk from '@powersync/node';
import { runDropIn } from '../scenario/drop-in.mjs';

const { values: args } = parseArgs({
  options: {
    core: { type: 'string' },
    mode: { type: 'string', default: 'legacy' },
    url: { type: 'string' },
    dir: { type: 'string' },
    out: { type: 'string' },
    rows: { type: 'string', default: '100000' },
    schema: { type: 'string', default: 'views' },
    // Default: 40 lines at 100k rows (the initial sync is about 100 lines),
    // scaled with the rows so the cut always lands inside the first stream.
    'drop-after': { type: 'string' },
    // off: no db.triggers.trackTableDiff (bench.mjs measures the SDK's sync
    // path without app triggers).
    triggers: { type: 'string', default: 'on' },
  },
});
if (args.schema !== 'raw' && args.schema !== 'views') throw new Error(`--schema views|raw, not ${args.schema}`);
const state = { step: 'starting', lastSdkError: null };
process.on('unhandledRejection', (e) => fail(e));
process.on('uncaughtException', (e) => fail(e));
function fail(e) {
  console.error(`[${args.core} ${args.mode}] FAILED while ${state.step}:`, e);
  const failed = String(e?.message ?? e) + (state.lastSdkError ? `; the SDK's last error: ${state.lastSdkError}` : '');
  try { writeFileSync(args.out, JSON.stringify({ core: args.core, mode: args.mode, failed, step: state.step })); } catch {}
  process.exit(1);
}
const t0 = performance.now();
const log = (...m) => console.error(`[${args.core} ${args.mode} ${((performance.now() - t0) / 1000).toFixed(1)}s]`, ...m);

rmSync(args.dir, { recursive: true, force: true });
mkdirSync(args.dir, { recursive: true });
const result = await runDropIn({
  sdk,
  openDatabase: (schema, logger) => new sdk.PowerSyncDatabase({
    schema,
    database: {
      dbFilename: 'app.db',
      dbLocation: args.dir,
      readWorkerCount: 2,
      openWorker: (_url, options) => new Worker(new URL('./worker.mjs', import.meta.url), options),
    },
    logger,
  }),
  core: args.core,
  url: args.url,
  mode: args.mode,
  raw: args.schema === 'raw',
  rows: Number(args.rows),
  dropAfter: args['drop-after'] == null ? undefined : Number(args['drop-after']),
  triggers: args.triggers !== 'off',
  digest: async (text) => createHash('sha256').update(text).digest('hex'),
  log,
  debug: Boolean(process.env.OPLITE_NODE_DEBUG),
  state,
});
writeFileSync(args.out, JSON.stringify(result, null, 2));
log(`done in ${result.timings.totalMs} ms`);
process.exit(0);
