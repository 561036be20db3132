// The Node SDK first-sync benchmark (docs/node-sdk.md, "First sync
// benchmark"): runs scenario.mjs --runs times per core, alternating the
// SDK's bundled core and oplite, each against a fresh loopback service and
// without the scenario's trackTableDiff triggers (--triggers off), and
// prints the medians of the initial sync (connect to the first complete
// sync of --rows rows, through the SDK's worker and better-sqlite3) and of
// the whole scenario. With --profile, the first run of each core runs under
// node --cpu-prof and the table is followed by where each thread spent its
// time: busy and idle per thread, the heaviest functions of each.
//
//   OPLITE_SO=target/release/liboplite.so \
//   OPLITE_TEST_SERVER=target/release/oplite-test-server node bench.mjs [--rows 100000] [--runs 5] [--profile]
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runScenario } from './service.mjs';

const { values: opts } = parseArgs({
  options: {
    rows: { type: 'string', default: '100000' },
    runs: { type: 'string', default: '5' },
    profile: { type: 'boolean', default: false },
  },
});
const rows = Number(opts.rows);
const runs = Number(opts.runs);
const so = process.env.OPLITE_SO;
const server = process.env.OPLITE_TEST_SERVER;
if (!so || !server || !(rows > 0) || !(runs > 0)) {
  console.error('usage: OPLITE_SO=... OPLITE_TEST_SERVER=... node bench.mjs [--rows 100000] [--runs 5] [--profile]');
  process.exit(2);
}
const cores = ['bundled', 'oplite'];
const work = mkdtempSync(join(tmpdir(), 'oplite-node-bench-'));

// Self time per function of one .cpuprofile (one thread), in ms.
function summarise(file) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const self = new Map();
  profile.samples.forEach((id, i) => {
    const { functionName, url } = frames.get(id);
    const key = `${functionName || '(anonymous)'}${url ? ` (${url.split('/node_modules/').pop().replace(/^file:\/\/.*\//, '')})` : ''}`;
    self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1e3);
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const idle = self.get('(idle)') ?? 0;
  self.delete('(idle)');
  return { total, busy: total - idle, top: [...self].sort((a, b) => b[1] - a[1]).slice(0, 4) };
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

const samples = Object.fromEntries(cores.map((c) => [c, []]));
const profiles = {};
try {
  for (let i = 0; i < runs; i++) {
    for (const core of cores) {
      const profileDir = join(work, `profile-${core}`);
      const nodeArgs = opts.profile && i === 0 ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
      const result = await runScenario({ core, so, server, rows, work, nodeArgs, args: ['--triggers', 'off'], stdio: ['ignore', 'ignore', 'inherit'] });
      if (result.failed) {
        console.error(`the ${core} run failed while ${result.step}: ${result.failed}`);
        process.exit(1);
      }
      rmSync(join(work, core), { recursive: true, force: true });
      samples[core].push(result.timings);
      console.error(`${core.padEnd(7)} run ${i + 1}: initial sync ${result.timings.initialSyncMs} ms, whole scenario ${result.timings.totalMs} ms`);
      if (nodeArgs.length) {
        profiles[core] = readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile')).sort().map((f) => summarise(join(profileDir, f)));
      }
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

const initial = (core) => median(samples[core].map((t) => t.initialSyncMs));
console.log(`\nNode SDK first sync (@powersync/node 1.1.0, ${rows} rows, legacy mode, medians of ${runs} alternating runs; ms)`);
console.log('| core | initial sync | min | max | whole scenario | initial sync vs bundled |');
console.log('|---|---:|---:|---:|---:|---:|');
for (const core of cores) {
  const values = samples[core].map((t) => t.initialSyncMs);
  console.log(`| ${core} | ${initial(core)} | ${Math.min(...values)} | ${Math.max(...values)} | ${median(samples[core].map((t) => t.totalMs))} | ${(initial(core) / initial('bundled')).toFixed(2)}x |`);
}
if (opts.profile) {
  console.log('\nWhere the first run of each core spent its time (node --cpu-prof, whole scenario; thread 0 is the main thread, the others the SDK\'s database workers; ms)');
  console.log('| core | thread | profiled | busy | heaviest (self time) |');
  console.log('|---|---:|---:|---:|---|');
  for (const core of cores) {
    profiles[core].forEach((p, thread) => {
      const top = p.top.map(([name, ms]) => `${name} ${Math.round(ms)}`).join('; ');
      console.log(`| ${core} | ${thread} | ${Math.round(p.total)} | ${Math.round(p.busy)} | ${top} |`);
    });
  }
}
