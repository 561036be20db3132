// The Node SDK drop-in test (README "Node SDK drop-in"): runs scenario.mjs
// twice, with @powersync/node's bundled core and with oplite, each against
// a fresh loopback service, and fails on any difference the app or the
// service could see.
//
//   OPLITE_SO=target/release/liboplite.so \
//   OPLITE_TEST_SERVER=target/release/oplite-test-server node run.mjs [--mode legacy|requests] [--cores bundled,oplite] [--raw-table]
//
// --mode is the SDK's checkpoint mode (default legacy; scenario.mjs).
// --raw-table runs scenario.mjs --schema raw: `lists` is a raw table in
// the SDK schema (the app's own table, synced through put/delete
// statements, uploaded through powersync_create_raw_table_crud_trigger).
// --cores bundled runs the reference alone: the scenario's own checks,
// no comparison (OPLITE_SO is then not needed).
// OPLITE_NODE_ROWS (default 100000) sets the size of the initial sync.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runScenario } from './service.mjs';
import { agreementSummary, compareRuns } from '../scenario/compare.mjs';

const { values: opts } = parseArgs({
  options: {
    mode: { type: 'string', default: 'legacy' },
    cores: { type: 'string', default: 'bundled,oplite' },
    'raw-table': { type: 'boolean', default: false },
  },
});
const mode = opts.mode;
const cores = opts.cores.split(',');
const raw = opts['raw-table'];
// How the runs are named in the report.
const label = `${mode} mode${raw ? ', raw table' : ''}`;
if (!['legacy', 'requests'].includes(mode) || cores.some((c) => !['bundled', 'oplite'].includes(c)) || cores[0] !== 'bundled') {
  console.error('usage: node run.mjs [--mode legacy|requests] [--cores bundled,oplite | bundled] [--raw-table]');
  process.exit(2);
}
const so = process.env.OPLITE_SO;
const server = process.env.OPLITE_TEST_SERVER;
const rows = Number(process.env.OPLITE_NODE_ROWS ?? 100000);
if ((!so && cores.includes('oplite')) || !server) {
  console.error('set OPLITE_SO (liboplite.so) and OPLITE_TEST_SERVER (the oplite-test-server binary)');
  process.exit(2);
}
const work = mkdtempSync(join(tmpdir(), 'oplite-node-'));

const run = (core) => runScenario({ core, so, server, rows, work, args: ['--mode', mode, '--schema', raw ? 'raw' : 'views'] });

const results = {};
try {
  for (const core of cores) results[core] = await run(core);
} finally {
  rmSync(work, { recursive: true, force: true });
}
const { bundled, oplite } = results;
const failedRuns = Object.values(results).filter((r) => r.failed);
if (failedRuns.length) {
  console.error(`\nFAILED (${label}):`);
  for (const r of Object.values(results)) {
    console.error(r.failed ? `  the ${r.core} run failed while ${r.step}: ${r.failed}` : `  the ${r.core} run completed`);
  }
  if (!bundled.failed && oplite?.failed) {
    console.error('  so oplite does not do what the bundled core does here; nothing further to compare');
  }
  process.exit(1);
}

const { failures, reference: a, ran } = compareRuns({ bundled, oplite, rows, mode, raw });

const t = (r) => r.timings;
console.log(`\nNode SDK drop-in (@powersync/node 1.1.0, ${mode} checkpoint mode${raw ? ', lists as a raw table' : ''}, ${rows} rows; ms)`);
console.log('| core | initial sync | upload round trip | requestCheckpoint | token refresh | disconnectAndClear | whole run |');
console.log('|---|---:|---:|---:|---:|---:|---:|');
for (const r of ran) {
  console.log(`| ${r.core} (${r.coreVersion}) | ${t(r).initialSyncMs} | ${t(r).uploadRoundTripMs} | ${t(r).requestCheckpointMs ?? '-'} | ${t(r).tokenRefreshMs} | ${t(r).disconnectAndClearMs} | ${t(r).totalMs} |`);
}
if (failures.length) {
  console.error(`\nFAILED (${label}): the runs differ or missed a step:\n${failures.join('\n')}`);
  process.exit(1);
}
if (!oplite) {
  console.log(`\nthe bundled core alone (${label}): every check of the scenario passed; nothing compared`);
  process.exit(0);
}
console.log(`\n${agreementSummary(label, a, raw)}`);
