#!/usr/bin/env bash
# Runs the extension's Rust tests on ARM64: cross-compiles them for
# aarch64-unknown-linux-gnu with Debian's rustc-web (std built from source,
# -Zbuild-std, as for the wasm and mobile builds), links with Debian's
# aarch64-linux-gnu-gcc (which also compiles rusqlite's bundled SQLite) and
# runs every test binary under qemu-aarch64-static. This is the closest these
# machines get to a phone's CPU: it catches alignment, atomics and C ABI
# mistakes that x86_64 forgives.
#
# What runs: the unit tests (--lib) and every integration test in
# extension/tests/ except those that load an x86_64 shared library into the
# test process (the reference PowerSync core, or the host build of
# liboplite.so), found by what they call (LOADS_X86_64 below), and those
# listed in EXCLUDED (they spawn helper processes of the host's kind).
# A new file in extension/tests/ runs here unless it loads such a library.
# tests/fuzz.rs runs a tenth of its seeded mutations (OPLITE_FUZZ_ITERS,
# default 10000 here): under qemu the full count took 86 s, and the native
# run already covers them; here it checks the decoders on ARM64.
#
# Then the static library as an app links it: scripts/build-mobile.sh
# builds it for aarch64-unknown-linux-gnu as for Android (profile `mobile`,
# internals hidden, checked; no outline atomics, as on Android), and scripts/static-link-test.c,
# compiled with aarch64-linux-gnu-gcc against SQLite's amalgamation (the one
# rusqlite bundles) and include/oplite.h, calls oplite_auto_extension() and
# the entry point and runs SQL under qemu. OPLITE_SKIP_ARM64_STATIC=1 skips
# this part.
#
# Usage: scripts/test-arm64.sh [extra args for the test binaries]
#   e.g. scripts/test-arm64.sh --test-threads=1
# Output goes to target/arm64 (its own target dir: std is built for this
# target and profile once, later runs are incremental).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$SCRIPT_DIR/lib.sh"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
TARGET=aarch64-unknown-linux-gnu
# Tests that load x86_64 libraries (the reference core, liboplite.so) or
# spawn helper processes of the host architecture do not run here.
EXCLUDED=(concurrency crash uninstall_crash)
# What a test file calls when it loads the reference core or liboplite.so
# (extension/tests/common: reference(), reference_so(), their 0.5.3 twins, oplite_so(), Pair;
# the upstream suite's per_core! tests run every test on the reference too).
LOADS_X86_64='per_core|reference(_053)?(_so)?\(|oplite_so\(|Pair::new|Pair \{'

"$SCRIPT_DIR/install-mobile-toolchain.sh" --arm64

cd "$REPO_ROOT"
tests=()
for file in extension/tests/*.rs; do
    name="$(basename "$file" .rs)"
    skip=0
    for excluded in "${EXCLUDED[@]}"; do [[ $name == "$excluded" ]] && skip=1; done
    if [[ $skip == 0 ]] && grep -qE "$LOADS_X86_64" "$file"; then
        skip=1
        EXCLUDED+=("$name")
    fi
    [[ $skip == 1 ]] || tests+=(--test "$name")
done
echo "[test-arm64] running --lib ${tests[*]} (excluded, they load x86_64 libraries: ${EXCLUDED[*]})"

start=$SECONDS
# Optimised test builds (opt-level 1 for everything, std and SQLite's C
# included) with debug assertions and overflow checks kept on: at opt-level
# 0, sync_local's 200k-op test alone takes about 7 minutes under qemu. No
# debug info: it only slows the links.
# The runner is qemu with the cross sysroot as its library prefix; the
# tests find their data through absolute paths compiled in
# (CARGO_MANIFEST_DIR), which qemu-user sees unchanged.
debian_cargo \
    CARGO_TARGET_DIR="$REPO_ROOT/target/arm64" \
    OPLITE_FUZZ_ITERS="${OPLITE_FUZZ_ITERS:-10000}" \
    CARGO_PROFILE_DEV_OPT_LEVEL=1 \
    CARGO_PROFILE_DEV_DEBUG=0 \
    CARGO_PROFILE_TEST_OPT_LEVEL=1 \
    CARGO_PROFILE_TEST_DEBUG=0 \
    CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
    CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64-static -L /usr/aarch64-linux-gnu" \
    CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc \
    AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar \
    -- test \
        -Zbuild-std=std,panic_unwind \
        --target "$TARGET" \
        -p oplite \
        --lib "${tests[@]}" \
        -- "$@"
echo "[test-arm64] built and ran in $((SECONDS - start))s"

[[ -z ${OPLITE_SKIP_ARM64_STATIC:-} ]] || exit 0
start=$SECONDS
# Without outline atomics, like aarch64-linux-android: the GNU target calls
# __aarch64_* helpers and std's LSE initialiser calls compiler_builtins'
# __rust_enable_lse, which build-mobile.sh drops (it would fail the build).
CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-Ctarget-feature=-outline-atomics" \
    bash "$SCRIPT_DIR/build-mobile.sh" "$TARGET"
archive="$REPO_ROOT/target/mobile/dist/$TARGET/liboplite.a"
# SQLite's amalgamation from the libsqlite3-sys crate the tests just used.
sys_manifest="$(/usr/bin/cargo metadata --format-version 1 --manifest-path "$REPO_ROOT/Cargo.toml" \
    | grep -o '"manifest_path":"[^"]*/libsqlite3-sys-[^"]*/Cargo.toml"' | head -n1 | sed 's/^"manifest_path":"//; s/"$//')"
amalgamation="$(dirname "$sys_manifest")/sqlite3"
[[ -f $amalgamation/sqlite3.c ]] || { echo "[test-arm64] no sqlite3.c in $amalgamation" >&2; exit 1; }
out="$REPO_ROOT/target/arm64/static-link-test"
mkdir -p "$out"
if [[ ! -f $out/sqlite3.o || $amalgamation/sqlite3.c -nt $out/sqlite3.o ]]; then
    aarch64-linux-gnu-gcc -O1 -c "$amalgamation/sqlite3.c" -o "$out/sqlite3.o"
fi
# The libraries rustc names for this target (--print native-static-libs).
aarch64-linux-gnu-gcc -O1 -Wall -Werror -I "$amalgamation" -I "$REPO_ROOT/include" \
    "$SCRIPT_DIR/static-link-test.c" "$out/sqlite3.o" "$archive" \
    -lgcc_s -lpthread -lm -ldl -o "$out/static-link-test"
qemu-aarch64-static -L /usr/aarch64-linux-gnu "$out/static-link-test"
echo "[test-arm64] static library linked from C and ran in $((SECONDS - start))s"
echo "arm64-static: 1 passed, 0 failed"
