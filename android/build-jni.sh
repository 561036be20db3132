#!/usr/bin/env bash
# Builds oplite's loadable extension, liboplite.so, for Android with
# cargo-ndk and lays it out for the AAR:
#   <out>/jniLibs/<abi>/liboplite.so                 packaged as the AAR's jni/
#   <out>/prefab/prefab.json, modules/oplite/...    packaged as the AAR's prefab/
# and checks every .so with check-so.sh (16 KB LOAD alignment, SONAME, exactly
# the two entry points exported, no dependency on a libsqlite3.so).
#
# Needs, on the machine that runs it: the Android NDK (r23 or newer; r28+
# aligns to 16 KB by default, the flag below does it for older ones), found
# by cargo-ndk through ANDROID_NDK_HOME or ANDROID_HOME/ndk; cargo-ndk 4
# (`cargo install cargo-ndk`); rustup with the four Android targets
# (`rustup target add aarch64-linux-android armv7-linux-androideabi
# x86_64-linux-android i686-linux-android`). Gradle runs it as
# :oplite:cargoBuild; it also runs alone:
#   android/build-jni.sh android/oplite/build/rust
#
# Environment:
#   OPLITE_ANDROID_ABIS     comma-separated ABIs (default: all four)
#   OPLITE_ANDROID_API      minimum API level to link against (default: 23)
#   OPLITE_ANDROID_PROFILE  cargo profile (default: mobile, as the static libraries)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$HERE/.." && pwd)"
[[ $# -eq 1 ]] || { echo "usage: $0 <output dir>" >&2; exit 2; }
mkdir -p "$1"
OUT="$(cd "$1" && pwd)"
ABIS="${OPLITE_ANDROID_ABIS:-arm64-v8a,armeabi-v7a,x86_64,x86}"
API="${OPLITE_ANDROID_API:-23}"
PROFILE="${OPLITE_ANDROID_PROFILE:-mobile}"
TARGET_DIR="${CARGO_TARGET_DIR:-$REPO_ROOT/target/android}"

triple_of() {
    case "$1" in
        arm64-v8a) echo aarch64-linux-android ;;
        armeabi-v7a) echo armv7-linux-androideabi ;;
        x86_64) echo x86_64-linux-android ;;
        x86) echo i686-linux-android ;;
        *) echo "unknown ABI $1" >&2; exit 2 ;;
    esac
}

command -v cargo-ndk >/dev/null || { echo "cargo-ndk not found: cargo install cargo-ndk" >&2; exit 1; }
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$REPO_ROOT/Cargo.toml" | head -n1)"

rm -rf "$OUT/jniLibs" "$OUT/prefab"
module="$OUT/prefab/modules/oplite"
mkdir -p "$OUT/jniLibs" "$module/include"
cp "$REPO_ROOT/include/oplite.h" "$module/include/"
printf '{\n  "schema_version": 2,\n  "name": "oplite",\n  "version": "%s",\n  "dependencies": []\n}\n' "$version" >"$OUT/prefab/prefab.json"
printf '{\n  "export_libraries": [],\n  "library_name": "liboplite"\n}\n' >"$module/module.json"

# The NDK cargo-ndk uses (ANDROID_NDK_HOME, else the newest under
# ANDROID_HOME/ndk), for the "ndk" field of prefab's abi.json.
ndk_dir="${ANDROID_NDK_HOME:-}"
if [[ -z $ndk_dir && -n ${ANDROID_HOME:-} ]]; then
    ndk_dir="$(ls -d "$ANDROID_HOME"/ndk/*/ 2>/dev/null | sort -V | tail -n1)"
fi
ndk_major="$(sed -n 's/^Pkg.Revision *= *\([0-9]*\).*/\1/p' "${ndk_dir:-/nonexistent}/source.properties" 2>/dev/null || true)"
[[ -n $ndk_major ]] || { echo "[build-jni] cannot find the NDK: set ANDROID_NDK_HOME or ANDROID_HOME" >&2; exit 1; }

cd "$REPO_ROOT"
IFS=, read -r -a abis <<<"$ABIS"
for abi in "${abis[@]}"; do
    triple="$(triple_of "$abi")"
    echo "[build-jni] $abi ($triple, API $API, profile $PROFILE)"
    # `cargo rustc --crate-type cdylib` links the .so alone, with the feature
    # `loadable` (as loadable/ builds the host's; this build needs the root
    # workspace's `mobile` profile); the flags after `--` reach only that
    # final link: 16 KB pages (Android 15+ devices with 16 KB pages refuse
    # anything less) and a SONAME, so that SQLite's dlopen("liboplite.so")
    # finds the copy System.loadLibrary loaded.
    CARGO_TARGET_DIR="$TARGET_DIR" cargo ndk --target "$abi" --platform "$API" \
        rustc --profile "$PROFILE" --package oplite --lib --crate-type cdylib \
        --no-default-features --features loadable -- \
        -C link-arg=-Wl,-z,max-page-size=16384 -C link-arg=-Wl,-soname,liboplite.so
    so="$TARGET_DIR/$triple/$PROFILE/liboplite.so"
    mkdir -p "$OUT/jniLibs/$abi" "$module/libs/android.$abi"
    cp "$so" "$OUT/jniLibs/$abi/liboplite.so"
    cp "$so" "$module/libs/android.$abi/liboplite.so"
    printf '{\n  "abi": "%s",\n  "api": %s,\n  "ndk": %s,\n  "stl": "none",\n  "static": false\n}\n' \
        "$abi" "$API" "$ndk_major" >"$module/libs/android.$abi/abi.json"
    bash "$HERE/check-so.sh" "$OUT/jniLibs/$abi/liboplite.so"
done
echo "[build-jni] done: $OUT/jniLibs and $OUT/prefab"
