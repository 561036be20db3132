// Types of @oplite/powersync-web (index.js).
import { DBAdapter, DBLockOptions, LockContext, SQLOpenFactory } from '@powersync/common';
import type { Stats, Vfs } from './oplite.js';
export type { ApplyStep } from './oplite.js';

export interface OpliteOpenOptions {
  /** 1-128 characters from A-Z a-z 0-9 - _ . (not starting with a dot). */
  dbFilename: string;
  /** 'opfs' (default; durable at every commit), 'idb' (the file in memory, committed transactions copied to IndexedDB) or 'memory'. */
  vfs?: Vfs;
  /** When another tab has the database open: fail with DatabaseLockedError (default) or wait until it closes. */
  onLocked?: 'error' | 'wait';
  /** SQLite's page cache in KiB (default 51200, the SDK's own default). */
  cacheSizeKb?: number;
  /** Where oplite-worker.js is, a function returning a Worker that runs it, or false to run oplite in this thread ('idb' and 'memory' only; the default where Worker does not exist). Default: next to index.js. */
  worker?: string | URL | (() => Worker) | false;
  /** With worker: false, where oplite_wasm_bg.wasm is (default: next to oplite.js). */
  wasmUrl?: string | URL;
  /** Share the database with other tabs opening it with multiTab ('opfs' and 'idb'): one tab holds it and serves the others; another takes over when it closes. Default: the SDK's enableMultiTabs default (multiTabByDefault(): browsers with SharedWorker but not Safari, iOS or Android). false: a second tab gets DatabaseLockedError (see onLocked). */
  multiTab?: boolean;
  /** The SDK's name for multiTab; multiTab wins when both are given. */
  enableMultiTabs?: boolean;
  /** Encrypts the file (SQLite3MultipleCiphers, ChaCha20); a wrong or missing key fails the first call with SqliteError code 26. Falsy: no encryption. */
  encryptionKey?: string;
}

/** What oplite_uninstall() reports (docs/sql.md). */
export interface UninstallReport {
  changed: boolean;
  core_version: number;
  [field: string]: unknown;
}

/**
 * The way back: moves the database oplite stores on `vfs` to the SDK's own
 * storage (`sdkVfs`, default the same kind: its OPFSCoopSyncVFS file or its
 * IDBBatchAtomicVFS database), rewritten for the PowerSync core. Close it
 * in every tab first.
 */
export declare function returnToSdkDatabase(options: {
  dbFilename: string;
  vfs?: 'opfs' | 'idb';
  sdkVfs?: 'opfs' | 'idb';
  encryptionKey?: string;
  worker?: string | URL | (() => Worker) | false;
  wasmUrl?: string | URL;
}): Promise<UninstallReport>;

/** For PowerSyncDatabase's `factory` option. */
export declare class OpliteOpenFactory implements SQLOpenFactory {
  constructor(options: OpliteOpenOptions);
  readonly options: OpliteOpenOptions;
  openDB(): OpliteDBAdapter;
}

/** oplite-wasm's counters (with its apply steps), and the adapter's own. */
export interface AdapterStats extends Stats {
  /** powersync_control calls the adapter did not recognise, so did not apply in steps (should stay 0). */
  unsteppedControlCalls: number;
  /** The longest COMMIT of a write lock, in ms. */
  longestCommitMs: number;
  /** The longest statement of a read lock, in ms, and its SQL (first 200 characters). */
  longestReadMs: number;
  longestReadSql: string | null;
  /** The longest statement of a write lock, in ms, and its SQL (first 80 characters). */
  longestWriteMs: number;
  longestWriteSql: string | null;
  /** The sync client's powersync_control calls, and their time in ms (storing lines and applying checkpoints). */
  controlCalls: number;
  controlMs: number;
  /** Every statement's time on the writer and on the reader, ms (the stepped applies are in applyStepsMs and the rest). */
  writeStatementsMs: number;
  readStatementsMs: number;
}

/** oplite-wasm in a dedicated Worker: write locks on one connection, read locks on a read-only second one ('memory': one queue). */
export declare class OpliteDBAdapter extends DBAdapter {
  constructor(options: OpliteOpenOptions);
  get name(): string;
  readLock<T>(fn: (tx: LockContext) => Promise<T>, options?: DBLockOptions): Promise<T>;
  writeLock<T>(fn: (tx: LockContext) => Promise<T>, options?: DBLockOptions): Promise<T>;
  refreshSchema(): Promise<void>;
  /** Resolves when every committed transaction is durable ('idb': stored in IndexedDB). */
  flush(): Promise<void>;
  stats(options?: { reset?: boolean }): Promise<AdapterStats>;
  close(): Promise<void>;
}
