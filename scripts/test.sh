#!/usr/bin/env bash
# Runs every test of oplite on this machine, installing what they need first.
# This is the README's test command and what .ci/run runs.
#   scripts/test.sh            # everything
#   OPLITE_SKIP_WASM=1 scripts/test.sh   # skip the wasm32 build, the web package and web SDK tests
#   OPLITE_SKIP_WEB_SDK=1                # skip the web SDK drop-in test
#   OPLITE_SKIP_FUZZ=1, OPLITE_SKIP_MEMCHECK=1   # skip libFuzzer, valgrind
#   OPLITE_SKIP_NODE=1                   # skip the Node SDK drop-in test
#   OPLITE_SKIP_MOBILE=1                 # skip the Android/iOS static libraries
#   OPLITE_SKIP_ARM64=1                  # skip the tests on ARM64 under qemu
#   OPLITE_KEEP_BUILDS=1                 # keep each phase's build dir (see below)
#
# CI machines can be short of disk, so each phase's build dir goes once the
# phase has passed (the fuzz, standalone, mobile and ARM64 builds, ~4 GB in
# all); every step line shows the space left.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
step() { printf '\n=== %s (%ds, %s free)\n' "$*" $((SECONDS - start)) "$(df -h --output=avail . | tail -n1 | tr -d ' ')"; }
drop() { if [[ -z ${OPLITE_KEEP_BUILDS:-} ]]; then rm -rf "$@"; fi; }
# A fresh machine builds everything once: incremental caches only cost disk.
export CARGO_INCREMENTAL=0
if [[ -z ${OPLITE_KEEP_BUILDS:-} ]]; then export OPLITE_MOBILE_DROP_BUILDS=1; fi

step "checking tools"
command -v cargo >/dev/null || { echo "cargo is required (rustup's stable toolchain)"; exit 1; }
command -v npm >/dev/null || { echo "npm is required to fetch the reference core"; exit 1; }
cargo --version

log=$(mktemp)
trap 'rm -f "$log"' EXIT

step "fetching the reference core"
REFERENCE_CORE=$(bash scripts/reference-core.sh)
export REFERENCE_CORE
echo "$REFERENCE_CORE"

step "building the loadable extension (cargo build --release)"
cargo build --release -p oplite
export OPLITE_SO=$PWD/target/release/liboplite.so
nm -D --defined-only "$OPLITE_SO" | grep -q ' sqlite3_powersync_init$'
nm -D --defined-only "$OPLITE_SO" | grep -q ' sqlite3_oplite_init$'

step "unit and integration tests"
cargo test-ext 2>&1 | tee -a "$log"

step "a clone with nothing beside it (scripts/check-standalone.sh)"
bash scripts/check-standalone.sh 2>&1 | tee -a "$log"
drop target/standalone

step "test-data, the loopback service and the CLI end to end"
# Sync, local write + upload + confirmed write checkpoint, reconnect after a
# dropped stream, expired and expiring tokens, the binary and the demo.
cargo test -p oplite-test-data -p oplite-test-server -p oplite-cli 2>&1 | tee -a "$log"
# The wasm crate's pure modules (read snapshots) run natively.
cargo test -p oplite-wasm 2>&1 | tee -a "$log"

if [[ -z ${OPLITE_SKIP_NODE:-} ]]; then
  step "the official Node SDK with its bundled core and with oplite (scripts/test-node.sh)"
  bash scripts/test-node.sh
fi

# Reliability (README "Reliability"): the crash, fault, concurrency,
# bad-input, upgrade and seeded-fuzz tests ran with the tests above; these
# two need their own runs.
if [[ -z ${OPLITE_SKIP_FUZZ:-} ]]; then
  step "libFuzzer: every fuzz target for ${OPLITE_FUZZ_SECONDS:-20}s (scripts/fuzz.sh)"
  bash scripts/fuzz.sh "${OPLITE_FUZZ_SECONDS:-20}"
  drop target/fuzz-build
fi
if [[ -z ${OPLITE_SKIP_MEMCHECK:-} ]]; then
  step "valgrind memcheck over a subset of the tests (scripts/memcheck.sh)"
  bash scripts/memcheck.sh
fi

if [[ -z ${OPLITE_SKIP_WASM:-} ]]; then
  step "building the extension for wasm32-unknown-unknown"
  bash scripts/build-wasm.sh oplite --no-default-features --features static
  step "web package: build, Node tests, Chromium tests (scripts/test-wasm.sh)"
  bash scripts/test-wasm.sh
  if [[ -z ${OPLITE_SKIP_WEB_SDK:-} ]]; then
    step "the official web SDK in Chromium with its own database and with oplite's (scripts/test-web-sdk.sh)"
    bash scripts/test-web-sdk.sh
  fi
fi

# Mobile (README "Mobile"): every Android/iOS static library, its symbols
# checked, then the extension's tests on ARM64 under qemu.
if [[ -z ${OPLITE_SKIP_MOBILE:-} ]]; then
  step "building the Android and iOS static libraries, checking their symbols"
  bash scripts/build-mobile.sh
fi

if [[ -z ${OPLITE_SKIP_ARM64:-} ]]; then
  step "ARM64: the extension's tests and the static library under qemu"
  bash scripts/test-arm64.sh
  drop target/arm64
fi

step "done"
# One closing line for everything cargo ran (the last cargo summary is the
# doc-tests', which run none).
awk '/^test result:/ { p += $4; f += $6 } END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
