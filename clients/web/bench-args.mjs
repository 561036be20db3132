// What the web benchmarks (bench.mjs, tabs-bench.mjs) read from their
// command line and environment: --runs, --vfs and --cores with the same
// defaults, their own options besides, and the loopback service binary
// (OPLITE_TEST_SERVER), without which they stop with exit code 2.
import { parseArgs } from 'node:util';

export function benchArgs(options) {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '3' },
      vfs: { type: 'string', default: 'opfs,idb' },
      cores: { type: 'string', default: 'bundled,oplite' },
      ...options,
    },
  });
  const server = process.env.OPLITE_TEST_SERVER;
  if (!server) {
    console.error('set OPLITE_TEST_SERVER (the oplite-test-server binary)');
    process.exit(2);
  }
  return { opts: values, server };
}
