#!/usr/bin/env bash
# Builds ios/build/Oplite.xcframework: oplite's static library for iOS
# devices (arm64) and the simulator (arm64 + x86_64), optionally macOS
# (arm64 + x86_64), each with include/oplite.h and a module map (Clang
# module `OpliteC`). Runs on a Mac with Xcode (xcodebuild, lipo, ld).
#
#   ios/build-xcframework.sh                 # build with rustup's toolchain here
#   ios/build-xcframework.sh --macos         # also a macOS slice
#   ios/build-xcframework.sh --prebuilt DIR  # package archives built elsewhere
#
# --prebuilt takes the output of scripts/build-mobile.sh (the Linux/CI build:
# DIR/<target>/liboplite.a, already reduced to the public symbols and
# checked), so the xcframework ships exactly what CI checked. Without it, the
# Rust targets must be installed (`rustup target add aarch64-apple-ios
# aarch64-apple-ios-sim x86_64-apple-ios`, plus aarch64-apple-darwin and
# x86_64-apple-darwin for --macos) and the same reduction is done with
# Apple's linker: `ld -r -exported_symbols_list` keeps only the entry points
# global; compiler_builtins is left out (see scripts/mobile-symbols.txt).
#
# Every archive is then checked: it defines exactly the entry points, leaves
# no Rust symbol undefined, and links into a dylib with Apple's linker.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$HERE/.." && pwd)"
BUILD="$HERE/build"
PROFILE="${OPLITE_MOBILE_PROFILE:-mobile}"
PREBUILT="" MACOS=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --prebuilt) PREBUILT="$(cd "$2" && pwd)"; shift 2 ;;
        --macos) MACOS=1; shift ;;
        *) echo "usage: $0 [--macos] [--prebuilt <dist dir>]" >&2; exit 2 ;;
    esac
done
command -v xcodebuild >/dev/null || { echo "xcodebuild not found: this script needs a Mac with Xcode" >&2; exit 1; }

TARGETS=(aarch64-apple-ios aarch64-apple-ios-sim x86_64-apple-ios)
[[ $MACOS == 1 ]] && TARGETS+=(aarch64-apple-darwin x86_64-apple-darwin)
export IPHONEOS_DEPLOYMENT_TARGET="${IPHONEOS_DEPLOYMENT_TARGET:-13.0}"
export MACOSX_DEPLOYMENT_TARGET="${MACOSX_DEPLOYMENT_TARGET:-11.0}"

log() { printf '[build-xcframework] %s\n' "$*"; }
arch_of() { case "$1" in aarch64-*) echo arm64 ;; x86_64-*) echo x86_64 ;; esac; }
sdk_of() {
    case "$1" in
        *-ios-sim | x86_64-apple-ios) echo iphonesimulator ;;
        *-ios) echo iphoneos ;;
        *-darwin) echo macosx ;;
    esac
}
clang_target_of() {
    case "$1" in
        aarch64-apple-ios) echo "arm64-apple-ios$IPHONEOS_DEPLOYMENT_TARGET" ;;
        aarch64-apple-ios-sim) echo "arm64-apple-ios$IPHONEOS_DEPLOYMENT_TARGET-simulator" ;;
        x86_64-apple-ios) echo "x86_64-apple-ios$IPHONEOS_DEPLOYMENT_TARGET-simulator" ;;
        aarch64-apple-darwin) echo "arm64-apple-macos$MACOSX_DEPLOYMENT_TARGET" ;;
        x86_64-apple-darwin) echo "x86_64-apple-macos$MACOSX_DEPLOYMENT_TARGET" ;;
    esac
}

exports="$BUILD/exports.txt"
rm -rf "$BUILD"
mkdir -p "$BUILD/headers"
awk '$1 == "export" { print "_" $2 }' "$REPO_ROOT/scripts/mobile-symbols.txt" >"$exports"
cp "$REPO_ROOT/include/oplite.h" "$HERE/module.modulemap" "$BUILD/headers/"

