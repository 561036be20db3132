// Types of oplite.js: oplite (PowerSync-compatible sync engine) and SQLite in
// one WebAssembly module.

/**
 * oplite and SQLite in one WebAssembly module, behind a small promise-based
 * API.
 *
 * {@link open} opens a database (creating it if needed) on one of three
 * storages ({@link Vfs}) and runs `powersync_init()`, so the SQL surface of
 * the PowerSync core (`powersync_control()`, `powersync_replace_schema()`,
 * ...) is there at once. Calls on a {@link Database} are queued and run one
 * at a time, in order; {@link Database.openReader} adds a read-only second
 * connection whose reads never wait for the writer. {@link syncStream} is a
 * minimal sync driver, enough to sync from a PowerSync-protocol service
 * without an SDK.
 *
 * Runs in dedicated Workers (every storage), in windows (`'memory'` and
 * `'idb'`) and in Node (`'memory'`).
 *
 * @example
 * ```ts
 * import { open, syncStream } from 'oplite-wasm';
 *
 * const db = await open({ name: 'app', vfs: 'opfs' }); // in a dedicated Worker
 * db.onTablesChanged((tables) => console.log('changed:', tables));
 * await db.execute('CREATE TABLE IF NOT EXISTS notes(id TEXT PRIMARY KEY, body TEXT)');
 * await db.execute('INSERT INTO notes(id, body) VALUES (?, ?)', ['n1', 'hello']);
 * const rows = await db.query('SELECT * FROM notes WHERE id = :id', { id: 'n1' });
 * await syncStream(db, { url: '/sync/stream', onStatus: (status) => console.log(status) });
 * await db.close();
 * ```
 *
 * @packageDocumentation
 */

/**
 * A value bound to a statement parameter.
 *
 * - `null` and `undefined` bind NULL;
 * - booleans bind the INTEGER 0 or 1;
 * - numbers bind an INTEGER when they are integral and within ±(2^53 - 1),
 *   otherwise a REAL;
 * - bigints bind an INTEGER (one that does not fit in 64 bits is refused);
 * - strings bind TEXT;
 * - `Uint8Array` and `ArrayBuffer` bind a BLOB (a copy of the bytes).
 *
 * Any other value is refused with an `Error` naming the parameter.
 */
export type SqlParam = null | undefined | boolean | number | bigint | string | Uint8Array | ArrayBuffer;

/**
 * A value read back from SQLite: NULL is `null`, REAL a number, TEXT a
 * string, BLOB a `Uint8Array` (a copy), INTEGER a number within
 * ±(2^53 - 1) and a bigint beyond.
 */
export type SqlValue = null | number | bigint | string | Uint8Array;

/**
 * The parameters of a statement.
 *
 * - An array binds positional parameters (`?`, `?NNN`) in order.
 *   Parameters the array does not reach stay NULL; values past the
 *   statement's last parameter are ignored.
 * - An object binds named parameters (`:name`, `@name`, `$name`) by their
 *   names without the prefix: `{ id: 1 }` for `:id`. Names the object does
 *   not have stay NULL. A statement with an unnamed `?` needs an array.
 */
export type SqlParams = readonly SqlParam[] | Readonly<Record<string, SqlParam>>;

/**
 * A result row as a plain object: column name to value. When two columns
 * have the same name the last one wins; {@link Database.executeRaw} keeps
 * them all.
 */
export type Row = Record<string, SqlValue>;

/** What a statement did, as SQLite reports it. */
export interface ExecuteResult {
  /**
   * Rows changed by the last INSERT, UPDATE or DELETE (`sqlite3_changes`):
   * after a query, what the last write left.
   */
  changes: number;
  /**
   * The rowid of the last row inserted on this connection
   * (`sqlite3_last_insert_rowid`), a bigint beyond ±(2^53 - 1).
   */
  lastInsertRowid: number | bigint;
}

/**
 * Where the database lives.
 *
 * | storage | where it works | durable |
 * |---|---|---|
 * | `'memory'` | everywhere, Node included | no: gone at close |
 * | `'opfs'` | dedicated Workers only (OPFS sync access handles) | at every commit |
 * | `'idb'` | Workers and windows (the file in wasm memory, committed transactions copied to IndexedDB) | once `flush()` resolves |
 *
 * An `'idb'` database is loaded whole into wasm memory at open, so it must
 * fit there; use `'opfs'` for large data where a dedicated Worker is
 * available.
 */
