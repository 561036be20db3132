// What run.mjs (the drop-in comparison) and bench.mjs (the first-sync
// benchmark) share: a fresh loopback service per run, and one run of
// scenario.mjs with a given core.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Starts oplite-test-server (the binary at `server`) with the two-table
// shape of `rows` rows and `extra` arguments; resolves to the child and
// its URL.
export function startService(server, rows, extra = []) {
  return new Promise((resolve, reject) => {
    const child = spawn(server, ['--shape', 'two-tables', '--ops', String(rows), ...extra], { stdio: ['ignore', 'pipe', 'inherit'] });
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

// Runs scenario.mjs once with `core` ('bundled', or 'oplite' loading the
// library at `so`) against a fresh service. `args` are scenario.mjs's
// options besides --core/--url/--dir/--out/--rows; `nodeArgs` go to node
// itself (e.g. --cpu-prof). Resolves to the scenario's result, or
// { core, failed, step } for a run that failed.
export async function runScenario({ core, so, server, rows, work, args = [], nodeArgs = [], stdio = 'inherit' }) {
  const { child, url } = await startService(server, rows);
  try {
    const env = { ...process.env };
    if (core === 'oplite') env.OPLITE_CORE_PATH = so;
    else delete env.OPLITE_CORE_PATH;
    const out = join(work, `${core}.json`);
    const argv = [...nodeArgs, 'scenario.mjs', '--core', core, '--url', url, '--dir', join(work, core), '--out', out, '--rows', String(rows), ...args];
    const code = await new Promise((resolve) => {
      const scenario = spawn(process.execPath, argv, { cwd: fileURLToPath(new URL('.', import.meta.url)), env, stdio });
      const timer = setTimeout(() => scenario.kill('SIGKILL'), 300_000);
      scenario.on('exit', (c, signal) => { clearTimeout(timer); resolve(c ?? signal); });
    });
    // A failed run: what it was doing and why (scenario.mjs writes that).
    let result = null;
    try { result = JSON.parse(readFileSync(out, 'utf8')); } catch {}
    if (code !== 0 || result?.failed) {
      return { core, failed: `${result?.failed ?? 'no result written'} (exit ${code})`, step: result?.step ?? 'unknown' };
    }
    return result;
  } finally {
    child.kill();
  }
}
