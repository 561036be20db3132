#!/usr/bin/env bash
# Checks a mobile static library of oplite (ELF for Android, Mach-O for iOS):
#   1. it defines the public entry points (`export` lines in
#      scripts/mobile-symbols.txt), global and with default visibility;
#   2. it defines no other external symbol, mangled or not (weak and
#      hidden ones included), but the `merged` ones, which must be hidden:
#      anything else is a leak and fails the check;
#   3. no Rust-internal symbol is left undefined (all Rust code is inside
#      the archive; what it needs from outside is C: SQLite, libc, the
#      unwinder);
#   4. it links: into a shared library with LLD (ld.lld with 16 KB pages
#      for Android, ld64.lld for iOS), whose dynamic exports must be
#      exactly the public entry points;
#   5. with --rust-probe, it links beside Rust code: the probe's static
#      library (scripts/rust-link-probe.rs with its own std, which
#      build-mobile.sh compiles), every object of it, and the archive, into
#      one shared library that calls oplite_auto_extension, as a Rust app
#      links it. A Rust symbol the archive left global (rust_eh_personality,
#      say) is then a duplicate and fails the link.
# Usage: scripts/check-mobile-lib.sh <liboplite.a> <target triple>
#            [--raw <cargo's archive>] [--sizes <file for a markdown row>]
#            [--rust-probe <librust_link_probe.a>]
# Needs llvm-22 and lld-22 (scripts/install-mobile-toolchain.sh).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[[ $# -ge 2 ]] || { echo "usage: $0 <liboplite.a> <target> [--raw <archive>] [--sizes <file>]" >&2; exit 2; }
ARCHIVE="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
TARGET="$2"
shift 2
RAW="" SIZES="" PROBE=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --raw) RAW="$2"; shift 2 ;;
        --sizes) SIZES="$2"; shift 2 ;;
        --rust-probe) PROBE="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done

log() { printf '[check-mobile-lib] %s: %s\n' "$TARGET" "$*"; }
fail() { log "FAIL: $*" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# One line per external symbol: <D|U> <GLOBAL|WEAK> <DEFAULT|HIDDEN> <name>,
# names without Mach-O's leading underscore.
if [[ $TARGET == *-apple-* ]]; then
    FORMAT=macho
    llvm-nm-22 --no-llvm-bc -m "$ARCHIVE" | awk '
        /non-external/ || NF < 3 || /:$/ { next }
        {
            kind = ($0 ~ /\(undefined\)/) ? "U" : "D"
            bind = ($0 ~ / weak /) ? "WEAK" : "GLOBAL"
            vis = ($0 ~ /private external/) ? "HIDDEN" : "DEFAULT"
            name = $NF; sub(/^_/, "", name)
            print kind, bind, vis, name
        }' >"$work/symbols.txt"
else
    FORMAT=elf
    llvm-readelf-22 -s -W "$ARCHIVE" | awk '
        $1 ~ /^[0-9]+:$/ && $5 != "LOCAL" && $4 != "SECTION" && $4 != "FILE" && NF >= 8 {
            kind = ($(NF-1) == "UND") ? "U" : "D"
            print kind, $5, $6, $NF
        }' >"$work/symbols.txt"
fi

awk '$1 == "export" { print $2 }' "$SCRIPT_DIR/mobile-symbols.txt" | sort -u >"$work/exports.txt"
awk '$1 == "runtime" { print $2 }' "$SCRIPT_DIR/mobile-symbols.txt" | sort -u >"$work/runtime.txt"
awk '$1 == "merged" { print $2 }' "$SCRIPT_DIR/mobile-symbols.txt" | sort -u >"$work/merged.txt"

# 1. the public entry points
while IFS= read -r name; do
    grep -qx "D GLOBAL DEFAULT $name" "$work/symbols.txt" \
        || fail "$name is not defined as a global, default-visibility symbol"
done <"$work/exports.txt"

# 2. nothing else leaks
leaks=()
while read -r kind bind vis name; do
    [[ $kind == D ]] || continue
    if grep -qxF "$name" "$work/exports.txt"; then continue; fi
    if grep -qxF "$name" "$work/merged.txt" && [[ $vis == HIDDEN ]]; then continue; fi
    leaks+=("$bind/$vis $name")
done <"$work/symbols.txt"
if [[ ${#leaks[@]} -gt 0 ]]; then
    printf '  %s\n' "${leaks[@]}" >&2
    fail "${#leaks[@]} defined external symbol(s) beyond scripts/mobile-symbols.txt (listed above)"
fi

# 3. Rust-internal references resolved inside the archive
awk '$1 == "D" { print $4 }' "$work/symbols.txt" | sort -u >"$work/defined.txt"
awk '$1 == "U" { print $4 }' "$work/symbols.txt" | sort -u | comm -23 - "$work/defined.txt" >"$work/undefined.txt"
if grep -E '^(_R|_ZN|__rust|rust_|__rdl_|__rg_)' "$work/undefined.txt" >"$work/rust-undefined.txt"; then
    sed 's/^/  /' "$work/rust-undefined.txt" >&2
    fail "Rust symbols left undefined (listed above): the archive is not self-contained"
fi
sqlite_refs=$(grep -c '^sqlite3_' "$work/undefined.txt" || true)
other_refs=$(grep -vc '^sqlite3_' "$work/undefined.txt" || true)
runtime_refs=$(comm -12 "$work/undefined.txt" "$work/runtime.txt" | tr '\n' ' ')

# The names a linked library defines for the dynamic linker, sorted.
dynamic_exports() { # <linked library> <output file>
    if [[ $FORMAT == elf ]]; then
        llvm-readelf-22 --dyn-syms -W "$1" \
            | awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && $5 != "LOCAL" && NF >= 8 { print $NF }' | sort -u >"$2"
    else
        llvm-nm-22 -gU --format=just-symbols "$1" | sed 's/^_//' | sort -u >"$2"
    fi
}

# 4. it links, and exports exactly the entry points
if [[ $FORMAT == elf ]]; then
    ld.lld-22 -shared -z max-page-size=16384 --gc-sections \
        --whole-archive "$ARCHIVE" --no-whole-archive \
        --unresolved-symbols=ignore-all -o "$work/linked.so"
    linked="$work/linked.so"
else
    case "$TARGET" in
        aarch64-apple-ios) arch=arm64 platform=ios ;;
        aarch64-apple-ios-sim) arch=arm64 platform=ios-simulator ;;
        x86_64-apple-ios) arch=x86_64 platform=ios-simulator ;;
        aarch64-apple-darwin) arch=arm64 platform=macos ;;
        x86_64-apple-darwin) arch=x86_64 platform=macos ;;
        *) fail "no ld64.lld settings for $TARGET" ;;
    esac
    ld64.lld-22 -arch "$arch" -platform_version "$platform" 14.0 17.0 -dylib -dead_strip \
        -undefined dynamic_lookup -all_load "$ARCHIVE" -o "$work/linked.dylib" 2>"$work/ld.err" \
        || { cat "$work/ld.err" >&2; fail "ld64.lld could not link the archive"; }
    grep -v 'dynamic_lookup' "$work/ld.err" >&2 || true
    linked="$work/linked.dylib"