export type Vfs =
  /** wasm memory; gone at close. Works everywhere, including Node. */
  | 'memory'
  /** OPFS sync access handles; dedicated Workers only. Durable at every commit. */
  | 'opfs'
  /** In memory, every committed transaction copied to IndexedDB; durable once flush() resolves. Windows and Workers. */
  | 'idb';

/** The options of {@link open}. */
export interface OpenOptions {
  /**
   * The database's name: 1 to 128 characters from `A-Z a-z 0-9 - _ .`, not
   * starting with a dot. It names the OPFS directory or the IndexedDB
   * database the file is stored in.
   */
  name: string;
  /** The storage. Default `'memory'`. */
  vfs?: Vfs;
  /**
   * What to do when another tab or worker has the database open (`'opfs'`
   * and `'idb'` hold a Web Lock named after it while open): reject with
   * {@link DatabaseLockedError} (`'error'`, the default) or wait until it
   * is closed there (`'wait'`). A `'memory'` database opened twice in the
   * same module always rejects.
   */
  onLocked?: 'error' | 'wait';
  /**
   * Encrypts the file with this key (SQLite3MultipleCiphers, ChaCha20, the
   * cipher of the PowerSync web SDK's encrypted database). Must be a
   * non-empty string. A wrong key, no key for an encrypted file, or a key
   * for a plain one makes the open reject with a {@link SqliteError} of
   * code 26 (`SQLITE_NOTADB`), and the file is left unchanged.
   */
  key?: string;
  /**
   * Where to load the wasm module from, as {@link load} takes it; used by
   * the first open (or load) only. Default: `oplite_wasm_bg.wasm` next to
   * `oplite.js`.
   */
  wasm?: unknown;
}

/**
 * One instruction from `powersync_control`: an object with a single key
 * naming it, e.g. `{ UpdateSyncStatus: { status } }`,
 * `{ EstablishSyncStream: { request } }`, `{ FlushFileSystem: {} }`,
 * `{ DidCompleteSync: {} }`, `{ CloseSyncStream: {} }` or
 * `{ LogLine: { severity, line } }`. The PowerSync protocol defines them
 * (oplite's `docs/protocol.md`).
 */
export type Instruction = Record<string, any>;

/**
 * The operations `powersync_control` accepts: the sync events (`start`,
 * `stop`, `line_text`, `line_binary`, `refreshed_token`,
 * `completed_upload`, `connection`, `update_subscriptions`,
 * `subscriptions`) and the checkpoint-request calls
 * (`target_checkpoint_request_id`, `seed_checkpoint_request_id`,
 * `next_checkpoint_request_id`, `current_checkpoint_request_id`). Other
 * strings are passed on, and `powersync_control` refuses the ones it does
 * not know.
 */
export type ControlOp =
  | 'start' | 'stop' | 'line_text' | 'line_binary' | 'refreshed_token' | 'completed_upload'
  | 'connection' | 'update_subscriptions' | 'subscriptions' | 'target_checkpoint_request_id'
  | 'seed_checkpoint_request_id' | 'next_checkpoint_request_id' | 'current_checkpoint_request_id'
  | (string & {});

/**
 * A statement's result with its rows as arrays in column order (the
 * PowerSync SDKs' `executeRaw` shape), from {@link Database.executeRaw}.
 */
export interface RawResult extends ExecuteResult {
  /** The result's column names, in order; a name may repeat. */
  columnNames: string[];
  /** The rows, each an array of values in the order of {@link RawResult.columnNames}. */
  rawRows: SqlValue[][];
}

/**
 * The statements of a {@link Database.transaction} callback. Its methods
 * are synchronous: each runs its statement at once, inside the transaction,
 * and throws a {@link SqliteError} (or an `Error` for a bad parameter)
 * where the {@link Database} methods would reject.
 */
