// The Rust SDK's first sync (docs/benchmarks.md "Rust SDK first sync"):
// the scenario program's --first-sync run (views schema, legacy mode) on
// the reference core 0.5.4 and on oplite, alternating, each against a
// fresh loopback service of `rows` rows (two-tables, sync rules), and
// beside them the `oplite sync --once` CLI on the same stream, so that
// the SDK's own cost shows. Prints medians, ranges and ratios.
//
//   OPLITE_TEST_SERVER=target/release/oplite-test-server node clients/rust/bench.mjs \
//     --reference target/rust-sdk-reference/release/rust-drop-in-reference \
//     --oplite target/release/rust-drop-in --cli target/release/oplite [--rows 100000,1000000] [--runs 5]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startService } from '../node/service.mjs';

const { values: opts } = parseArgs({
  options: {
    reference: { type: 'string' },
    oplite: { type: 'string' },
    cli: { type: 'string' },
    rows: { type: 'string', default: '100000,1000000' },
    runs: { type: 'string', default: '5' },
  },
});
const server = process.env.OPLITE_TEST_SERVER;
if (!opts.reference || !opts.oplite || !opts.cli || !server) {
  console.error('usage: OPLITE_TEST_SERVER=... node bench.mjs --reference BIN --oplite BIN --cli BIN [--rows N,...] [--runs N]');
  process.exit(2);
}
const work = mkdtempSync(join(tmpdir(), 'oplite-rust-bench-'));
// The CLI's schema: the scenario's views schema (schema.rs, Kind::Views).
const schemaFile = join(work, 'schema.json');
writeFileSync(schemaFile, JSON.stringify({
  tables: [
    { name: 'lists', columns: [{ name: 'name', type: 'text' }, { name: 'created_at', type: 'text' }] },
    { name: 'todos', columns: [{ name: 'list_id', type: 'text' }, { name: 'description', type: 'text' }, { name: 'done', type: 'integer' }] },
  ],
}));

const exec = (bin, args) => new Promise((resolve) => {
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  child.on('exit', (code) => resolve(code));
});

let n = 0;
/** One first sync with `who` against a fresh service; milliseconds. */
async function once(who, rows) {
  const { child, url } = await startService(server, rows);
  const db = join(work, `run${n++}.db`);
  try {
    if (who === 'cli') {
      const started = performance.now();
      const code = await exec(opts.cli, ['sync', '--db', db, '--schema', schemaFile, '--endpoint', url, '--token', 'dev', '--once', '--no-progress']);
      if (code !== 0) throw new Error(`oplite sync exited with ${code}`);
      return performance.now() - started;
    }
    const out = `${db}.json`;
    const code = await exec(opts[who], ['--endpoint', url, '--db', db, '--out', out, '--schema', 'views', '--first-sync']);
    const result = JSON.parse(readFileSync(out, 'utf8'));
    if (code !== 0 || result.failed) throw new Error(`${who}: ${result.failed ?? `exit ${code}`}`);
    if (result.rows !== rows) throw new Error(`${who}: ${result.rows} rows, not ${rows}`);
    return result.firstSyncMs;
  } finally {
    child.kill();
    rmSync(db, { force: true });
    for (const suffix of ['-wal', '-shm', '.json']) rmSync(db + suffix, { force: true });
  }
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const fmt = (ms) => Math.round(ms).toLocaleString('en-US');
console.log('| rows | reference 0.5.4 through the SDK | oplite through the SDK | oplite / 0.5.4 | `oplite sync --once` |');
console.log('|---:|---:|---:|---:|---:|');
try {
  for (const rows of opts.rows.split(',').map(Number)) {
    const samples = { reference: [], oplite: [], cli: [] };
    for (let i = 0; i < Number(opts.runs); i++) {
      for (const who of ['reference', 'oplite', 'cli']) samples[who].push(await once(who, rows));
    }
    const cell = (who) => `${fmt(median(samples[who]))} ms (${fmt(Math.min(...samples[who]))} to ${fmt(Math.max(...samples[who]))})`;
    console.log(`| ${rows.toLocaleString('en-US')} | ${cell('reference')} | ${cell('oplite')} | ${(median(samples.oplite) / median(samples.reference)).toFixed(2)}x | ${cell('cli')} |`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
