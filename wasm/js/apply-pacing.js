// Paces a checkpoint's apply so that the page stays responsive: the rows go
// in with oplite_apply_step in steps of about STEP_MS inside the open
// transaction, the event loop turns between steps (so reads run meanwhile,
// on a Reader, which sees the last committed state), and every
// FLUSH_EVERY_MS of steps the writer writes and syncs what it changed, so
// that the COMMIT after the apply is short. Database uses it for control()
// when it has a Reader, and applyInSteps() offers it to hosts that hold the
// transaction themselves (@oplite/powersync-web). Knows nothing of the
// database: the caller passes the calls, synchronous or not.

// A step should take about this long; the first of an apply, or of a stage
// of it, writes this many rows.
const STEP_MS = 20;
const FIRST_STEP_ROWS = 500;
// A step this slow is kept in slowSteps, for diagnosis.
const SLOW_STEP_MS = 60;
const MAX_SLOW_STEPS = 20;
// After about this much of the apply's work, write the changed pages into
// the file and sync it.
const FLUSH_EVERY_MS = 50;

// Lets queued work run: a macrotask, without the clamping of nested setTimeout.
function turnEventLoop() {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(null);
  });
}

// How long fn's promise (or value) took, in ms.
async function timed(fn) {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

export class ApplyPacer {
  // Rows per step, adapted so that a step takes about STEP_MS.
  #stepRows = FIRST_STEP_ROWS;
  #steps = 0;
  // The longest step (ms, rows asked for, its stage, and what it grew: wasm
  // memory, temporary-file and database bytes written).
  #longestStep = { ms: 0, rows: 0, stage: 0, grewMemory: 0, tempBytes: 0, dbBytes: 0 };
  #slowSteps = [];
  #longestFlushMs = 0;
  #longestSyncMs = 0;
  // The longest prepare (it reads the whole checkpoint's state in one call).
  #longestPrepareMs = 0;
  // When (Date.now()) the last paced apply started and ended.
  #lastApply = null;
  // Sums over every apply, ms: prepares, steps, cacheFlush and syncFile.
  #totals = { prepareMs: 0, stepsMs: 0, flushMs: 0, syncMs: 0 };

  /**
   * Applies in steps if `calls.prepare()` says the coming powersync_control
   * call will apply a checkpoint. calls: prepare() -> boolean, step(rows) ->
   * the stage the next step continues (0 once done), cacheFlush(),
   * syncFile(), stats() -> oplite's write counters. Resolves to whether it
   * stepped.
   */
  async run(calls) {
    let applies;
    const prepareMs = await timed(async () => { applies = await calls.prepare(); });
    this.#longestPrepareMs = Math.max(this.#longestPrepareMs, prepareMs);
    this.#totals.prepareMs += prepareMs;
    if (!applies) return false;
    this.#lastApply = { start: Date.now(), end: null };
    let sinceFlushMs = 0;
    let lastStage = 1;
    for (;;) {
      const rows = this.#stepRows;
      const before = await calls.stats();
      const started = performance.now();
      const stage = await calls.step(rows);
      const took = Math.max(performance.now() - started, 0.1);
      const after = await calls.stats();
      // Rows cost differently in each stage: a new stage starts from few rows again.
      this.#stepRows = stage !== lastStage ? FIRST_STEP_ROWS : Math.round(Math.min(Math.max(rows * Math.min(STEP_MS / took, 4), 100), 200000));
      this.#note(took, rows, lastStage, before, after);
      this.#totals.stepsMs += took;
      lastStage = stage;
      sinceFlushMs += took;
      if (sinceFlushMs >= FLUSH_EVERY_MS) {
        sinceFlushMs = 0;
        // Writing the pages and syncing the file are tasks of their own.
        await turnEventLoop();
        const flushMs = await timed(() => calls.cacheFlush());
        this.#longestFlushMs = Math.max(this.#longestFlushMs, flushMs);
        await turnEventLoop();
        const syncMs = await timed(() => calls.syncFile());
        this.#longestSyncMs = Math.max(this.#longestSyncMs, syncMs);
        this.#totals.flushMs += flushMs;
        this.#totals.syncMs += syncMs;
      }
      if (stage === 0) {
        this.#lastApply.end = Date.now();
        return true;
      }
      await turnEventLoop();
    }
  }

  #note(took, rows, stage, before, after) {
    this.#steps++;
    if (took <= this.#longestStep.ms && took <= SLOW_STEP_MS) return;
    const step = { ms: Math.round(took), rows, stage,
                   grewMemory: after.wasmMemoryBytes - before.wasmMemoryBytes,
                   tempBytes: after.tempBytesWritten - before.tempBytesWritten,
                   dbBytes: after.dbBytesWritten - before.dbBytesWritten, at: this.#steps };
    if (took > this.#longestStep.ms) this.#longestStep = step;
    if (took > SLOW_STEP_MS && this.#slowSteps.length < MAX_SLOW_STEPS) this.#slowSteps.push(step);
  }

  /** The counters stats() reports. */
  report() {
    return { applySteps: this.#steps, longestStepMs: this.#longestStep.ms, longestStep: this.#longestStep, slowSteps: this.#slowSteps,
             longestFlushMs: Math.round(this.#longestFlushMs), longestSyncMs: Math.round(this.#longestSyncMs),
             longestPrepareMs: Math.round(this.#longestPrepareMs), lastApply: this.#lastApply,
             applyPrepareMs: Math.round(this.#totals.prepareMs), applyStepsMs: Math.round(this.#totals.stepsMs),
             applyFlushMs: Math.round(this.#totals.flushMs), applySyncMs: Math.round(this.#totals.syncMs) };
  }
}
