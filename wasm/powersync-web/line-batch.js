// Commits of the sync client's data lines, batched on the writer.
//
// The SDK stores each sync line in a write transaction of its own
// (BEGIN IMMEDIATE, powersync_control('line_binary', line), COMMIT): at
// 1,000,000 rows about a thousand commits, each syncing the journal and the
// file, and each writing again the same last pages of the oplog. A data
// line only adds operations to the oplog; nothing an app reads changes until
// a checkpoint is applied. So the COMMIT of a transaction that stored one
// data line and nothing else is held back: the transaction stays open as a
// batch, and the next line's transaction joins it as a savepoint (its COMMIT
// a RELEASE, its ROLLBACK a ROLLBACK TO). The batch commits when it is
// `maxMs` old (the host's choice per storage), before any other write
// lock's statement on the writer (an app's write, a checkpoint's apply, any
// other powersync_control call) and when the database closes. A line's lock ends without waiting for the
// batch. (A read that names a TEMP table runs on the writer, inside an open
// batch, which it cannot change.)
//
// What this changes, and why the SDK cannot trip over it: a crash loses the
// lines of the open batch, and the next connect downloads them again, as
// the stored bucket positions went with them. A batch that fails to commit
// is rolled back; the sync client's next line then fails (oplite counts an
// iteration's calls in the database and sees that committed calls are
// missing), which ends the SDK's iteration, and the next one starts from
// what is stored. The long story is in docs/web-sdk.md ("Batched line
// commits").

import { BEGIN, COMMIT, CONTROL_CALL, ROLLBACK } from './sql-shapes.js';

