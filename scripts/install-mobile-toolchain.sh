#!/usr/bin/env bash
# Installs what the mobile builds and the ARM64 test run need on Debian 12,
# on top of the wasm toolchain (Debian's rustc-web with its std source, LLVM
# 22 and LLD 22, installed by scripts/install-wasm-toolchain.sh):
#   - for every mobile static library: nothing more (llvm-nm-22,
#     llvm-objcopy-22, llvm-ar-22, ld.lld-22 and ld64.lld-22 come with
#     rust-web-llvm and lld-22);
#   - with --arm64: gcc-aarch64-linux-gnu and libc6-dev-arm64-cross (linker
#     and C compiler for aarch64-unknown-linux-gnu, which also compiles
#     rusqlite's bundled SQLite) and qemu-user-static (qemu-aarch64-static
#     runs the test binaries; no binfmt registration is needed).
#
# Idempotent: apt-get runs only if something is missing.
# Usage: scripts/install-mobile-toolchain.sh [--arm64]
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ARM64=0
for arg in "$@"; do
    case "$arg" in
        --arm64) ARM64=1 ;;
        *) echo "usage: $0 [--arm64]" >&2; exit 2 ;;
    esac
done

log() { printf '[install-mobile-toolchain] %s\n' "$*"; }

"$SCRIPT_DIR/install-wasm-toolchain.sh"

missing() {
    local tool
    for tool in llvm-nm-22 llvm-objcopy-22 llvm-ar-22 llvm-readelf-22 llvm-size-22 llvm-strip-22 ld.lld-22 ld64.lld-22; do
        command -v "$tool" >/dev/null 2>&1 || echo "llvm-22 lld-22"
    done
    if [[ $ARM64 == 1 ]]; then
        command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || echo gcc-aarch64-linux-gnu
        [[ -e /usr/aarch64-linux-gnu/lib/libc.so.6 && -e /usr/aarch64-linux-gnu/include/stdio.h ]] || echo libc6-dev-arm64-cross
        command -v qemu-aarch64-static >/dev/null 2>&1 || echo qemu-user-static
    fi
}

packages="$(missing | tr ' ' '\n' | sort -u | tr '\n' ' ')"
packages="${packages% }"
if [[ -z "$packages" ]]; then
    log "mobile toolchain already installed; skipping apt-get"
else
    log "installing: $packages"
    SUDO=()
    if [[ "$(id -u)" -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 || { log "error: must run as root to install $packages" >&2; exit 1; }
        SUDO=(sudo)
    fi
    apt_get() {
        "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 "$@"
    }
    # qemu-user-static recommends binfmt-support, which we do not need: the
    # test runner calls qemu-aarch64-static directly.
    # shellcheck disable=SC2086
    apt_get install -y --no-install-recommends $packages || { apt_get update && apt_get install -y --no-install-recommends $packages; }
    apt_get clean  # the downloaded .debs: disk is short on CI machines
    problems="$(missing)"
    if [[ -n "$problems" ]]; then
        log "error: still missing after apt-get install: $problems" >&2
        exit 1
    fi
fi

if [[ $ARM64 == 1 ]]; then
    log "aarch64-linux-gnu-gcc: $(aarch64-linux-gnu-gcc --version | head -n1)"
    log "qemu-aarch64-static: $(qemu-aarch64-static --version | head -n1)"
fi
log "llvm-nm-22: $(llvm-nm-22 --version | sed -n 's/.*LLVM version /LLVM /p' | head -n1)"