export interface Transaction {
  /**
   * Runs a statement, or a script of several statements when `params` is
   * absent.
   *
   * @param sql - The statement (or script).
   * @param params - Its parameters; see {@link SqlParams}.
   * @returns What the statement changed.
   */
  execute(sql: string, params?: SqlParams): ExecuteResult;
  /**
   * Runs one statement.
   *
   * @returns Its rows as arrays in column order, with the column names.
   */
  executeRaw(sql: string, params?: SqlParams): RawResult;
  /**
   * Runs one statement.
   *
   * @returns Its rows as objects keyed by column name.
   */
  query(sql: string, params?: SqlParams): Row[];
  /**
   * Runs one statement.
   *
   * @returns Its first row, or `undefined` when there is none.
   */
  get(sql: string, params?: SqlParams): Row | undefined;
  /**
   * `powersync_control(op, payload)` inside this transaction (no
   * transaction of its own, and no stepped apply).
   *
   * @param op - The operation.
   * @param payload - JSON or a text line (string), a BSON line
   *   (`Uint8Array`), or `null`.
   * @returns The parsed instructions for sync events, the value
   *   `powersync_control` returned for the others.
   */
  control(op: ControlOp, payload?: string | Uint8Array | null): Instruction[] | SqlValue;
}

/**
 * The counters `Database.stats()` reports. The byte, memory and I/O
 * counters are the module's, for all its databases, since it was loaded;
 * the call, apply and IndexedDB ones are this database's.
 */
export interface Stats {
  /** Bytes SQLite wrote to temporary files (temp b-trees, sorter spills, statement journals), all databases of this module. */
  tempBytesWritten: number;
  /** Bytes written to rollback journals. */
  journalBytesWritten: number;
  /** Bytes written to database files. */
  dbBytesWritten: number;
  /** Rollback journals deleted (one at the end of each write transaction in the default journal mode). */
  journalsDeleted: number;
  /** Bytes of page images kept so that readers see their snapshot while the writer writes the file. */
  snapshotBytes: number;
  /** Bytes of SQLite's heap in use (`SQLITE_STATUS_MEMORY_USED`). */
  memoryUsed: number;
  /** The most bytes of SQLite's heap in use at once; `stats({ reset: true })` starts it again. */
  memoryHighwater: number;
  /** The module's linear memory (it holds 'idb' databases whole; it never shrinks). */
  wasmMemoryBytes: number;
  /** The longest single call into the module (one statement, one powersync_control), ms. */
  longestCallMs: number;
  /** 'idb' only: IndexedDB transactions that stored this database's committed changes. */
  idbBatches?: number;
  /** 'idb' only: the wall time of those IndexedDB transactions, ms (other calls run between their slices). */
  idbBatchMs?: number;
  /** Time in the storage's reads (the OPFS access handles; for 'idb', the copies in wasm memory), ms. */
  vfsReadMs: number;
  /** Time in the storage's writes, ms. */
  vfsWriteMs: number;
  /** Time in the storage's syncs, ms. */
  vfsSyncMs: number;
  /** Reads from the storage. */
  vfsReads: number;
  /** Writes to the storage. */
  vfsWrites: number;
  /** Syncs of the storage. */
  vfsSyncs: number;
  /** Apply steps run by control() with a Reader open, or by applyInSteps(). */
  applySteps: number;
  /** The longest of those steps, ms. */
  longestStepMs: number;
  /** The longest step: what it was and what it cost. */
  longestStep: ApplyStep;
  /** The first 20 steps that took over 60 ms. */
  slowSteps: ApplyStep[];
  /** The longest cacheFlush between steps, ms. */
  longestFlushMs: number;
  /** The longest syncFile between steps, ms. */
  longestSyncMs: number;
  /** The longest oplite_apply_prepare (before the first step), ms. */
  longestPrepareMs: number;
  /** When the last stepped apply started and ended; null before one. */
  lastApply: {
    /** When it started (`Date.now()`). */
    start: number;
    /** When it ended (`Date.now()`); null while it runs. */
    end: number | null;
  } | null;
  /** The time of every stepped apply's oplite_apply_prepare, summed, ms. */
  applyPrepareMs: number;
  /** The time of every stepped apply's steps, summed, ms. */
  applyStepsMs: number;
  /** The time of the cacheFlush calls between steps, summed, ms. */
  applyFlushMs: number;
  /** The time of the syncFile calls between steps, summed, ms. */
  applySyncMs: number;
}

