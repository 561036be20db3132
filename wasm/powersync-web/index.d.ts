// Types of @oplite/powersync-web (index.js).

/**
 * oplite as the database of the PowerSync web SDK (`@powersync/web`): a
 * `DBAdapter` over oplite-wasm, which the SDK takes through
 * `PowerSyncDatabase`'s `factory` option.
 *
 * The adapter keeps two oplite-wasm connections in a dedicated Worker (on
 * OPFS or IndexedDB), or in the page itself (IndexedDB, or memory): write
 * locks take turns on the writer, read locks on a read-only second
 * connection that sees the last committed state, so reads do not wait for
 * a checkpoint being applied. A database the SDK's own database stored
 * under the same name is adopted at the first open;
 * {@link returnToSdkDatabase} moves it back.
 *
 * @example
 * ```ts
 * import { PowerSyncDatabase } from '@powersync/web';
 * import { OpliteOpenFactory } from '@oplite/powersync-web';
 *
 * const db = new PowerSyncDatabase({
 *   schema,
 *   factory: new OpliteOpenFactory({ dbFilename: 'app.db', vfs: 'opfs' }), // or 'idb'
 * });
 * await db.connect(connector);
 * ```
 *
 * @packageDocumentation
 */

import { DBAdapter, DBLockOptions, LockContext, SQLOpenFactory } from '@powersync/common';
import type { Stats, Vfs } from './oplite.js';
export type { ApplyStep, Stats, Vfs } from './oplite.js';

/** The options of {@link OpliteOpenFactory} and {@link OpliteDBAdapter}. */
export interface OpliteOpenOptions {
  /**
   * The database's name: 1 to 128 characters from `A-Z a-z 0-9 - _ .`, not
   * starting with a dot. A database the SDK's own database stored under
   * this name is adopted at the first open.
   */
  dbFilename: string;
  /**
   * The storage: `'opfs'` (the default; durable at every commit; needs a
   * Worker), `'idb'` (the file in memory, committed transactions copied to
   * IndexedDB) or `'memory'`.
   */
  vfs?: Vfs;
  /**
   * When another tab has the database open and does not share it (see
   * {@link OpliteOpenOptions.multiTab}): fail the first call with
   * `DatabaseLockedError` (`'error'`, the default) or wait until that tab
   * closes it (`'wait'`).
   */
  onLocked?: 'error' | 'wait';
  /**
   * SQLite's page cache in KiB, a positive integer. Default 51200 (50 MiB,
   * the SDK's own default).
   */
  cacheSizeKb?: number;
  /**
   * Where oplite runs.
   *
   * - A string or URL: the URL of `oplite-worker.js`, started as a module
   *   Worker (give it when the files are served from elsewhere, or without
   *   a bundler).
   * - A function returning a Worker that runs `oplite-worker.js`.
   * - `false`: in this thread, with `vfs` `'idb'` or `'memory'` (OPFS
   *   needs a dedicated Worker); each step of an apply is then a task of
   *   this thread.
   *
   * Default: `oplite-worker.js` next to `index.js` (a bundler follows the
   * `new URL(..., import.meta.url)`), or `false` where `Worker` does not
   * exist.
   */
  worker?: string | URL | (() => Worker) | false;
  /**
   * With `worker: false`, where `oplite_wasm_bg.wasm` is, when a bundler
   * moved the code away from it. Default: next to `oplite.js`.
   */
  wasmUrl?: string | URL;
  /**
   * Share the database with other tabs that open it with `multiTab` too
   * (`'opfs'` and `'idb'`): one tab holds it and serves the others; when
   * that tab closes, another takes over. Default: the SDK's
   * `enableMultiTabs` default ({@link multiTabByDefault}). `false`: one tab
   * at a time, a second tab gets `DatabaseLockedError` (see
   * {@link OpliteOpenOptions.onLocked}).
   */
  multiTab?: boolean;
  /** The SDK's name for {@link OpliteOpenOptions.multiTab}; `multiTab` wins when both are given. */
  enableMultiTabs?: boolean;
  /**
   * Encrypts the file (SQLite3MultipleCiphers, ChaCha20, the cipher of the
   * SDK's own encrypted database). A wrong or missing key fails the first
   * call with a `SqliteError` of code 26. Falsy: no encryption, as in the
   * SDK. Tabs sharing the database use the key of the tab that opened it.
   */
  encryptionKey?: string;
}

