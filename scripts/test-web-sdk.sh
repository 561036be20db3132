#!/usr/bin/env bash
# The web SDK drop-in test (docs/web-sdk.md): the official @powersync/web
# 2.4.0 in headless Chromium syncs, uploads and watches against the loopback
# service with its own database and with oplite's (@oplite/powersync-web),
# on OPFS and on IndexedDB; fails on any difference. Ends with one line
# `N passed, M failed`. Called by scripts/test.sh unless OPLITE_SKIP_WASM=1
# or OPLITE_SKIP_WEB_SDK=1. Installs what it needs and skips what is there:
#   - clients/web/node_modules (npm ci, when missing or not the lockfile's)
#   - wasm/pkg-powersync-web (scripts/build-wasm-package.sh) when missing
#   - the loopback service (cargo build --release -p oplite-test-server)
#   - Debian's chromium (apt-get), unless OPLITE_CHROMIUM names a browser
# Environment: OPLITE_WEB_ROWS=n syncs n rows (default 100000).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
step() { printf '\n--- web SDK: %s (%ds)\n' "$*" $((SECONDS - start)); }
source scripts/lib.sh

step "installing the SDK (npm ci in clients/web)"
if ! npm_lock_matches clients/web; then
  (cd clients/web && npm ci --no-audit --no-fund)
else
  echo "npm packages already installed"
fi

step "the oplite adapter package (wasm/pkg-powersync-web)"
if [[ ! -f wasm/pkg-powersync-web/index.js || ! -f wasm/pkg-powersync-web/oplite_wasm_bg.wasm ]]; then
  bash scripts/build-wasm-package.sh
else
  echo "already built"
fi

step "the loopback service"
# OPLITE_TEST_SERVER names a built service (scripts/test.sh builds it first).
if [[ -z ${OPLITE_TEST_SERVER:-} ]]; then
  cargo build --release -p oplite-test-server
  OPLITE_TEST_SERVER=$PWD/target/release/oplite-test-server
fi

step "checking Chromium (Debian's chromium package)"
chromium=$(ensure_chromium)

step "the SDK's own database, then oplite's, on OPFS and on IndexedDB; comparing"
OPLITE_CHROMIUM=$chromium OPLITE_TEST_SERVER=$OPLITE_TEST_SERVER node clients/web/run.mjs

step "done"
