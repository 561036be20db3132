// The databases the web tests and benchmarks open through
// PowerSyncDatabase, by name (the pages' `core`):
//   'oplite'            @oplite/powersync-web (OpliteOpenFactory);
//   'bundled'           the SDK's own database (wa-sqlite, its worker), with
//                       the SDK's shared sync worker where it shares tabs;
//   'bundled-tablocal'  the SDK's own database, shared between tabs as
//                       'bundled', but synced in the tab as the SDK syncs an
//                       adapter without shareConnection() (oplite's case):
//                       the two sync designs on one database.
import * as sdk from '@powersync/web';
import { OpliteOpenFactory } from '@oplite/powersync-web';

const sdkVfs = (vfs) => (vfs === 'opfs' ? sdk.WASQLiteVFS.OPFSCoopSyncVFS : sdk.WASQLiteVFS.IDBBatchAtomicVFS);

// The SDK picks its shared sync worker when `'shareConnection' in
// database`; this view of the SDK's adapter answers no and forwards
// everything else to it.
function withoutSharedSync(adapter) {
  return new Proxy(adapter, {
    has: (target, key) => key !== 'shareConnection' && key in target,
    get: (target, key) => {
      if (key === 'shareConnection') return undefined;
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * PowerSyncDatabase options for `core` on `vfs` ('opfs' or 'idb') and the
 * file `dbFilename`. `multiTab` (oplite) or `enableMultiTabs` (the SDK's)
 * is left to its default unless given. `worker`: oplite's database Worker
 * script; `inThread`: oplite in the page instead, its .wasm served from
 * /oplite/. `encryptionKey` encrypts 'oplite' and 'bundled'.
 */
export function databaseOptions({ core = 'oplite', vfs, dbFilename, multiTab, worker = '/oplite/oplite-worker.js', inThread = false, encryptionKey }) {
  const tabs = multiTab == null ? {} : core === 'oplite' ? { multiTab } : { enableMultiTabs: multiTab };
  switch (core) {
    case 'oplite': {
      const where = inThread ? { worker: false, wasmUrl: '/oplite/oplite_wasm_bg.wasm' } : { worker };
      return { factory: new OpliteOpenFactory({ dbFilename, vfs, encryptionKey, ...where, ...tabs }) };
    }
    case 'bundled':
      return { database: { dbFilename, vfs: sdkVfs(vfs), encryptionKey, ...tabs } };
    case 'bundled-tablocal': {
      const factory = new sdk.WASQLiteOpenFactory({ open: { dbFilename, vfs: sdkVfs(vfs), ...tabs }, logger: sdk.createConsoleLogger({ minLevel: sdk.LogLevels.warn }) });
      return { opened: withoutSharedSync(factory.openDB()) };
    }
    default:
      throw new Error(`unknown database '${core}' (oplite, bundled, bundled-tablocal)`);
  }
}