/** One step of a stepped apply (`oplite_apply_step`), as {@link Stats} reports it. */
export interface ApplyStep {
  /** How long the step took, ms. */
  ms: number;
  /** Rows the step was asked to write. */
  rows: number;
  /** The apply's stage the step worked on: 1 the walk of the oplog, 2 the ordered writes through the app's triggers. */
  stage: number;
  /** How much the module's linear memory grew during the step, bytes. */
  grewMemory: number;
  /** Bytes the step wrote to temporary files. */
  tempBytes: number;
  /** Bytes the step wrote to the database file. */
  dbBytes: number;
  /** Its number among all steps. */
  at?: number;
}

/**
 * An open database: one SQLite connection with oplite registered, from
 * {@link open}.
 *
 * Calls are queued: each runs alone, in the order made, synchronously
 * inside the module. Errors from SQLite reject with a {@link SqliteError};
 * a bad argument or a call on a closed database rejects with an `Error`.
 */
export declare class Database {
  /** Made by {@link open} only. */
  private constructor();
  /** The name it was opened with ({@link OpenOptions.name}). */
  readonly name: string;
  /** The storage it was opened on. */
  readonly vfs: Vfs;
  /**
   * Runs a statement, or a script of several statements when `params` is
   * absent.
   *
   * @param sql - The statement (or script).
   * @param params - Its parameters; see {@link SqlParams}.
   * @returns What the statement changed.
   */
  execute(sql: string, params?: SqlParams): Promise<ExecuteResult>;
  /**
   * Runs one statement.
   *
   * @returns Its rows as objects keyed by column name.
   */
  query(sql: string, params?: SqlParams): Promise<Row[]>;
  /**
   * Runs one statement.
   *
   * @returns Its rows as arrays in column order (names may repeat), with
   *   the column names and what the statement changed.
   */
  executeRaw(sql: string, params?: SqlParams): Promise<RawResult>;
  /**
   * Runs one statement.
   *
   * @returns Its first row, or `undefined` when there is none.
   */
  get(sql: string, params?: SqlParams): Promise<Row | undefined>;
  /** Whether a transaction is open, after the calls queued before this one. */
  inTransaction(): Promise<boolean>;
  /**
   * `powersync_control(op, payload)`, in a `BEGIN IMMEDIATE` transaction of
   * its own unless one is open.
   *
   * With a {@link Reader} open, a call that applies a checkpoint first
   * writes the checkpoint's rows in steps (as {@link Database.applyInSteps}),
   * with the event loop turning between them, so that the Reader's queries
   * run during the apply.
   *
   * @param op - The operation.
   * @param payload - JSON or a text line (string), a BSON line
   *   (`Uint8Array`), or `null`.
   * @returns For sync events, the instructions, parsed; for the
   *   checkpoint-request operations (`target_`, `seed_`, `next_`,
   *   `current_checkpoint_request_id`), the value, ids as decimal strings.
   */
  control(op: ControlOp, payload?: string | Uint8Array | null): Promise<Instruction[] | SqlValue>;
  /**
   * For a host that runs `powersync_control(op, payload)` itself, inside a
   * transaction it opened with {@link Database.execute}: call this first,
   * in that transaction. If the call will apply a checkpoint, its rows are
   * written now in steps of about 20 ms, the event loop turning between
   * them (a Reader's queries run meanwhile), and the changed pages are
   * written and synced to the file as the steps go, so that the COMMIT is
   * short. The call itself then finishes the apply.
   *
   * @returns Whether it stepped (false when the call applies nothing).
   */
  applyInSteps(op: ControlOp, payload?: string | Uint8Array | null): Promise<boolean>;
  /**
   * Runs `fn` inside `BEGIN IMMEDIATE` ... `COMMIT`, or `ROLLBACK` if it
   * throws or rejects.
   *
   * Nothing else runs on this database until `fn` settles: use `tx`, not
   * the Database, inside `fn` (a call on the Database there waits for the
   * transaction, which waits for `fn`: it never resolves).
   *
   * @param fn - The transaction's work; may be async.
   * @returns What `fn` returned, once committed; rejects with the error of
   *   `BEGIN`, of `fn` (after the rollback) or of `COMMIT`.
   *
   * @example
   * ```ts
   * const count = await db.transaction((tx) => {
   *   tx.execute('DELETE FROM notes WHERE body IS NULL');
   *   return tx.get('SELECT count(*) AS n FROM notes')?.n;
   * });
   * ```
   */
  transaction<T>(fn: (tx: Transaction) => T | Promise<T>): Promise<T>;
  /**
   * Calls `listener(tables)` after each committed write transaction, with
   * the tables it changed, named as SQLite sees them (`ps_data__<type>` for
   * the schema's types, `ps_untyped`, `ps_crud`, ...). An error thrown by a
   * listener is rethrown in a task of its own and does not stop the others.
   *
   * @returns A function that removes the listener.
   */
  onTablesChanged(listener: (tables: string[]) => void): () => void;
  /**
   * Resolves when everything committed so far is durable: once the calls
   * queued before it ran, and on `'idb'` once IndexedDB holds their
   * commits.
   */
  flush(): Promise<void>;
  /**
   * In a write transaction: writes the pages it changed from SQLite's page
   * cache into the file now, keeping them cached
   * (`sqlite3_db_cacheflush`), so that COMMIT has less to write. Readers
   * keep their snapshot.
   */
  cacheFlush(): Promise<void>;
  /** Syncs the database file now (after {@link Database.cacheFlush}), so that a later COMMIT has less to sync. */
  syncFile(): Promise<void>;
  /**
   * Reads the module's counters: bytes written, memory, I/O time, the
   * longest call and the stepped applies.
   *
   * @param options - `reset: true` starts `memoryHighwater` and
   *   `longestCallMs` again after this read.
   */
  stats(options?: { reset?: boolean }): Promise<Stats>;
  /**
   * Opens a second, read-only connection to this database, for reads that
   * must not wait behind the writer: see {@link Reader}. `'opfs'` and
   * `'idb'` only: a `'memory'` database rejects. {@link Database.close}
   * closes its readers first.
   */
  openReader(): Promise<Reader>;
  /**
   * Closes the readers, waits for the queued calls, flushes (`'idb'`),
   * closes the connection and releases the cross-tab lock. A transaction
   * left open is rolled back. Closing a closed database does nothing.
   */
  close(): Promise<void>;
}

