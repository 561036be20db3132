// Types of oplite.js: oplite (PowerSync-compatible sync engine) and SQLite in
// one WebAssembly module.

/** A value bound to a parameter. Booleans become 0/1; integral numbers within ±2^53 INTEGER, other numbers REAL. */
export type SqlParam = null | undefined | boolean | number | bigint | string | Uint8Array | ArrayBuffer;

/** A value read back: INTEGER beyond ±2^53 comes back as bigint, BLOB as Uint8Array. */
export type SqlValue = null | number | bigint | string | Uint8Array;

/** Positional (`?`, `?NNN`) or named (`:name`, `@name`, `$name`; keys without the prefix). */
export type SqlParams = readonly SqlParam[] | Readonly<Record<string, SqlParam>>;

export type Row = Record<string, SqlValue>;

export interface ExecuteResult {
  /** Rows changed by the last INSERT, UPDATE or DELETE. */
  changes: number;
  lastInsertRowid: number | bigint;
}

/** Where the database lives. */
export type Vfs =
  /** wasm memory; gone at close. Works everywhere, including Node. */
  | 'memory'
  /** OPFS sync access handles; dedicated Workers only. Durable at every commit. */
  | 'opfs'
  /** In memory, every committed transaction copied to IndexedDB; durable once flush() resolves. Windows and Workers. */
  | 'idb';

export interface OpenOptions {
  /** 1-128 characters from A-Z a-z 0-9 - _ . (not starting with a dot). */
  name: string;
  /** Default 'memory'. */
  vfs?: Vfs;
  /** When another tab or worker has it open: fail with DatabaseLockedError (default) or wait. */
  onLocked?: 'error' | 'wait';
  /** Encrypt the file with this key (SQLite3MultipleCiphers, ChaCha20); a wrong or missing key fails at open with SqliteError code 26. */
  key?: string;
  /** Where to load the module from (URL, Response, bytes, WebAssembly.Module); default: next to oplite.js. */
  wasm?: unknown;
}

/** An instruction from powersync_control, e.g. `{UpdateSyncStatus: {status}}` (PROTOCOL.md §5). */
export type Instruction = Record<string, any>;

/** The operations powersync_control accepts. */
export type ControlOp =
  | 'start' | 'stop' | 'line_text' | 'line_binary' | 'refreshed_token' | 'completed_upload'
  | 'connection' | 'update_subscriptions' | 'subscriptions' | 'target_checkpoint_request_id'
  | 'seed_checkpoint_request_id' | 'next_checkpoint_request_id' | 'current_checkpoint_request_id'
  | (string & {});

/** A statement's result with rows as arrays in column order (names may repeat). */
export interface RawResult extends ExecuteResult {
  columnNames: string[];
  rawRows: SqlValue[][];
}

export interface Transaction {
  execute(sql: string, params?: SqlParams): ExecuteResult;
  executeRaw(sql: string, params?: SqlParams): RawResult;
  query(sql: string, params?: SqlParams): Row[];
  get(sql: string, params?: SqlParams): Row | undefined;
  control(op: ControlOp, payload?: string | Uint8Array | null): Instruction[] | SqlValue;
}

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
  /** SQLite's heap in use and its high-water mark. */
  memoryUsed: number;
  memoryHighwater: number;
  /** The module's linear memory (it holds 'idb' databases whole; it never shrinks). */
  wasmMemoryBytes: number;
  /** The longest single call into the module (one statement, one powersync_control), ms. */
  longestCallMs: number;
  /** 'idb' only: IndexedDB transactions written, and their wall time in ms (other calls run between their slices). */
  idbBatches?: number;
  idbBatchMs?: number;
  /** Time in the storage's reads, writes and syncs (the OPFS access handles; for 'idb', the copies in wasm memory), ms, and their numbers. */
  vfsReadMs: number;
  vfsWriteMs: number;
  vfsSyncMs: number;
  vfsReads: number;
  vfsWrites: number;
  vfsSyncs: number;
  /** Apply steps run by control() with a Reader open, or by applyInSteps(). */
  applySteps: number;
  /** The longest of those steps, ms, and what it was. */
  longestStepMs: number;
  longestStep: ApplyStep;
  /** The first 20 steps that took over 60 ms. */
  slowSteps: ApplyStep[];
  /** The longest cacheFlush and syncFile between steps, ms. */
  longestFlushMs: number;
  longestSyncMs: number;
  /** The longest oplite_apply_prepare (before the first step), ms. */
  longestPrepareMs: number;
  /** When (Date.now()) the last stepped apply started and ended; null before one. */
  lastApply: { start: number; end: number | null } | null;
  /** Sums over every stepped apply, ms: oplite_apply_prepare, the steps, cacheFlush, syncFile. */
  applyPrepareMs: number;
  applyStepsMs: number;
  applyFlushMs: number;
  applySyncMs: number;
}

