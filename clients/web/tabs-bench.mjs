// The tabs benchmark (docs/web-sdk.md, "Tabs benchmark"): in headless
// Chromium, two pages of one profile open one database, the SDK's own
// (its default: shared between tabs) and oplite's (multiTab at its
// default), on OPFS and on IndexedDB, --runs times each, alternating.
// Measures, per run:
//   - the first open of each tab (init(), ms);
//   - the longest wait of a query in tab B (every 20 ms) while tab A's
//     first sync applies --rows rows, and that sync's time;
//   - tab A's longest main-thread task during its sync (its main thread
//     serves tab B's calls when it holds an oplite database);
//   - then a write in tab B reaching a watched query in tab A, --writes
//     times one after the other (p50 and p99, ms).
// Prints a markdown table of the medians over the runs.
//
//   OPLITE_TEST_SERVER=target/release/oplite-test-server node tabs-bench.mjs [--rows 1000000] [--writes 200] [--runs 3] [--vfs opfs,idb] [--cores bundled,oplite]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startService } from '../node/service.mjs';
import { benchArgs } from './bench-args.mjs';
import { buildPage, launchBrowser } from './browser.mjs';

const { opts, server } = benchArgs({ rows: { type: 'string', default: '1000000' }, writes: { type: 'string', default: '200' } });
const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const median = (values) => quantile(values, 0.5);

// One run: a fresh profile and service; resolves to its measurements.
async function run(browser, { core, vfs, rows, writes }) {
  const { child, url } = await startService(server, rows);
  browser.server.setService(url);
  const session = await browser.open();
  const at = (page, fn, ...args) => page.evaluate(([f, a]) => window.tabsBench[f](...a), [fn, args]);
  try {
    const [a, b] = [await session.newPage(`tabs A ${core} ${vfs}`), await session.newPage(`tabs B ${core} ${vfs}`)];
    const config = { core, vfs, name: 'tabs-bench.db' };
    const firstOpenMs = await at(a, 'open', config);
    const secondOpenMs = await at(b, 'open', config);
    // The sync first: local writes would hold its checkpoint back (the
    // connector uploads nothing).
    await at(b, 'startProbe', 20);
    await at(a, 'startTasks');
    await at(b, 'startTasks');
    const syncFrom = Date.now();
    const syncMs = await at(a, 'sync');
    const probe = await at(b, 'stopProbe');
    const tasksInA = await at(a, 'stopTasks');
    const tasksInB = await at(b, 'stopTasks');
    if (probe.partialCounts.length > 0) throw new Error(`${core} ${vfs}: tab B's queries saw part of the checkpoint: ${probe.partialCounts.slice(0, 5)}`);
    await at(a, 'watch');
    await at(a, 'seen', 0);
    const latencies = [];
    for (let i = 1; i <= writes; i++) {
      const [seen, began] = await Promise.all([at(a, 'seen', i), at(b, 'write', i)]);
      latencies.push(seen - began);
    }
    const count = await at(b, 'count');
    if (count !== rows + writes) throw new Error(`${core} ${vfs}: tab B counts ${count} rows after the sync and the writes, expected ${rows + writes}`);
    return { firstOpenMs, secondOpenMs, p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), syncMs, readWaitMs: probe.longestWaitMs, queries: probe.queries, longestTaskInA: tasksInA.longestTaskMs, longTasksInA: tasksInA.longTasks,
             // Where the longest wait fell, and what might explain it (not in the table).
             diagnosis: { readWaitAtS: probe.longestWaitFrom == null ? null : (probe.longestWaitFrom - syncFrom) / 1000, longestTaskInB: tasksInB.longestTaskMs,
                          longestStepMs: probe.longestStepMs, longestFlushMs: probe.longestFlushMs, longestReadMs: probe.longestReadMs, longestCommitMs: probe.longestCommitMs,
                          longestWriteMs: probe.longestWriteMs, longestWriteSql: probe.longestWriteSql, longestPrepareMs: probe.longestPrepareMs,
                          applyFromS: probe.lastApply == null ? null : (probe.lastApply.start - syncFrom) / 1000, applyToS: probe.lastApply?.end == null ? null : (probe.lastApply.end - syncFrom) / 1000 } };
  } finally {
    await session.close();
    child.kill();
  }
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'oplite-tabs-bench-'));
const browser = await launchBrowser(await buildPage(work));
const rows = Number(opts.rows);
const writes = Number(opts.writes);
const cores = opts.cores.split(',');
const lines = ['| storage | database | first open | second tab open | write in B seen in A, p50 / p99 | read wait in B during A\'s sync | longest task in A | A\'s sync |', '|---|---|---:|---:|---:|---:|---:|---:|'];
try {
  for (const vfs of opts.vfs.split(',')) {
    const samples = Object.fromEntries(cores.map((c) => [c, []]));
    for (let i = 0; i < Number(opts.runs); i++) {
      for (const core of cores) {
        const r = await run(browser, { core, vfs, rows, writes });
        console.error(`${vfs} ${core} run ${i + 1}: ${JSON.stringify(r)}`);
        samples[core].push(r);
      }
    }
    for (const core of cores) {
      const m = (key) => median(samples[core].map((s) => s[key]));
      const ms = (v) => `${Math.round(v)} ms`;
      lines.push(`| ${vfs} | ${core} | ${ms(m('firstOpenMs'))} | ${ms(m('secondOpenMs'))} | ${m('p50').toFixed(1)} / ${m('p99').toFixed(1)} ms | ${ms(m('readWaitMs'))} | ${ms(m('longestTaskInA'))} | ${(m('syncMs') / 1000).toFixed(1)} s |`);
    }
  }
} finally {
  await browser.close();
  fs.rmSync(work, { recursive: true, force: true });
}
console.log(`${rows} rows synced in tab A, ${writes} writes in tab B, medians of ${opts.runs} runs:\n`);
console.log(lines.join('\n'));
