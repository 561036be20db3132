#!/usr/bin/env bash
# Build a cargo package of this repository for wasm32-unknown-unknown with
# Debian's rustc-web (std built from source with -Zbuild-std).
#
# Usage: scripts/build-wasm.sh <cargo package> [extra cargo args...]
#   e.g. scripts/build-wasm.sh mycrate --no-default-features --features static
#
# Output goes to <repo>/target/wasm (separate from the rustup build in target/).
# Environment:
#   WASM_REPO_ROOT  directory to build in (default: the parent of scripts/)
#   WASM_LINKER     linker for wasm32 (default: wasm-ld, i.e. Debian's LLD 14;
#                   wasm-ld-22 / rust-lld match rustc-web's LLVM 22)
set -euo pipefail

if [[ $# -lt 1 || "$1" == -* ]]; then
    echo "usage: $0 <cargo package> [extra cargo args...]" >&2
    exit 2
fi
PKG="$1"
shift

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$SCRIPT_DIR/lib.sh"
REPO_ROOT="${WASM_REPO_ROOT:-$(cd "$SCRIPT_DIR/.." && pwd)}"
REPO_ROOT="$(cd "$REPO_ROOT" && pwd)"
TARGET=wasm32-unknown-unknown
TARGET_DIR="$REPO_ROOT/target/wasm"
LINKER="${WASM_LINKER:-wasm-ld}"

"$SCRIPT_DIR/install-wasm-toolchain.sh"

cd "$REPO_ROOT"
echo "[build-wasm] building package '$PKG' for $TARGET in $REPO_ROOT (target dir $TARGET_DIR, linker $LINKER)"

json="$(mktemp)"
trap 'rm -f "$json"' EXIT

start=$SECONDS
# All settings are scoped to this one command; the caller's PATH is unchanged.
debian_cargo \
    CARGO_TARGET_DIR="$TARGET_DIR" \
    CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER="$LINKER" \
    -- build --release \
        -Zbuild-std=std,panic_abort \
        --target "$TARGET" \
        -p "$PKG" \
        --message-format=json-render-diagnostics \
        "$@" >"$json"
echo "[build-wasm] build finished in $((SECONDS - start))s"

# Top-level artefacts: files named by compiler-artifact messages that sit
# directly in target/wasm/<target>/<profile>/ (not in deps/, build/, ...).
echo "[build-wasm] artefacts:"
{ grep '"reason":"compiler-artifact"' "$json" || true; } \
    | { grep -o '"filenames":\[[^]]*\]' || true; } \
    | sed -e 's/^"filenames":\[//' -e 's/\]$//' \
    | tr ',' '\n' \
    | sed -e 's/^"//' -e 's/"$//' \
    | sort -u \
    | while IFS= read -r f; do
        [[ -n "$f" && "$(dirname "$(dirname "$f")")" == "$TARGET_DIR/$TARGET" ]] || continue
        if [[ -e "$f" ]]; then
            printf '  %s (%s bytes)\n' "$f" "$(stat -c %s "$f")"
        else
            printf '  %s\n' "$f"
        fi
    done