export interface ApplyStep {
  ms: number;
  /** Rows asked for, and the apply's stage the step worked on (1 the walk, 2 ordered writes through triggers). */
  rows: number;
  stage: number;
  /** What the step grew: wasm memory, temporary-file and database bytes written. */
  grewMemory: number;
  tempBytes: number;
  dbBytes: number;
  /** Its number among all steps. */
  at?: number;
}

export declare class Database {
  readonly name: string;
  readonly vfs: Vfs;
  /** Runs a statement, or a script of several when there are no params. */
  execute(sql: string, params?: SqlParams): Promise<ExecuteResult>;
  query(sql: string, params?: SqlParams): Promise<Row[]>;
  /** One statement; rows as arrays in column order. */
  executeRaw(sql: string, params?: SqlParams): Promise<RawResult>;
  get(sql: string, params?: SqlParams): Promise<Row | undefined>;
  /** Whether a transaction is open, after the calls queued before this one. */
  inTransaction(): Promise<boolean>;
  /**
   * powersync_control(op, payload) in its own transaction (with a Reader
   * open, a checkpoint's apply runs in steps first, as applyInSteps). Sync
   * events resolve to instructions; the checkpoint-request ops (target_, seed_,
   * next_, current_checkpoint_request_id; ids as decimal strings) to a value.
   */
  control(op: ControlOp, payload?: string | Uint8Array | null): Promise<Instruction[] | SqlValue>;
  /**
   * For a host that runs powersync_control(op, payload) itself, inside a
   * transaction it opened with execute(): call first, in that transaction.
   * If the call will apply a checkpoint, writes its rows now in steps, the
   * event loop turning between them (a Reader's queries run meanwhile).
   * Resolves to whether it stepped.
   */
  applyInSteps(op: ControlOp, payload?: string | Uint8Array | null): Promise<boolean>;
  /**
   * Runs fn inside BEGIN IMMEDIATE ... COMMIT (ROLLBACK if it throws). Nothing
   * else runs on this database until fn settles: use tx, not the Database,
   * inside fn (calling the Database there waits forever).
   */
  transaction<T>(fn: (tx: Transaction) => T | Promise<T>): Promise<T>;
  /** listener(tables) after each committed write transaction; returns an unsubscribe function. */
  onTablesChanged(listener: (tables: string[]) => void): () => void;
  /** Resolves when everything committed so far is durable. */
  flush(): Promise<void>;
  /** In a write transaction: writes its changed pages into the file now (sqlite3_db_cacheflush), so COMMIT writes less. */
  cacheFlush(): Promise<void>;
  /** Syncs the database file now (after cacheFlush), so a later COMMIT syncs less. */
  syncFile(): Promise<void>;
  stats(options?: { reset?: boolean }): Promise<Stats>;
  /**
   * A second, read-only connection ('opfs' and 'idb'; a memory database
   * rejects): see Reader. close() closes its readers first.
   */
  openReader(): Promise<Reader>;
  /** Closes the readers, flushes, closes and releases the cross-tab lock. */
  close(): Promise<void>;
}

/**
 * A read-only connection from Database.openReader(), with its own queue: each
 * read transaction sees the state committed when it began, while the database
 * has a transaction open and after that transaction wrote pages into the file
 * (the module's VFS keeps the overwritten pages for it). Reads never wait for
 * the writer, nor the writer's COMMIT for reads.
 */
export declare class Reader {
  readonly name: string;
  readonly vfs: Vfs;
  query(sql: string, params?: SqlParams): Promise<Row[]>;
  executeRaw(sql: string, params?: SqlParams): Promise<RawResult>;
  get(sql: string, params?: SqlParams): Promise<Row | undefined>;
  /** Whether a transaction is open, after the calls queued before this one. */
  inTransaction(): Promise<boolean>;
  /** Closes the reader; the database stays open. */
  close(): Promise<void>;
}

export declare class DatabaseLockedError extends Error {
  name: 'DatabaseLockedError';
}

/** Errors from SQLite: `code` is the extended result code. */
export interface SqliteError extends Error {
  name: 'SqliteError';
  code?: number;
}

export declare function open(options: OpenOptions): Promise<Database>;
export declare function load(source?: unknown): Promise<void>;
export declare function sqliteVersion(): string;

export interface SyncStreamOptions {
  /** Where to POST the EstablishSyncStream request. */
  url: string;
  /** Ask for BSON lines instead of NDJSON. */
  binary?: boolean;
  parameters?: Record<string, unknown>;
  headers?: Record<string, string>;
  fetch?: typeof fetch;
  signal?: AbortSignal;
  onStatus?: (status: any) => void;
  onLog?: (severity: string, line: string) => void;
}

export interface SyncStreamResult {
  lines: number;
  /** Whether a checkpoint was applied (DidCompleteSync). */
  completed: boolean;
  status: any;
  /** Time spent in the calls that applied checkpoints, ms. */
  applyMs: number;
}

/** Syncs once until the server ends the stream. */
export declare function syncStream(db: Database, options: SyncStreamOptions): Promise<SyncStreamResult>;