/**
 * A read-only connection from {@link Database.openReader}, with its own
 * queue: its calls wait only for each other.
 *
 * Each read transaction sees the state committed when it began, while the
 * database has a transaction open and after that transaction wrote pages
 * into the file (the module's VFS keeps the overwritten pages for it).
 * Reads never wait for the writer, nor the writer's COMMIT for reads.
 * Writes are refused (`PRAGMA query_only`).
 */
export declare class Reader {
  /** Made by {@link Database.openReader} only. */
  private constructor();
  /** The name of its database. */
  readonly name: string;
  /** The storage of its database. */
  readonly vfs: Vfs;
  /**
   * Runs one statement.
   *
   * @returns Its rows as objects keyed by column name.
   */
  query(sql: string, params?: SqlParams): Promise<Row[]>;
  /**
   * Runs one statement.
   *
   * @returns Its rows as arrays in column order, with the column names.
   */
  executeRaw(sql: string, params?: SqlParams): Promise<RawResult>;
  /**
   * Runs one statement.
   *
   * @returns Its first row, or `undefined` when there is none.
   */
  get(sql: string, params?: SqlParams): Promise<Row | undefined>;
  /** Whether a transaction is open, after the calls queued before this one. */
  inTransaction(): Promise<boolean>;
  /** Closes the reader once its queued calls ran; the database stays open. */
  close(): Promise<void>;
}

/**
 * Rejects {@link open} when another tab or worker has the database open
 * (with `onLocked: 'error'`), or when a `'memory'` database of that name is
 * open in this module.
 */
export declare class DatabaseLockedError extends Error {
  /**
   * @param name - The database's name.
   * @param vfs - Its storage.
   */
  constructor(name: string, vfs: Vfs);
  /** Always `'DatabaseLockedError'`. */
  name: 'DatabaseLockedError';
}

/**
 * An error from SQLite: a plain `Error` whose `name` is `'SqliteError'`
 * (there is no class to test with `instanceof`).
 *
 * @example
 * ```ts
 * try {
 *   await db.execute('INSERT INTO notes(id) VALUES (?)', ['n1']);
 * } catch (e) {
 *   if ((e as SqliteError).name === 'SqliteError' && (e as SqliteError).code === 1555) {
 *     // SQLITE_CONSTRAINT_PRIMARYKEY
 *   }
 * }
 * ```
 */