/**
 * What `oplite_uninstall()` reports (oplite's `docs/sql.md`), which
 * {@link returnToSdkDatabase} resolves to. Besides the fields below it has
 * `oplite_version`, `data_tables`, `views_dropped`, `tables_rebuilt`,
 * `indexes_created`, `dropped`, `uploads_queued` and `next`.
 */
export interface UninstallReport {
  /** False when the database already had the PowerSync core's layout. */
  changed: boolean;
  /** The PowerSync core's internal schema version the database now has (14). */
  core_version: number;
  /** The report's other fields. */
  [field: string]: unknown;
}

/**
 * The way back from oplite to the SDK's own database: rewrites the database
 * `dbFilename` that oplite stores on `vfs` in the PowerSync core's layout
 * (`oplite_uninstall()`) and moves it to the SDK's own storage: its
 * OPFSCoopSyncVFS file or its IDBBatchAtomicVFS database. Synced rows,
 * queued uploads and the client id come along; oplite's copy is removed.
 *
 * Close the database in every tab first.
 *
 * @param options - `dbFilename`; `vfs`, oplite's storage (default
 *   `'opfs'`); `sdkVfs`, the SDK's storage to move to (default the same
 *   kind as `vfs`); `encryptionKey`, `worker` and `wasmUrl` as in
 *   {@link OpliteOpenOptions}.
 * @returns The report of `oplite_uninstall()`.
 * @throws When the database is open elsewhere (`DatabaseLockedError`), or
 *   oplite's storage holds no database of that name.
 */
export declare function returnToSdkDatabase(options: {
  dbFilename: string;
  vfs?: 'opfs' | 'idb';
  sdkVfs?: 'opfs' | 'idb';
  encryptionKey?: string;
  worker?: string | URL | (() => Worker) | false;
  wasmUrl?: string | URL;
}): Promise<UninstallReport>;

/**
 * Where the SDK turns multi-tab on by default (its `enableMultiTabs`
 * default), and so the default of {@link OpliteOpenOptions.multiTab}:
 * browsers with SharedWorker, except Safari, iOS and Android.
 */
export declare function multiTabByDefault(): boolean;

/**
 * For `PowerSyncDatabase`'s `factory` option: opens an
 * {@link OpliteDBAdapter} when the SDK asks for its database.
 */
export declare class OpliteOpenFactory implements SQLOpenFactory {
  /** @param options - The adapter's options, kept for {@link OpliteOpenFactory.openDB}. */
  constructor(options: OpliteOpenOptions);
  /** The options it was made with. */
  readonly options: OpliteOpenOptions;
  /** A new {@link OpliteDBAdapter} with {@link OpliteOpenFactory.options}. */
  openDB(): OpliteDBAdapter;
}

/**
 * oplite-wasm's counters ({@link Stats}, with its stepped applies) and the
 * adapter's own.
 */
export interface AdapterStats extends Stats {
  /** powersync_control calls the adapter did not recognise, so did not apply in steps (should stay 0). */
  unsteppedControlCalls: number;
  /** The longest COMMIT of a write lock, ms. */
  longestCommitMs: number;
  /** The longest statement of a read lock, ms. */
  longestReadMs: number;
  /** The SQL of that statement (its first 200 characters); null before one. */
  longestReadSql: string | null;
  /** The longest statement of a write lock, ms. */
  longestWriteMs: number;
  /** The SQL of that statement (its first 80 characters); null before one. */
  longestWriteSql: string | null;
  /** The sync client's powersync_control calls (storing lines and applying checkpoints). */
  controlCalls: number;
  /** The time of those calls, ms. */
  controlMs: number;
  /** Every statement's time on the writer, ms (the stepped applies are in applyStepsMs and the rest). */
  writeStatementsMs: number;
  /** Every statement's time on the reader, ms. */
  readStatementsMs: number;
  /** Batches of stored sync lines committed together (0 on 'memory', which commits each line). */
  lineBatches: number;
  /** Sync lines whose commit joined a batch. */
  batchedLines: number;
}

