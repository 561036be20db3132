// Where the example finds oplite's files: the release `scripts/package.sh`
// writes into dist/ at the repository's root, or the paths the environment
// names (OPLITE_CORE_PATH, OPLITE_TEST_SERVER).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dist = fileURLToPath(new URL('../../dist/', import.meta.url));

function find(envName, file) {
  const path = process.env[envName] || dist + file;
  if (!existsSync(path)) {
    throw new Error(`${path} is missing: run scripts/package.sh at the repository's root (or set ${envName})`);
  }
  return path;
}

export const corePath = () => find('OPLITE_CORE_PATH', 'lib/liboplite.so');
export const serverPath = () => find('OPLITE_TEST_SERVER', 'bin/oplite-test-server');
export const recordedSession = fileURLToPath(new URL('../../test-data/recorded/todo-list/stream.ndjson', import.meta.url));
