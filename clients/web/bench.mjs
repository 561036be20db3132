// The web SDK first-sync benchmark (docs/web-sdk.md, "Benchmark"): in
// headless Chromium, @powersync/web syncs --rows rows with its own database
// and with oplite's, on OPFS and on IndexedDB, --runs times each,
// alternating the two databases; the drop-in scenario without its
// trackTableDiff triggers. Reports medians of the initial sync (connect to
// the first complete sync) and of the longest time a query (counting the
// synced rows through db.get, issued every 20 ms from the page) waited
// meanwhile, and the sizes of the .wasm files each database loads. Every
// count a query saw must be none or all of the rows; oplite's apply steps
// (how many, the longest) are reported. A second table splits the time of
// the first sync (docs/web-sdk.md, "Where the time goes"): the page's main
// thread (the SDK's JavaScript and the adapter's messages) for both
// databases; for oplite, its Worker's powersync_control calls, the apply's
// parts, the storage's reads, writes and syncs, IndexedDB's batches, and
// the WASM memory; for both, the renderer's peak resident memory. Each row
// is set beside the storage floor: oplite-wasm writing the same final
// database with plain inserts (floor-page.mjs), --runs times too.
//
//   OPLITE_TEST_SERVER=target/release/oplite-test-server node bench.mjs [--rows 100000,1000000] [--runs 3] [--vfs opfs,idb] [--cores bundled,oplite] [--key K]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { benchArgs } from './bench-args.mjs';
import { ADAPTER_PACKAGE, buildPage, launchBrowser, runInBrowser } from './browser.mjs';

// --key K: both databases encrypted with K (each its own way: the SDK's
// SQLite3MultipleCiphers build of wa-sqlite, oplite's cipher VFS).
const { opts, server } = benchArgs({ rows: { type: 'string', default: '100000,1000000' }, key: { type: 'string' } });
const runs = Number(opts.runs);
const cores = opts.cores.split(',');
/** A run's split (probe.mjs's afterFirstSync): the page's main thread, oplite's Worker. */
function splitOf(p) {
  const w = p.profile ?? {};
  const apply = (w.applyPrepareMs ?? 0) + (w.applyStepsMs ?? 0) + (w.applyFlushMs ?? 0) + (w.applySyncMs ?? 0);
  return { script: p.mainThread?.scriptMs, tasks: p.mainThread?.taskMs, control: w.controlMs, apply: w.controlMs != null ? apply : undefined,
           rest: w.controlMs != null ? w.controlMs - apply : undefined, read: w.vfsReadMs, write: w.vfsWriteMs, fsync: w.vfsSyncMs,
           idb: w.idbBatchMs, wasm: w.wasmMemoryBytes };
}

