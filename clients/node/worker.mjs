// The SDK's database worker, loading the core named by OPLITE_CORE_PATH
// (oplite's liboplite.so) instead of the one bundled with @powersync/node.
// Unset, it is the SDK's default worker.
import { startPowerSyncWorker } from '@powersync/node/worker.js';

const core = process.env.OPLITE_CORE_PATH;
startPowerSyncWorker(core ? { extensionPath: () => core } : {});
