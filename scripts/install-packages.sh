#!/usr/bin/env bash
# Installs every system package the phases of scripts/test.sh need, in one
# place, so that no two phases run apt-get at once: the wasm toolchain
# (scripts/install-wasm-toolchain.sh: Debian's rustc-web, its std source,
# LLVM and LLD 22, clang), the ARM64 cross compiler and qemu
# (scripts/install-mobile-toolchain.sh --arm64), Chromium and valgrind.
# Each step installs only what is missing; the OPLITE_SKIP_* variables of
# scripts/test.sh leave out what their phases need. Prints each step's time.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

timed() {
  local t0=$SECONDS
  "$@"
  echo "[install-packages] $* took $((SECONDS - t0))s" >&2
}
need_cross=""
[[ -n ${OPLITE_SKIP_WASM:-} && -n ${OPLITE_SKIP_MOBILE:-} && -n ${OPLITE_SKIP_ARM64:-} ]] || need_cross=1
if [[ -n $need_cross ]]; then
  if [[ -z ${OPLITE_SKIP_ARM64:-} ]]; then
    timed bash scripts/install-mobile-toolchain.sh --arm64
  else
    timed bash scripts/install-mobile-toolchain.sh
  fi
fi
if [[ -z ${OPLITE_SKIP_WASM:-} && -z ${OPLITE_SKIP_BROWSER:-} ]]; then
  timed ensure_chromium >/dev/null
fi
if [[ -n ${OPLITE_NEED_VALGRIND:-} ]] && ! command -v valgrind >/dev/null; then
  timed as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends valgrind \
    || { as_root apt-get update && timed as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends valgrind; }
  as_root apt-get clean
fi
echo "[install-packages] done"
