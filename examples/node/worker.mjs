// The SDK's database worker with oplite as its core: the SDK runs this file
// in a worker thread and loads the library it names into each connection.
import { startPowerSyncWorker } from '@powersync/node/worker.js';
import { corePath } from './paths.mjs';

startPowerSyncWorker({ extensionPath: () => corePath() });
