#!/usr/bin/env bash
# Runs every test of oplite on this machine, installing what they need first.
# This is the README's test command and what .ci/run runs.
#   scripts/test.sh            # everything
#   OPLITE_SKIP_WASM=1 scripts/test.sh   # skip the wasm32 build, the web package and web SDK tests
#   OPLITE_SKIP_WEB_SDK=1                # skip the web SDK drop-in test
#   OPLITE_SKIP_FUZZ=1, OPLITE_SKIP_MEMCHECK=1   # skip libFuzzer, valgrind
#   OPLITE_SKIP_NODE=1                   # skip the Node SDK drop-in test
#   OPLITE_SKIP_RUST_SDK=1               # skip the Rust SDK drop-in test
#   OPLITE_SKIP_CIPHER=1                 # skip the SQLCipher and SQLite3MultipleCiphers builds
#   OPLITE_SKIP_MOBILE=1                 # skip the Android/iOS static libraries
#   OPLITE_SKIP_ARM64=1                  # skip the tests on ARM64 under qemu
#   OPLITE_KEEP_BUILDS=1                 # keep each phase's build dir (see below)
#
# The phases run in three lanes at once (scripts/phases.sh): the native
# builds and tests, the web package and web SDK, and the mobile and ARM64
# cross builds. Much of each lane is one busy core (a fat-LTO link, a
# browser, qemu), so together they keep both cores of a CI machine busy.
# Each phase's log is printed whole when it ends; the run closes with a
# table of phases (time, CPU, budget, checks) and one line counting the
# checks of every phase. Budgets and the measured times: docs/development.md.
#
# CI machines can be short of disk, so each phase's build dir goes once the
# phase has passed (the fuzz, standalone, mobile and ARM64 builds, ~4 GB in
# all); every phase line shows the space left.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/phases.sh
phase_init "$PWD/target/test-logs"

command -v cargo >/dev/null || { echo "cargo is required (rustup's stable toolchain)"; exit 1; }
command -v npm >/dev/null || { echo "npm is required to fetch the reference core"; exit 1; }
# The house check, the standalone check and better-sqlite3's build (Node SDK
# test) need these before any lane starts.
source scripts/lib.sh
apt_ensure python3:python3 make:make g++:g++
cargo --version

# A fresh machine builds everything once: incremental caches only cost disk.
export CARGO_INCREMENTAL=0
if [[ -z ${OPLITE_KEEP_BUILDS:-} ]]; then export OPLITE_MOBILE_DROP_BUILDS=1; fi
drop() { if [[ -z ${OPLITE_KEEP_BUILDS:-} ]]; then rm -rf "$@"; fi; }
export -f drop

REFERENCE_CORE=$(bash scripts/reference-core.sh 0.5.4)
REFERENCE_CORE_053=$(bash scripts/reference-core.sh 0.5.3)
export REFERENCE_CORE REFERENCE_CORE_053
echo "reference cores: 0.5.4 $REFERENCE_CORE, 0.5.3 $REFERENCE_CORE_053"
export OPLITE_SO=$PWD/target/release/liboplite.so
export OPLITE_TEST_SERVER=$PWD/target/release/oplite-test-server
export OPLITE_RECORD_SESSIONS=$PWD/target/debug/record-sessions
# Lanes that need no root skip the packages phase when nothing is missing.
[[ -n ${OPLITE_SKIP_MEMCHECK:-} ]] || export OPLITE_NEED_VALGRIND=1

# Phase specs: "name budget-seconds skip-variable command" ("-": never skipped).
native=(
  "house 30 - python3 scripts/check-house.py && python3 scripts/check-one-build.py && python3 scripts/check-links.py"
  "build 300 - cargo build --release --locked --manifest-path loadable/Cargo.toml &&
     cargo build --release -p oplite-test-server && cargo build -p oplite-wasm-native --bin record-sessions &&
     nm -D --defined-only \$OPLITE_SO | grep -q ' sqlite3_powersync_init\$' &&
     nm -D --defined-only \$OPLITE_SO | grep -q ' sqlite3_oplite_init\$'"
  # The extension's reference (cargo doc) with warnings as errors: a missing
  # doc comment or a broken intra-doc link fails the phase (about 6 s).
  "rust-tests 480 - cargo test-ext && RUSTDOCFLAGS='-D warnings' cargo doc -p oplite --no-deps"
  "cli 180 - cargo test -p oplite-test-data -p oplite-test-server -p oplite-cli && cargo test -p oplite-wasm"
  "cipher 300 OPLITE_SKIP_CIPHER bash scripts/test-cipher.sh"
  "node-sdk 420 OPLITE_SKIP_NODE bash scripts/test-node.sh"
  "fuzz 600 OPLITE_SKIP_FUZZ bash scripts/fuzz.sh \${OPLITE_FUZZ_SECONDS:-20} && drop target/fuzz-build"
  "memcheck 120 OPLITE_SKIP_MEMCHECK phase_wait packages && bash scripts/memcheck.sh"
  "standalone 180 - bash scripts/check-standalone.sh && drop target/standalone"
)
web=(
  "packages 300 - bash scripts/install-packages.sh"
  "wasm-build 1100 OPLITE_SKIP_WASM bash scripts/build-wasm-package.sh"
  "web-tests 180 OPLITE_SKIP_WASM phase_wait build && bash scripts/test-wasm.sh"
  "web-sdk 720 OPLITE_SKIP_WEB_SDK phase_wait build && bash scripts/test-web-sdk.sh"
  "examples 300 - phase_wait build && bash scripts/test-examples.sh --no-build"
  "rust-sdk 600 OPLITE_SKIP_RUST_SDK phase_wait build && bash scripts/test-rust-sdk.sh"
)
[[ -z ${OPLITE_SKIP_WASM:-} ]] || export OPLITE_SKIP_WEB_SDK=1
cross=(
  "mobile 1800 OPLITE_SKIP_MOBILE phase_wait packages && bash scripts/build-mobile.sh"
  "arm64 600 OPLITE_SKIP_ARM64 phase_wait packages && bash scripts/test-arm64.sh && drop target/arm64"
)
export -f phase_wait

lane native "${native[@]}" &
lane web "${web[@]}" &
lane cross "${cross[@]}" &
wait || true
wait || true
wait || true

names=()
for spec in "${native[@]}" "${web[@]}" "${cross[@]}"; do names+=("${spec%% *}"); done
phase_summary "${names[@]}"