/**
 * The SDK's `DBAdapter` over oplite-wasm: write locks take turns on one
 * connection, read locks on a read-only second one that sees the last
 * committed state (`'memory'`: one connection for both).
 *
 * A read lock waits for the write locks asked for before it, as on the
 * SDK's own database, except while the sync client's write lock (a
 * `powersync_control` call, which may apply a checkpoint in steps) runs:
 * reads asked for then see the last committed state at once. Adapters on
 * the same file in one page share one Worker and its connections; the
 * connection closes with the last of them. Errors from SQLite reject with
 * a `SqliteError` carrying SQLite's extended result `code`.
 */
export declare class OpliteDBAdapter extends DBAdapter {
  /**
   * Starts the connection (or joins the one this page has open on the same
   * file, whose `cacheSizeKb` and `worker` then apply). Opening errors
   * (`DatabaseLockedError`, a wrong key) reject the first call.
   *
   * @param options - See {@link OpliteOpenOptions}.
   * @throws TypeError - For a `dbFilename` that is not a string, an
   *   `encryptionKey` that is not a string, a `cacheSizeKb` that is not a
   *   positive integer, or `'opfs'` without a Worker.
   */
  constructor(options: OpliteOpenOptions);
  /** The database's name ({@link OpliteOpenOptions.dbFilename}). */
  get name(): string;
  /**
   * Runs `fn` in a read lock, on the reader (on `'memory'`, the writer):
   * its statements see the last committed state.
   *
   * @param options - `timeoutMs`: give up waiting for the lock after that
   *   long.
   */
  readLock<T>(fn: (tx: LockContext) => Promise<T>, options?: DBLockOptions): Promise<T>;
  /**
   * Runs `fn` in a write lock, on the writer, after the write locks asked
   * for before it. On `'idb'` it ends once IndexedDB holds what it
   * committed.
   *
   * @param options - `timeoutMs`: give up waiting for the lock after that
   *   long.
   */
  writeLock<T>(fn: (tx: LockContext) => Promise<T>, options?: DBLockOptions): Promise<T>;
  /**
   * Runs one query in a read lock of its own, asked for, run and ended in
   * one message to the Worker: on the reader, or on the writer for a
   * statement naming one of the writer's TEMP tables or views (and on
   * `'memory'`).
   *
   * @returns Its rows as objects keyed by column name.
   */
  getAll<T>(sql: string, parameters?: any[]): Promise<T[]>;
  /**
   * As {@link OpliteDBAdapter.getAll}.
   *
   * @returns The first row, or null when there is none.
   */
  getOptional<T>(sql: string, parameters?: any[]): Promise<T | null>;
  /**
   * As {@link OpliteDBAdapter.getAll}.
   *
   * @returns The first row; rejects when there is none.
   */
  get<T>(sql: string, parameters?: any[]): Promise<T>;
  /** Does nothing: both connections see a schema change at their next statement. */
  refreshSchema(): Promise<void>;
  /** Resolves when every committed transaction is durable (once the write locks asked for before it ended; 'idb': stored in IndexedDB). */
  flush(): Promise<void>;
  /**
   * The counters, read in a turn of the writer.
   *
   * @param options - `reset: true` starts `memoryHighwater` and
   *   `longestCallMs` again after this read.
   */
  stats(options?: { reset?: boolean }): Promise<AdapterStats>;
  /** Ends this adapter; the connection closes with the last adapter of this page on the file. Later calls reject. */
  close(): Promise<void>;
}
