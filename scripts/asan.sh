#!/usr/bin/env bash
# Runs oplite's Rust tests under AddressSanitizer with rustup's stable
# toolchain (RUSTC_BOOTSTRAP=1 enables -Zsanitizer; the runtime ships with
# rust-std). SQLite's C code is instrumented too (CFLAGS). Builds into
# target/asan so the ordinary build stays as it is.
#
#   scripts/asan.sh                 # the subset below
#   scripts/asan.sh --test crash    # any cargo test selection
set -euo pipefail
cd "$(dirname "$0")/.."
host=$(rustc -vV | sed -n 's/^host: //p')
selection=("$@")
if [[ ${#selection[@]} -eq 0 ]]; then
  selection=(--lib --test bad_input --test bad_input_table --test golden --test init --test upgrade
             --test fuzz --test faults --test crash --test concurrency --test sync_local)
fi
export RUSTC_BOOTSTRAP=1
export RUSTFLAGS="-Zsanitizer=address -Cdebug-assertions"
export RUSTDOCFLAGS="-Zsanitizer=address"
export CFLAGS="-fsanitize=address -fno-omit-frame-pointer"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
# The crash test's children are the same binary: they run under ASan too.
export OPLITE_CRASH_KILLS=${OPLITE_CRASH_KILLS:-40}
export OPLITE_FUZZ_ITERS=${OPLITE_FUZZ_ITERS:-20000}
export OPLITE_APPLY_OPS=${OPLITE_APPLY_OPS:-50000}
cargo test -p oplite --target "$host" --target-dir target/asan \
  "${selection[@]}" -- --test-threads=2