export interface SqliteError extends Error {
  /** Always `'SqliteError'`. */
  name: 'SqliteError';
  /** SQLite's extended result code (`SQLITE_BUSY` is 5, `SQLITE_NOTADB` 26), when SQLite gave one. */
  code?: number;
}

/**
 * Opens a database, creating it if needed, and runs `powersync_init()` on
 * it. Loads the wasm module first if {@link load} did not.
 *
 * For `'opfs'` and `'idb'` it takes a Web Lock named after the database,
 * held until {@link Database.close}, so that one tab or worker at a time
 * has it open; on `'idb'` it loads the stored file into memory.
 *
 * @param options - The database's name, storage and key.
 * @returns The open database.
 * @throws TypeError - For a name that is not a string, an unknown `vfs`, or
 *   a `key` that is not a non-empty string; an `Error` for an invalid name.
 * @throws {@link DatabaseLockedError} - When the database is open elsewhere.
 * @throws {@link SqliteError} - When SQLite cannot open it (code 26 for a
 *   wrong or missing key).
 */
export declare function open(options: OpenOptions): Promise<Database>;

/**
 * Loads and instantiates the wasm module, once: later calls resolve with
 * the first. {@link open} calls it, so calling it yourself is only needed
 * to load early or from elsewhere.
 *
 * @param source - A URL, a `Response`, the bytes, or a compiled
 *   `WebAssembly.Module`. Default: `oplite_wasm_bg.wasm` next to
 *   `oplite.js` (in Node, read from the file system).
 */
export declare function load(source?: unknown): Promise<void>;

/**
 * The version of the SQLite inside the module (SQLite3MultipleCiphers'
 * SQLite), e.g. `'3.54.0'`. Call it after {@link load} or {@link open}.
 */
export declare function sqliteVersion(): string;

/** The options of {@link syncStream}. */
export interface SyncStreamOptions {
  /** Where to POST the `EstablishSyncStream` request, e.g. the service's `/sync/stream`. */
  url: string;
  /** Ask for BSON lines (`application/vnd.powersync.bson-stream`) instead of NDJSON. Default false. */
  binary?: boolean;
  /** The sync parameters, passed to `powersync_control('start')`. Default `{}`. */
  parameters?: Record<string, unknown>;
  /** Headers of the request, after the defaults (`content-type`, `accept`): an `authorization` header goes here. */
  headers?: Record<string, string>;
  /** The `fetch` to use. Default: `globalThis.fetch`. */
  fetch?: typeof fetch;
  /** Aborts the request and so ends the sync. */
  signal?: AbortSignal;
  /** Called with each sync status `powersync_control` reports (`UpdateSyncStatus`). */
  onStatus?: (status: any) => void;
  /** Called with each log line `powersync_control` emits (`LogLine`). */
  onLog?: (severity: string, line: string) => void;
}

/** What {@link syncStream} resolves to. */
export interface SyncStreamResult {
  /** Lines of the stream given to `powersync_control`. */
  lines: number;
  /** Whether a checkpoint was applied (DidCompleteSync). */
  completed: boolean;
  /** The last sync status reported, or null if none was. */
  status: any;
  /** Time spent in the calls that applied checkpoints, ms. */
  applyMs: number;
}

/**
 * Syncs once, until the server ends the stream or `powersync_control` asks
 * to close it: `start`, POST the `EstablishSyncStream` request to
 * `options.url`, give every line to `powersync_control`, flush the storage
 * on `FlushFileSystem` and after every applied checkpoint
 * (`DidCompleteSync`), and end with `stop`.
 *
 * A minimal driver, for demos, tests and simple apps: it handles neither
 * credentials nor retries nor uploads, which the PowerSync SDKs bring.
 *
 * @param db - The database to sync.
 * @param options - Where and how to connect.
 * @returns How many lines it stored and whether a checkpoint was applied.
 * @throws Error - When the response is not a 2xx, or `start` did not ask
 *   for a stream; a {@link SqliteError} when `powersync_control` refuses a
 *   line. Once `start` ran, `stop` runs whatever happens.
 */
export declare function syncStream(db: Database, options: SyncStreamOptions): Promise<SyncStreamResult>;