fi
dynamic_exports "$linked" "$work/dynamic.txt"
if ! diff -u "$work/exports.txt" "$work/dynamic.txt" >"$work/dynamic.diff"; then
    cat "$work/dynamic.diff" >&2
    fail "the linked library's exports differ from the entry points"
fi
if [[ $FORMAT == elf ]]; then
    align=$(llvm-readelf-22 -l -W "$work/linked.so" | awk '$1 == "LOAD" { print $NF }' | sort -u | tr '\n' ' ')
    [[ $align == "0x4000 " ]] || fail "LOAD segments aligned to $align, expected 0x4000 (16 KB pages)"
fi
llvm-strip-22 "$linked" -o "$work/linked.stripped"

# 5. beside Rust code
rust_note=""
if [[ -n $PROBE ]]; then
    if [[ $FORMAT == elf ]]; then
        ld.lld-22 -shared -z max-page-size=16384 --whole-archive "$PROBE" --no-whole-archive "$ARCHIVE" \
            --unresolved-symbols=ignore-all -o "$work/rust.so" 2>"$work/rust-ld.err" \
            || { cat "$work/rust-ld.err" >&2; fail "the archive does not link beside Rust code ($PROBE)"; }
        rust_linked="$work/rust.so"
    else
        ld64.lld-22 -arch "$arch" -platform_version "$platform" 14.0 17.0 -dylib -undefined dynamic_lookup \
            -force_load "$PROBE" "$ARCHIVE" -o "$work/rust.dylib" 2>"$work/rust-ld.err" \
            || { cat "$work/rust-ld.err" >&2; fail "the archive does not link beside Rust code ($PROBE)"; }
        rust_linked="$work/rust.dylib"
    fi
    dynamic_exports "$rust_linked" "$work/rust-dynamic.txt"
    for name in rust_link_probe oplite_auto_extension; do
        grep -qxF "$name" "$work/rust-dynamic.txt" || fail "linked beside Rust code, the library does not define $name"
    done
    rust_note="; links beside Rust code with its own std"
fi

size() { stat -c %s "$1"; }
log "OK: defines only $(tr '\n' ' ' <"$work/exports.txt")(global); needs $sqlite_refs sqlite3_* and $other_refs other C symbol(s) from the app${runtime_refs:+, including the runtime intrinsics $runtime_refs}$rust_note"
raw_note=""
[[ -z $RAW ]] || raw_note=" (as cargo wrote it: $(size "$RAW"))"
log "sizes: archive $(size "$ARCHIVE") bytes$raw_note, linked and stripped $(size "$work/linked.stripped") bytes"
if [[ -n $SIZES ]]; then
    printf '| %s | %s | %s | %s |\n' "$TARGET" "$([[ -z $RAW ]] || size "$RAW")" "$(size "$ARCHIVE")" "$(size "$work/linked.stripped")" >"$SIZES"
fi
