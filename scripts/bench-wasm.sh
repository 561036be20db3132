#!/usr/bin/env bash
# The browser benchmark: builds the web package and the native bench binary,
# then prints a markdown table (wasm/bench/browser-bench.mjs; its arguments
# pass through, e.g. --ops 100000 --runs 3).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-wasm-package.sh >&2
cargo build --release -p oplite-wasm-native --bin bench-sync >&2
if [[ ! -d wasm/node_modules/playwright-core ]]; then (cd wasm && npm ci --no-audit --no-fund >&2); fi
exec node wasm/bench/browser-bench.mjs "$@"
