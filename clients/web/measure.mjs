// What the web benchmark measures outside the page (bench.mjs): the page's
// main thread through DevTools' Performance metrics (the SDK's JavaScript,
// its sync client and the adapter's messages run there), and the peak
// resident memory of the page's renderer process (which also runs its
// dedicated Workers), read from Linux's /proc.
import fs from 'node:fs';

/** Starts counting `page`'s main-thread time; `read()` resolves to the ms since. */
export async function mainThread(context, page) {
  const cdp = await context.newCDPSession(page);
  await cdp.send('Performance.enable');
  const now = async () => Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));
  const before = await now();
  return {
    async read() {
      const after = await now();
      const ms = (name) => Math.round((after[name] - before[name]) * 1000);
      return { scriptMs: ms('ScriptDuration'), taskMs: ms('TaskDuration'), jsHeapBytes: after.JSHeapUsedSize };
    },
  };
}

const processes = () => fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d));
const readProc = (pid, file) => {
  try {
    return fs.readFileSync(`/proc/${pid}/${file}`, 'utf8');
  } catch {
    return '';
  }
};

/**
 * The largest peak resident set (VmHWM, bytes) among the renderer
 * processes of the Chromium whose profile is `profile`; null off Linux.
 */
export function rendererPeakRss(profile) {
  if (!fs.existsSync('/proc/self/status')) return null;
  const parent = new Map();
  let browser = null;
  for (const pid of processes()) {
    // /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces.
    const stat = readProc(pid, 'stat');
    parent.set(pid, stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (readProc(pid, 'cmdline').split('\0').includes(`--user-data-dir=${profile}`)) browser = pid;
  }
  if (browser == null) return null;
  const descends = (pid) => {
    for (let p = pid; p && p !== '0' && p !== '1'; p = parent.get(p)) if (p === browser) return true;
    return false;
  };
  let peak = null;
  for (const pid of processes().filter(descends)) {
    if (!readProc(pid, 'cmdline').includes('--type=renderer')) continue;
    const kb = Number(/VmHWM:\s+(\d+) kB/.exec(readProc(pid, 'status'))?.[1]);
    if (kb > 0) peak = Math.max(peak ?? 0, kb * 1024);
  }
  return peak;
}
