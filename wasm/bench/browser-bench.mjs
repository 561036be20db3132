// The browser benchmark: initial sync of generated streams (100k and 1M ops)
// into OPFS and IndexedDB in headless Chromium, with SQLite's default
// pragmas, next to the native build syncing the same stream into a file.
// Prints a markdown table.
//
//   scripts/bench-wasm.sh                       (builds what it needs, then runs this)
//   node wasm/bench/browser-bench.mjs [--ops 100000,1000000] [--vfs opfs,idb] [--runs 1]
//
// Columns:
//   total     start to the end of the stream (for idb: until IndexedDB has it all)
//   apply     the checkpoint_complete call (validation and sync_local)
//   longest   the longest single call into the module: how long the worker
//             (and any query queued behind it) was blocked at once
//   temp      bytes written to temporary files (temp b-trees, spills)
//   vs native total time over the native build's total for the same stream
//   reopen    opening the database again in a new page (idb: loading it all)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { launch, call } from '../test/browser.mjs';
import { streamLines } from '../test/stream.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const sizes = arg('ops', '100000,1000000').split(',').map(Number);
const vfsList = arg('vfs', 'opfs,idb').split(',');
const runs = Number(arg('runs', '1'));
const nativeBin = path.join(repo, 'target/release/bench-sync');

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const secs = (ms) => (ms / 1000).toFixed(2);
const fmtOps = (n) => (n >= 1e6 ? `${n / 1e6}M` : `${n / 1e3}k`);
const mb = (b) => (b / 1024 / 1024).toFixed(1);

function native(ops) {
  const file = path.join(os.tmpdir(), `oplite-bench-${ops}.ndjson`);
  fs.writeFileSync(file, streamLines(ops).map((l) => JSON.stringify(l)).join('\n') + '\n');
  const results = [];
  for (let i = 0; i < runs; i++) {
    results.push(JSON.parse(execFileSync(nativeBin, [file], { encoding: 'utf8', maxBuffer: 1 << 20 })));
  }
  fs.rmSync(file, { force: true });
  const r = results.find((x) => x.totalMs === median(results.map((y) => y.totalMs)));
  if (!r.completed || r.rows !== ops) throw new Error(`native sync of ${ops} ops failed: ${JSON.stringify(r)}`);
  return r;
}

async function browserRun(vfs, ops) {
  const results = [];
  for (let i = 0; i < runs; i++) {
    // A fresh profile per run: empty storage, no quota left over.
    const browser = await launch();
    try {
      const page = await browser.newPage();
      await call(page, 'open', { name: 'bench', vfs });
      const r = await call(page, 'sync', { ops });
      const [size] = await call(page, 'query', { sql: 'SELECT page_count * page_size AS bytes FROM pragma_page_count, pragma_page_size' });
      await call(page, 'close');
      // Reopen in a new page: for idb this loads the whole file from IndexedDB.
      await page.close();
      const again = await browser.newPage();
      const t0 = Date.now();
      await call(again, 'open', { name: 'bench', vfs });
      const reopenMs = Date.now() - t0;
      const rows = await call(again, 'count');
      const { wasmMemoryBytes } = await call(again, 'stats');
      await call(again, 'close');
      if (!r.completed || rows !== ops) throw new Error(`${vfs} sync of ${ops} ops failed: ${JSON.stringify(r)} rows ${rows}`);
      results.push({ ...r, dbBytes: size.bytes, reopenMs, wasmMemoryBytes });
    } catch (e) {
      results.push({ error: String(e.message || e).split('\n')[0], logs: browser.logs.slice(-5) });
    } finally {
      await browser.close();
    }
  }
  const ok = results.filter((r) => !r.error);
  if (ok.length === 0) return results[0];
  return ok.find((x) => x.totalMs === median(ok.map((y) => y.totalMs)));
}

const wasmFile = path.join(repo, 'wasm/pkg/oplite_wasm_bg.wasm');
const wasmBytes = fs.readFileSync(wasmFile);
const gzipBytes = zlib.gzipSync(wasmBytes, { level: 9 }).length;
const chromiumVersion = execFileSync('/usr/bin/chromium', ['--version'], { encoding: 'utf8' }).trim().split('\n')[0];

const rows = [];
for (const ops of sizes) {
  process.stderr.write(`native ${fmtOps(ops)}...\n`);
  const n = native(ops);
  rows.push({ storage: 'native (file)', ops, r: n, native: n });
  for (const vfs of vfsList) {
    process.stderr.write(`${vfs} ${fmtOps(ops)}...\n`);
    rows.push({ storage: vfs === 'opfs' ? 'OPFS' : 'IndexedDB', ops, r: await browserRun(vfs, ops), native: n });
  }
}

console.log(`\nInitial sync, ${os.cpus().length} cores, ${chromiumVersion}, SQLite ${rows[0].r.sqlite}; default pragmas; median of ${runs} run(s).\n`);
console.log('| storage | ops | total (s) | apply (s) | longest call (ms) | temp-file bytes | db size (MB) | vs native | reopen (s) | wasm memory after reopen (MB) |');
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const { storage, ops, r, native: n } of rows) {
  if (r.error) {
    console.log(`| ${storage} | ${fmtOps(ops)} | failed: ${r.error} | | | | | | | |`);
    continue;
  }
  const temp = r.tempBytesWritten ?? 0;
  const ratio = storage.startsWith('native') ? '1.00x' : `${(r.totalMs / n.totalMs).toFixed(2)}x`;
  const isNative = storage.startsWith('native');
  const reopen = isNative ? 'n/a' : secs(r.reopenMs);
  const memory = isNative ? 'n/a' : mb(r.wasmMemoryBytes);
  console.log(`| ${storage} | ${fmtOps(ops)} | ${secs(r.totalMs)} | ${secs(r.applyMs)} | ${r.longestCallMs.toFixed(0)} | ${isNative ? 'n/a' : temp} | ${mb(r.dbBytes)} | ${ratio} | ${reopen} | ${memory} |`);
}
console.log(`\nwasm: ${wasmBytes.length} bytes raw (${mb(wasmBytes.length)} MB), ${gzipBytes} bytes gzip -9 (${mb(gzipBytes)} MB).`);
