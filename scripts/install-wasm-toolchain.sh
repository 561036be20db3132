#!/usr/bin/env bash
# Install the toolchain that builds Rust crates for wasm32-unknown-unknown on
# Debian 12 (bookworm), without rustup targets:
#   - rustc-web / cargo-web (>= 1.90, from bookworm-security) as /usr/bin/rustc
#     and /usr/bin/cargo, plus rust-web-src (std source for -Zbuild-std) and
#     rust-web-llvm + lld-22 (/usr/bin/rust-lld -> lld-22, LLVM 22 like rustc);
#   - lld (wasm-ld) and clang (C code such as SQLite via sqlite-wasm-rs).
#
# Idempotent: if everything is already present, apt-get is not run at all.
# Must run as root (or via sudo) when something has to be installed.
#
# Environment:
#   WASM_MIN_RUSTC_MINOR  minimum 1.x minor version of /usr/bin/rustc (default 90)
set -euo pipefail

MIN_MINOR="${WASM_MIN_RUSTC_MINOR:-90}"
# rust-web-llvm's /usr/bin/rust-lld is a symlink to lld-22, which nothing
# pulls in (not even as a Recommends), so lld-22 is listed explicitly.
PACKAGES=(rustc-web cargo-web rust-web-src rust-web-llvm lld-22 lld clang)

log() { printf '[install-wasm-toolchain] %s\n' "$*"; }

# Prints the reasons the toolchain is incomplete; prints nothing if complete.
missing() {
    local ver minor
    if [[ -x /usr/bin/rustc ]]; then
        ver="$(/usr/bin/rustc --version 2>/dev/null || true)"
        minor="$(sed -nE 's/^rustc 1\.([0-9]+)\..*/\1/p' <<<"$ver")"
        if [[ -z "$minor" || "$minor" -lt "$MIN_MINOR" ]]; then
            echo "/usr/bin/rustc is '${ver:-unknown}', need >= 1.${MIN_MINOR}"
        fi
    else
        echo "/usr/bin/rustc not found"
    fi
    [[ -x /usr/bin/cargo ]] || echo "/usr/bin/cargo not found"
    [[ -d /usr/lib/rustlib/src/rust/library ]] || echo "/usr/lib/rustlib/src/rust (rust-web-src) not found"
    [[ -x /usr/bin/rust-lld ]] || echo "/usr/bin/rust-lld missing or dangling (rust-web-llvm, lld-22)"
    command -v wasm-ld >/dev/null 2>&1 || echo "wasm-ld not on PATH"
    command -v clang >/dev/null 2>&1 || echo "clang not on PATH"
    command -v cc >/dev/null 2>&1 || echo "cc (host linker for build scripts) not on PATH"
}

report() {
    log "rustc:   $(/usr/bin/rustc --version)"
    log "cargo:   $(/usr/bin/cargo --version)"
    log "std src: /usr/lib/rustlib/src/rust"
    log "wasm-ld: $(command -v wasm-ld) ($(wasm-ld --version 2>/dev/null | head -n1))"
    log "rust-lld: /usr/bin/rust-lld -> $(readlink -f /usr/bin/rust-lld) ($(/usr/bin/rust-lld -flavor wasm --version 2>/dev/null | head -n1))"
    log "clang:   $(command -v clang) ($(clang --version 2>/dev/null | head -n1))"
}

problems="$(missing)"
if [[ -z "$problems" ]]; then
    log "toolchain already installed; skipping apt-get"
    report
    exit 0
fi

log "toolchain incomplete:"
while IFS= read -r line; do log "  - $line"; done <<<"$problems"

if [[ "$(id -u)" -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo)
    else
        log "error: must run as root to install packages" >&2
        exit 1
    fi
else
    SUDO=()
fi

export DEBIAN_FRONTEND=noninteractive
log "running: apt-get update"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
log "running: apt-get install -y ${PACKAGES[*]}"
# Note: rustc-web conflicts with Debian's plain 'rustc' (1.63); apt removes it.
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    "${PACKAGES[@]}"
"${SUDO[@]}" apt-get clean  # the downloaded .debs: disk is short on CI machines

problems="$(missing)"
if [[ -n "$problems" ]]; then
    log "error: toolchain still incomplete after apt-get install:" >&2
    while IFS= read -r line; do log "  - $line" >&2; done <<<"$problems"
    log "hint: rustc-web >= 1.${MIN_MINOR} comes from bookworm-security; check /etc/apt/sources.list*" >&2
    exit 1
fi
log "installed: ${PACKAGES[*]}"
report
