// The query probe of the web tests and benchmarks (page.mjs,
// tabs-bench-page.mjs): a query issued every few ms through db.get while a
// sync runs, and the longest any of them waited. oplite's counters come
// with it when the database is oplite's.

// The synced rows, in one statement (one snapshot).
export const COUNT_ROWS = 'SELECT (SELECT count(*) FROM lists) + (SELECT count(*) FROM todos) AS n';

// Where oplite's Worker spent its time, ms (sums since it opened; the
// benchmark's profile, docs/web-sdk.md "Where the time goes").
const PROFILE_KEYS = ['controlCalls', 'controlMs', 'lineBatches', 'batchedLines', 'writeStatementsMs', 'readStatementsMs', 'applyPrepareMs', 'applyStepsMs', 'applyFlushMs', 'applySyncMs',
  'vfsReadMs', 'vfsWriteMs', 'vfsSyncMs', 'vfsReads', 'vfsWrites', 'vfsSyncs', 'idbBatches', 'idbBatchMs', 'wasmMemoryBytes', 'memoryHighwater'];
function profileOf(stats) {
  return Object.fromEntries(PROFILE_KEYS.filter((k) => stats[k] != null).map((k) => [k, Math.round(stats[k])]));
}

// Issues a query every `everyMs` while the first sync runs; `stop()`
// resolves to the longest time one waited, how many ran, and the row
// counts they saw other than none and all (the first sync is one
// checkpoint: a reader must see it all at once or not at all). Also the
// longest wait of the queries that saw none of the rows yet (during the
// download and the apply), whose own run is short: once the checkpoint
// is there, counting 1,000,000 rows itself takes over 100 ms.
export function probeQueries(db, everyMs, sql) {
  let longest = 0;
  let longestAt = null;
  let longestBeforeRows = 0;
  let count = 0;
  let running = true;
  const counts = new Set();
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      const row = await db.get(sql);
      const took = performance.now() - started;
      if (took > longest) {
        longest = took;
        longestAt = Date.now() - took;
      }
      if (row.n === 0) longestBeforeRows = Math.max(longestBeforeRows, took);
      if (row.n != null) counts.add(row.n);
      count++;
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    async stop() {
      // The page's main-thread time so far, where the benchmark asks for it (browser.mjs).
      const mainThread = typeof globalThis.opliteMainThread === 'function' ? await globalThis.opliteMainThread() : null;
      running = false;
      await loop;
      const all = (await db.get(COUNT_ROWS)).n;
      const partialCounts = [...counts].filter((n) => n !== 0 && n !== all);
      const adapterStats = typeof db.database.stats === 'function' ? await db.database.stats() : null;
      return { longestWaitMs: Math.round(longest), longestWaitBeforeRowsMs: Math.round(longestBeforeRows), queries: count, partialCounts, rows: all,
               applySteps: adapterStats?.applySteps ?? null, longestStepMs: adapterStats?.longestStepMs ?? null, longestStep: adapterStats?.longestStep ?? null, slowSteps: adapterStats?.slowSteps ?? null, longestFlushMs: adapterStats?.longestFlushMs ?? null, longestSyncMs: adapterStats?.longestSyncMs ?? null,
               longestCommitMs: adapterStats?.longestCommitMs ?? null, unsteppedControlCalls: adapterStats?.unsteppedControlCalls ?? null, longestReadMs: adapterStats?.longestReadMs ?? null,
               longestReadSql: adapterStats?.longestReadSql ?? null, longestWriteMs: adapterStats?.longestWriteMs ?? null,
               longestWriteSql: adapterStats?.longestWriteSql ?? null, longestPrepareMs: adapterStats?.longestPrepareMs ?? null,
               longestWaitFrom: longestAt, lastApply: adapterStats?.lastApply ?? null, stoppedAt: Date.now(), memoryHighwater: adapterStats?.memoryHighwater ?? null, wasmMemoryBytes: adapterStats?.wasmMemoryBytes ?? null,
               profile: adapterStats && profileOf(adapterStats), mainThread };
    },
  };
}