function profileRow(rows, vfs, core, samples) {
  const m = (key) => (samples.every((s) => s[key] != null) ? median(samples.map((s) => s[key])) : null);
  const n = (key) => (m(key) == null ? '-' : String(Math.round(m(key))));
  const mb = (key) => (m(key) == null ? '-' : `${(m(key) / 1e6).toFixed(0)} MB`);
  return `| ${rows} | ${vfs} | ${core === 'bundled' ? "the SDK's own" : 'oplite'} | ${n('sync')} | ${n('script')} / ${n('tasks')} | ${n('control')} | ${n('apply')} | ${n('rest')} | ` +
    `${n('read')} / ${n('write')} / ${n('fsync')} | ${n('idb')} | ${mb('wasm')} | ${mb('rss')} |`;
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'oplite-web-bench-'));
const page = await buildPage(work);
const browser = await launchBrowser(page);
const table = [];
const profileTable = [];
try {
  for (const rows of opts.rows.split(',').map(Number)) {
    for (const vfs of opts.vfs.split(',')) {
      const samples = Object.fromEntries(cores.map((c) => [c, []]));
      for (let i = 0; i < runs; i++) {
        for (const core of cores) {
          const r = await runInBrowser(browser, server, { core, vfs, mode: 'legacy', rows, raw: false, triggers: false, probeMs: 20, probeSql: 'count', measure: true, encryptionKey: opts.key });
          if (r.failed) throw new Error(`the ${core} run (${vfs}, ${rows} rows) failed while ${r.step}: ${r.failed}`);
          const p = r.afterFirstSync;
          if (p.partialCounts.length > 0) throw new Error(`the ${core} run (${vfs}, ${rows} rows): queries saw part of the checkpoint: ${p.partialCounts.slice(0, 5)}`);
          const split = splitOf(p);
          samples[core].push({ sync: r.timings.initialSyncMs, wait: p.longestWaitMs, waitBefore: p.longestWaitBeforeRowsMs, queries: p.queries, steps: p.applySteps, longestStep: p.longestStepMs,
            ...split, rss: r.rendererPeakRss });
          console.error(`  split: ${JSON.stringify(split)}, renderer peak RSS ${r.rendererPeakRss}; Worker: ${JSON.stringify(p.profile)}`);
          console.error(`${rows} rows, ${vfs}, ${core} run ${i + 1}: initial sync ${r.timings.initialSyncMs} ms, longest query wait ${p.longestWaitMs} ms (${p.queries} queries; before the rows were there ${p.longestWaitBeforeRowsMs} ms)` +
            (p.applySteps != null ? `; ${p.applySteps} apply steps, the longest ${p.longestStepMs} ms (${JSON.stringify(p.longestStep)}), cacheFlush ${p.longestFlushMs} ms, syncFile ${p.longestSyncMs} ms; the longest COMMIT ${p.longestCommitMs} ms, read ${p.longestReadMs} ms (${p.longestReadSql?.replace(/\s+/g, ' ').slice(0, 60)}); the longest wait began ${p.lastApply ? `${p.longestWaitFrom - p.lastApply.start} ms after the apply's first step (its last ended at ${p.lastApply.end - p.lastApply.start} ms), ` : ''}${p.stoppedAt - p.longestWaitFrom} ms before the first sync's end; SQLite's memory high-water ${(p.memoryHighwater / 1e6).toFixed(0)} MB, wasm memory ${(p.wasmMemoryBytes / 1e6).toFixed(0)} MB` : ''));
        }
      }
      // The floor: the same final database written with plain inserts (floor-page.mjs).
      const floors = [];
      for (let i = 0; i < runs; i++) {
        const f = await browser.storageFloor({ vfs, rows });
        if (f.ops !== rows || f.rows !== rows) throw new Error(`the floor (${vfs}, ${rows} rows) wrote ${JSON.stringify(f)}`);
        floors.push(f.ms);
        console.error(`${rows} rows, ${vfs}, floor run ${i + 1}: ${f.ms} ms, ${(f.bytes / 1e6).toFixed(0)} MB`);
      }
      const floor = median(floors);
      table.push(`| ${rows} | ${vfs} | floor: oplite-wasm, plain inserts | ${floor} | ${Math.min(...floors)} | ${Math.max(...floors)} | - | - | - | 1.00x |`);
      const sync = (core) => median(samples[core].map((s) => s.sync));
      for (const core of cores) {
        const values = samples[core].map((s) => s.sync);
        const steps = core === 'oplite' ? `${median(samples[core].map((s) => s.steps))} / ${median(samples[core].map((s) => s.longestStep))}` : '-';
        const ratio = cores.includes('bundled') ? `${(sync(core) / sync('bundled')).toFixed(2)}x` : '-';
        table.push(`| ${rows} | ${vfs} | ${core === 'bundled' ? "the SDK's own (wa-sqlite)" : 'oplite'} | ${sync(core)} | ${Math.min(...values)} | ${Math.max(...values)} | ` +
          `${median(samples[core].map((s) => s.waitBefore))} / ${median(samples[core].map((s) => s.wait))} | ${steps} | ${ratio} | ${(sync(core) / floor).toFixed(2)}x |`);
        profileTable.push(profileRow(rows, vfs, core, samples[core]));
      }
    }
  }
} finally {
  await browser.close();
  fs.rmSync(work, { recursive: true, force: true });
}

console.log(`\nWeb SDK first sync (@powersync/web 2.4.0, headless Chromium, legacy mode, ${opts.key ? 'encrypted, ' : ''}medians of ${runs} alternating runs; ms)`);
console.log('| rows | storage | database | initial sync | min | max | longest query wait: before the rows / in all | apply steps / longest | vs the SDK\'s own | vs the floor |');
console.log('|---:|---|---|---:|---:|---:|---:|---:|---:|---:|');
for (const line of table) console.log(line);

console.log(`\nWhere the time of the first sync goes (medians, ms; MB = 10^6 bytes): the page's main thread (script, all tasks); oplite's Worker: ` +
  'powersync_control in all, of it the apply (prepare + steps + cacheFlush + syncFile) and the rest (storing lines, the end of the apply); ' +
  "the storage's reads / writes / syncs inside those; IndexedDB's batches (wall time, beside other calls); WASM memory; the renderer's peak RSS over the run");
console.log('| rows | storage | database | initial sync | main thread script / tasks | powersync_control | apply | rest | storage read / write / sync | IndexedDB batches | WASM memory | renderer peak RSS |');
console.log('|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const line of profileTable) console.log(line);

const size = (file) => {
  const bytes = fs.readFileSync(file);
  return `${(bytes.length / 1e6).toFixed(2)} MB raw, ${(zlib.gzipSync(bytes, { level: 9 }).length / 1e6).toFixed(2)} MB gzip -9`;
};
const sdkAssets = path.resolve(path.dirname(new URL(import.meta.url).pathname), 'node_modules/@powersync/web/dist/worker/assets');
console.log('\n.wasm files');
for (const file of fs.readdirSync(sdkAssets).filter((f) => /^wa-sqlite(-async)?-.*\.wasm$/.test(f)).sort()) {
  console.log(`- the SDK's ${file.replace(/-[^-]+\.wasm$/, '.wasm')} (${file.includes('async') ? 'IndexedDB' : 'OPFS'}): ${size(path.join(sdkAssets, file))}`);
}
console.log(`- oplite's oplite_wasm_bg.wasm (both): ${size(path.join(ADAPTER_PACKAGE, 'oplite_wasm_bg.wasm'))}`);