# Builds one target with rustup's cargo and reduces the archive to the
# entry points with Apple's linker.
build_here() {
    local target="$1" out="$2" work
    (cd "$REPO_ROOT" && cargo rustc --profile "$PROFILE" --target "$target" -p oplite --lib \
        --crate-type staticlib --no-default-features --features static)
    work="$(mktemp -d)"
    (cd "$work" && ar x "$REPO_ROOT/target/$target/$PROFILE/liboplite.a")
    local objects=("$work"/oplite-*.o)
    [[ ${#objects[@]} == 1 ]] || { log "expected one oplite object (fat LTO) in $target's archive" >&2; exit 1; }
    xcrun ld -r -arch "$(arch_of "$target")" -exported_symbols_list "$exports" "${objects[0]}" -o "$work/oplite.o"
    xcrun strip -S "$work/oplite.o"
    xcrun libtool -static -o "$out" "$work/oplite.o"
    rm -rf "$work"
}

check() {
    local target="$1" archive="$2" defined undefined_rust
    defined="$(xcrun nm -gU "$archive" | awk 'NF >= 3 { print $3 }' | sort -u)"
    [[ $defined == "$(sort -u "$exports")" ]] \
        || { log "FAIL: $target defines $(tr '\n' ' ' <<<"$defined")instead of only the entry points" >&2; exit 1; }
    undefined_rust="$(xcrun nm -u "$archive" | grep -E '^(__R|__ZN|___rust|_rust_)' || true)"
    [[ -z $undefined_rust ]] || { log "FAIL: $target leaves Rust symbols undefined: $undefined_rust" >&2; exit 1; }
    # Apple's linker accepts it (the app supplies SQLite: here the SDK's).
    xcrun --sdk "$(sdk_of "$target")" clang -target "$(clang_target_of "$target")" -dynamiclib \
        -Wl,-all_load "$archive" -lsqlite3 -o "$BUILD/smoke-$target.dylib"
    log "$target: OK ($(stat -f %z "$archive") bytes; linked $(stat -f %z "$BUILD/smoke-$target.dylib") bytes)"
}

for target in "${TARGETS[@]}"; do
    mkdir -p "$BUILD/$target"
    if [[ -n $PREBUILT ]]; then
        cp "$PREBUILT/$target/liboplite.a" "$BUILD/$target/liboplite.a"
    else
        build_here "$target" "$BUILD/$target/liboplite.a"
    fi
    check "$target" "$BUILD/$target/liboplite.a"
done

# One library per platform: the simulator and macOS slices are fat.
mkdir -p "$BUILD/ios-simulator"
xcrun lipo -create "$BUILD/aarch64-apple-ios-sim/liboplite.a" "$BUILD/x86_64-apple-ios/liboplite.a" \
    -output "$BUILD/ios-simulator/liboplite.a"
args=(-library "$BUILD/aarch64-apple-ios/liboplite.a" -headers "$BUILD/headers"
      -library "$BUILD/ios-simulator/liboplite.a" -headers "$BUILD/headers")
if [[ $MACOS == 1 ]]; then
    mkdir -p "$BUILD/macos"
    xcrun lipo -create "$BUILD/aarch64-apple-darwin/liboplite.a" "$BUILD/x86_64-apple-darwin/liboplite.a" \
        -output "$BUILD/macos/liboplite.a"
    args+=(-library "$BUILD/macos/liboplite.a" -headers "$BUILD/headers")
fi
xcodebuild -create-xcframework "${args[@]}" -output "$BUILD/Oplite.xcframework"
(cd "$BUILD" && ditto -c -k --sequesterRsrc --keepParent Oplite.xcframework Oplite.xcframework.zip)
log "done: $BUILD/Oplite.xcframework and Oplite.xcframework.zip"
log "SwiftPM checksum of the zip: $(cd "$HERE" && swift package compute-checksum build/Oplite.xcframework.zip)"
