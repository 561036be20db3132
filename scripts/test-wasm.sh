#!/usr/bin/env bash
# Tests of the web package (wasm/): builds it from scratch with the documented
# toolchain, runs the Node tests (memory storage) and the Chromium tests
# (OPFS and IndexedDB). Called by scripts/test.sh unless OPLITE_SKIP_WASM=1.
# Installs what it needs and skips what is already there:
#   - the wasm32 toolchain and wasm-bindgen-cli (scripts/build-wasm-package.sh)
#   - playwright-core and typescript from npm (wasm/package-lock.json)
#   - Debian's chromium (apt-get), unless OPLITE_CHROMIUM points to a browser
# Environment: OPLITE_SKIP_BROWSER=1 skips the Chromium tests;
# OPLITE_WASM_SEEDS=n replays n recorded native sessions (default 40).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
step() { printf '\n--- wasm: %s (%ds)\n' "$*" $((SECONDS - start)); }

source scripts/lib.sh

step "building the web package"
bash scripts/build-wasm-package.sh

step "installing test dependencies (npm)"
# npm ci only when an installed version differs from package.json's.
npm_ci_pinned wasm

step "type-checking oplite.d.ts (tsc --strict)"
(cd wasm && node node_modules/typescript/bin/tsc -p tsconfig.json)

step "recording seeded sessions on the native build"
sessions=$(mktemp -d)
trap 'rm -rf "$sessions"' EXIT
# OPLITE_RECORD_SESSIONS names a built recorder (scripts/test.sh builds it
# first, so that this lane never waits for another's cargo lock).
if [[ -n ${OPLITE_RECORD_SESSIONS:-} ]]; then
  recorder=("$OPLITE_RECORD_SESSIONS")
else
  recorder=(cargo run -q -p oplite-wasm-native --bin record-sessions --)
fi
"${recorder[@]}" "$sessions" "${OPLITE_WASM_SEEDS:-40}"

step "the recorded sessions on the reference core 0.5.4 (same answers, same shared tables and views)"
"${recorder[@]}" --check "${REFERENCE_CORE:-$(bash scripts/reference-core.sh 0.5.4)}" "$sessions"

step "Node tests (memory storage; golden traces, recorded sessions, streams, API)"
OPLITE_SESSIONS=$sessions node --test wasm/test/node.test.mjs

step "Node tests of the web adapter's lock queues, tab protocol and line batches"
node --test wasm/test/tabs.test.mjs wasm/test/line-batch.test.mjs

if [[ -n ${OPLITE_SKIP_BROWSER:-} ]]; then
  step "skipping the Chromium tests (OPLITE_SKIP_BROWSER)"
  exit 0
fi

step "checking Chromium (Debian's chromium package)"
chromium=$(ensure_chromium)
export OPLITE_CHROMIUM=$chromium

step "Chromium tests (OPFS and IndexedDB)"
node --test --test-concurrency=1 wasm/test/browser.test.mjs

step "done"
