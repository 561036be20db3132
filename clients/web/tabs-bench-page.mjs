// The browser side of the tabs benchmark (tabs-bench.mjs): one database of
// the drop-in schema opened in several pages of one profile, either the
// SDK's own ('bundled': its default, which shares the database between
// tabs) or oplite's (multiTab at its default, the same). window.tabsBench's
// calls act on this page's PowerSyncDatabase. Times are
// performance.timeOrigin + performance.now(), comparable across pages.
import * as sdk from '@powersync/web';
import { databaseOptions } from './databases.mjs';
import { dropInSchema } from '../scenario/drop-in.mjs';
import { COUNT_ROWS, probeQueries } from './probe.mjs';

const now = () => performance.timeOrigin + performance.now();
const BENCH_ROWS = "SELECT count(*) AS n FROM todos WHERE list_id = 'bench'";

let db = null;
// When the watched count of bench rows first showed each value.
const seenAt = new Map();
const waiters = new Map();
let probe = null;
// This page's main-thread tasks of 50 ms or more (the Long Tasks API)
// since startTasks(): a tab whose main thread relays the other tabs'
// calls delays them by as much.
let tasks = null;

const connector = {
  async fetchCredentials() {
    const token = await (await fetch(`${location.origin}/dev/token?ttl=3600`)).text();
    return { endpoint: location.origin, token };
  },
  uploadData: () => new Promise(() => {}),
};

window.tabsBench = {
  // Opens the database; resolves to how long init() took, in ms.
  async open({ core, vfs, name }) {
    const started = now();
    db = new sdk.PowerSyncDatabase({ schema: dropInSchema(sdk, false), ...databaseOptions({ core, vfs, dbFilename: name }) });
    await db.init();
    return now() - started;
  },
  // Watches the count of bench rows, with no throttle.
  watch() {
    db.watch(BENCH_ROWS, [], {
      onResult: (r) => {
        const n = r.rows._array[0].n;
        if (!seenAt.has(n)) seenAt.set(n, now());
        waiters.get(n)?.(seenAt.get(n));
      },
    }, { throttleMs: 0 });
    return true;
  },
  // Resolves to when the watched count first showed n.
  seen(n) {
    return seenAt.get(n) ?? new Promise((resolve) => waiters.set(n, resolve));
  },
  // Writes bench row i; resolves to when it began.
  async write(i) {
    const started = now();
    await db.execute("INSERT INTO todos (id, list_id, description, done) VALUES (?, 'bench', 'from another tab', 0)", [`bench${i}`]);
    return started;
  },
  // Connects and resolves once the first sync is complete, to its ms.
  async sync() {
    const started = now();
    await db.connect(connector, { retryDelayMs: 200 });
    await db.waitForFirstSync();
    return now() - started;
  },
  // Counts the synced rows every everyMs until stopProbe().
  startProbe(everyMs) {
    probe = probeQueries(db, everyMs, COUNT_ROWS);
    return true;
  },
  stopProbe() {
    return probe.stop();
  },
  startTasks() {
    const durations = [];
    const observer = new PerformanceObserver((list) => durations.push(...list.getEntries().map((e) => e.duration)));
    observer.observe({ type: 'longtask' });
    tasks = { durations, observer };
    return true;
  },
  // The longest long task since startTasks(), and how many there were.
  stopTasks() {
    tasks.observer.disconnect();
    const { durations } = tasks;
    return { longestTaskMs: Math.round(Math.max(0, ...durations)), longTasks: durations.length };
  },
  // Every row of the drop-in tables.
  async count() {
    return (await db.get(COUNT_ROWS)).n;
  },
};