const DATA_LINE_TEXT = /^\s*\{\s*"data"\s*:/;
// A BSON document whose first element is the embedded document "data".
const DATA_LINE_BSON = [0x03, 0x64, 0x61, 0x74, 0x61, 0x00];
const SAVEPOINT = 'oplite_line';
const EMPTY = Object.freeze({ columnNames: [], rawRows: [], changes: 0, lastInsertRowid: 0 });
// How soon the timer looks again when it found a lock inside the batch.
const DUE_AGAIN_MS = 20;

function bytes(payload) {
  if (payload instanceof Uint8Array) return payload;
  if (payload instanceof ArrayBuffer) return new Uint8Array(payload);
  if (ArrayBuffer.isView(payload)) return new Uint8Array(payload.buffer, payload.byteOffset, payload.byteLength);
  return null;
}

/** Whether powersync_control(op, payload) stores a data line (and so applies nothing). */
export function isDataLine(op, payload) {
  if (op === 'line_text') return typeof payload === 'string' && DATA_LINE_TEXT.test(payload);
  if (op !== 'line_binary') return false;
  const b = bytes(payload);
  if (b == null || b.length < 4 + DATA_LINE_BSON.length) return false;
  return DATA_LINE_BSON.every((byte, i) => b[4 + i] === byte);
}

/** Whether a statement calls powersync_control for a line (data or not). */
function lineCall(sql, params) {
  return CONTROL_CALL.test(sql) && params?.length === 2 && (params[0] === 'line_binary' || params[0] === 'line_text');
}

export class LineBatch {
  #db;
  #write;
  #maxMs;
  // A batch is open: the writer's transaction holds lines whose COMMIT the
  // sync client was told of.
  #open = false;
  #openedAt = 0;
  #timer = null;
  // The lock whose transaction is on the writer: {key, state, lineOnly,
  // begin}. state: 'real' (its own BEGIN ran), 'pending' (its BEGIN came
  // while a batch was open and has not run yet), 'savepoint' (it joined
  // the batch).
  #current = null;
  #queue = Promise.resolve();
  #counts = { batches: 0, lines: 0 };

  /**
   * db: the writer (oplite.js Database); write(sql, params): how the host
   * runs a statement on it; maxMs: how long a batch may stay open.
   */
  constructor(db, write, { maxMs = 500 } = {}) {
    this.#db = db;
    this.#write = write;
    this.#maxMs = maxMs;
  }

  /** How many batches committed, and how many lines they held. */
  get counts() {
    return { ...this.#counts };
  }

  // Runs fn after every call of this class before it: a host in the page
  // (no Worker) may deliver a lock's next statement, or the timer fire,
  // while a statement here awaits the database.
  #serial(fn) {
    const result = this.#queue.then(fn);
    this.#queue = result.then(() => undefined, () => undefined);
    return result;
  }

  /**
   * One call of lock `key` on the writer, of statement `sql` (with
   * `params`, or null for several sets); `call()` runs it as the host
   * does. Resolves to its result.
   */
  statement(key, sql, params, call) {
    return this.#serial(() => this.#statement(key, sql, params, call));
  }

  async #statement(key, sql, params, call) {
    const current = this.#current;
    if (current != null && current.key !== key) await this.#abandon(current);
    if (this.#open && this.#current == null) {
      if (BEGIN.test(sql)) {
        this.#current = { key, state: 'pending', statements: 0, lineOnly: false, begin: sql };
        return EMPTY;
      }
      await this.#commitQuietly();
    }
    const c = this.#current;
    if (c == null) return this.#outside(key, sql, params, call);
    if (COMMIT.test(sql)) return this.#end(c, call);
    if (ROLLBACK.test(sql)) return this.#rollback(c, call);
    const dataLine = lineCall(sql, params) && isDataLine(params[0], params[1]);
    if (c.state === 'pending') {
      if (dataLine) {
        await this.#write(`SAVEPOINT ${SAVEPOINT}`, []);
        c.state = 'savepoint';
      } else {
        await this.#commitQuietly();
        await this.#write(c.begin, []);
        c.state = 'real';
      }
    }
    // Only a transaction whose one statement stores a data line joins a batch.
    c.lineOnly = dataLine && c.statements === 0;
    c.statements++;
    try {
      return await call();
    } catch (e) {
      // SQLite may have rolled back the whole transaction (an I/O error, a
      // full disk): the lock's ROLLBACK then runs as sent, and fails as it
      // would have without batches.
      if (!(await this.#db.inTransaction())) {
        this.#forget();
        c.state = 'real';
      }
      throw e;
    }
  }

  // A statement with no transaction of this class's on the writer.
  async #outside(key, sql, params, call) {
    const result = await call();
    if (BEGIN.test(sql)) this.#current = { key, state: 'real', statements: 0, lineOnly: false, begin: sql };
    return result;
  }

  // The lock's COMMIT.
  async #end(c, call) {
    this.#current = null;
    if (c.state === 'pending') return this.#afterLock();
    const keep = c.lineOnly;
    if (c.state === 'savepoint') {
      await this.#write(`RELEASE ${SAVEPOINT}`, []);
      this.#counts.lines++;
      if (!keep) return this.#commitOrThrow();
      return this.#afterLock();
    }
    if (!keep) return call();
    this.#open = true;
    this.#openedAt = performance.now();
    this.#counts.lines++;
    this.#timer = setTimeout(() => this.#due(), this.#maxMs);
    return EMPTY;
  }

  // The lock's ROLLBACK.
  async #rollback(c, call) {
    this.#current = null;
    if (c.state === 'pending') return this.#afterLock();
    if (c.state === 'real') return call();
    if (await this.#db.inTransaction()) {
      await this.#write(`ROLLBACK TO ${SAVEPOINT}`, []);
      await this.#write(`RELEASE ${SAVEPOINT}`, []);
    } else {
      this.#forget();
    }
    return this.#afterLock();
  }

  // A lock of the batch ended: the batch commits if it is old enough.
  async #afterLock() {
    if (performance.now() - this.#openedAt >= this.#maxMs) await this.#commitQuietly();
    return EMPTY;
  }

  // The batch's timer: it commits, or, with a lock inside it, looks again
  // shortly (the end of that lock commits a batch that is old enough).
  #due() {
    this.#timer = null;
    this.#serial(async () => {
      if (!this.#open) return;
      if (this.#current == null) await this.#commitQuietly();
      else this.#timer = setTimeout(() => this.#due(), DUE_AGAIN_MS);
    }).catch(() => {});
  }

  // A lock ended (or another lock's statement came) inside its
  // transaction: the transaction stays open, as it would have without
  // batching, for a later lock to end.
  async #abandon(c) {
    this.#current = null;
    if (c.state === 'pending') {
      await this.#commitQuietly();
      await this.#write(c.begin, []);
    } else if (c.state === 'savepoint') {
      // Its lines stay in the open transaction, no longer a batch: a later
      // lock ends it, and oplite's iteration check catches lines a ROLLBACK
      // then drops.
      if (await this.#db.inTransaction()) await this.#write(`RELEASE ${SAVEPOINT}`, []);
      this.#forget();
    }
  }

  #forget() {
    this.#open = false;
    clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** Lock `key` ends: a transaction it left open stays open. */
  released(key) {
    return this.#serial(() => this.#released(key));
  }

  async #released(key) {
    if (this.#current?.key === key && this.#current.state !== 'real') await this.#abandon(this.#current);
    else if (this.#current?.key === key) this.#current = null;
  }

  /**
   * Commits the open batch, if any and no lock is in it. A batch that
   * fails to commit is rolled back, not thrown: the caller's statement is
   * another's, and the sync client hears of it at its next line.
   */
  commit() {
    return this.#serial(() => (this.#current != null ? EMPTY : this.#commitQuietly()));
  }

  // Commits the open batch, if any; one that fails is rolled back (commit()).
  async #commitQuietly() {
    if (!this.#open) return EMPTY;
    try {
      return await this.#commitOrThrow();
    } catch {
      return EMPTY;
    }
  }

  // Commits the batch; if that fails, rolls it back and throws.
  async #commitOrThrow() {
    this.#forget();
    try {
      const result = await this.#write('COMMIT', []);
      this.#counts.batches++;
      return result;
    } catch (e) {
      if (await this.#db.inTransaction()) await this.#write('ROLLBACK', []).catch(() => {});
      throw e;
    }
  }
}
