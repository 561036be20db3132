#!/usr/bin/env bash
# Cross-builds oplite's static library (`--no-default-features --features
# static`) for the Android and iOS targets with Debian's rustc-web and std
# built from source (-Zbuild-std; no NDK or Xcode needed: a static library
# is an archive of objects, nothing is linked), hides every symbol but the
# public ones, and checks each result with scripts/check-mobile-lib.sh.
#
# Usage: scripts/build-mobile.sh [target...]     (default: all seven)
#   Android: aarch64-linux-android armv7-linux-androideabi
#            x86_64-linux-android i686-linux-android
#   iOS:     aarch64-apple-ios aarch64-apple-ios-sim x86_64-apple-ios
#   Any other triple the recipe supports works too (the ARM64 C test uses
#   aarch64-unknown-linux-gnu).
#
# Output: target/mobile/dist/<target>/liboplite.a and
# target/mobile/dist/sizes.md. Intermediate files stay in target/mobile
# (its own target dir; std is built once per target, later runs are
# incremental).
#
# Environment:
#   OPLITE_MOBILE_PROFILE  cargo profile (default: mobile, see Cargo.toml)
#
# The post-processing, per archive (see scripts/mobile-symbols.txt for why):
#   1. the LTO object (all Rust code): `llvm-objcopy --keep-global-symbols`
#      with the `export` and `merged` names (the public entry points, and
#      DW.ref.rust_eh_personality to merge with a Rust app's own), so
#      rust_eh_personality and the like become local; debug info is
#      stripped;
#   2. compiler_builtins is dropped: the few intrinsics oplite calls on
#      32-bit targets (`runtime` lines of mobile-symbols.txt; an unlisted
#      one fails the build) come from the platform's compiler-rt and libm,
#      as for C code;
#   3. any other member is an error (the profile must keep fat LTO).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$SCRIPT_DIR/lib.sh"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
PROFILE="${OPLITE_MOBILE_PROFILE:-mobile}"
TARGET_DIR="$REPO_ROOT/target/mobile"
DIST="$TARGET_DIR/dist"
ALL_TARGETS=(
    aarch64-linux-android armv7-linux-androideabi x86_64-linux-android i686-linux-android
    aarch64-apple-ios aarch64-apple-ios-sim x86_64-apple-ios
)
if [[ $# -gt 0 ]]; then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi

"$SCRIPT_DIR/install-mobile-toolchain.sh"

log() { printf '[build-mobile] %s\n' "$*"; }

exports_file() { # <prefix> -> file with the names that stay global, Mach-O prefixed
    local out="$1"
    awk -v p="$2" '$1 == "export" || $1 == "merged" { print p $2 }' "$SCRIPT_DIR/mobile-symbols.txt" >"$out"
}

# Compiles scripts/rust-link-probe.rs into a static library for <target>
# with the std that cargo built for it in this build (no LTO: Rust objects
# as an app's build leaves them), for check-mobile-lib.sh's Rust link.
rust_probe() {
    local target="$1" profile_dir="$TARGET_DIR/$1/$PROFILE" out="$TARGET_DIR/$1/rust-link-probe"
    local std
    std=$(ls "$profile_dir"/deps/libstd-*.rlib 2>/dev/null | head -n 1)
    [[ -n $std ]] || { log "error: no std built for $target in $profile_dir/deps" >&2; exit 1; }
    mkdir -p "$out"
    env RUSTC_BOOTSTRAP=1 /usr/bin/rustc --edition 2021 --target "$target" --crate-type staticlib \
        --crate-name rust_link_probe -C panic=unwind -C opt-level=1 \
        -L "$profile_dir/deps" --extern "std=$std" \
        -o "$out/librust_link_probe.a" "$SCRIPT_DIR/rust-link-probe.rs"
    echo "$out/librust_link_probe.a"
}

# Rewrites one cargo-built archive into dist/<target>/liboplite.a.
postprocess() {
    local target="$1" raw="$2" out="$3"
    local work prefix="" bitcode=(--remove-section=.llvmbc --remove-section=.llvmcmd) arfmt=gnu
    if [[ $target == *-apple-* ]]; then
        prefix=_
        bitcode=(--remove-section=__LLVM,__bitcode --remove-section=__LLVM,__cmdline --remove-section=__LLVM,__asm)
        arfmt=darwin
    fi
    work="$(mktemp -d)"
    (
        cd "$work"
        mkdir members
        (cd members && llvm-ar-22 x "$raw")
        exports_file exports.txt "$prefix"
        local main="" builtins=() member
        for member in members/*; do
            case "$(basename "$member")" in
                oplite-*.o) [[ -z $main ]] || { log "error: two oplite objects in $raw (is LTO off?)" >&2; exit 1; }
                    main="$member" ;;
                compiler_builtins-*.o) builtins+=("$member") ;; # one per codegen unit
                *) log "error: unexpected member $(basename "$member") in $raw; the profile must use fat LTO" >&2; exit 1 ;;
            esac
        done
        [[ -n $main ]] || { log "error: no oplite object in $raw" >&2; exit 1; }
        llvm-objcopy-22 --keep-global-symbols=exports.txt --strip-debug "${bitcode[@]}" "$main" oplite.o
        # compiler_builtins is dropped; what oplite calls in it must be a
        # `runtime` name of mobile-symbols.txt, which the platform supplies.
        llvm-nm-22 --no-llvm-bc -u --format=just-symbols oplite.o | sed "s/^$prefix//" | sort -u >called.txt
        awk '$1 == "runtime" { print $2 }' "$SCRIPT_DIR/mobile-symbols.txt" | sort -u >runtime.txt
        for member in "${builtins[@]}"; do
            llvm-nm-22 --no-llvm-bc --defined-only --extern-only --format=just-symbols "$member" \
                | sed "s/^$prefix//" | sort -u | comm -12 - called.txt >needed.txt
            if [[ -s needed.txt ]]; then
                log "$target: oplite calls $(wc -l <needed.txt) runtime symbol(s), left to the platform: $(tr '\n' ' ' <needed.txt)"
            fi
            if comm -23 needed.txt runtime.txt | grep . >unknown.txt; then
                log "error: $target: oplite calls $(tr '\n' ' ' <unknown.txt)from compiler_builtins, not listed as" \
                    "\`runtime\` in scripts/mobile-symbols.txt; check the platform provides them, then add them" >&2
                exit 1
            fi
        done
        rm -f "$out"
        llvm-ar-22 rcs --format="$arfmt" "$out" oplite.o
    )
    rm -rf "$work"
}

mkdir -p "$DIST"
cd "$REPO_ROOT"
total_start=$SECONDS
for target in "${TARGETS[@]}"; do
    start=$SECONDS
    log "building $target (profile $PROFILE)"
    # `cargo rustc --crate-type staticlib` builds the static library (the
    # crate itself is an rlib only), with fat LTO and no platform linker.
    debian_cargo \
        CARGO_TARGET_DIR="$TARGET_DIR" \
        -- rustc \
            --profile "$PROFILE" \
            -Zbuild-std=std,panic_unwind \
            --target "$target" \
            -p oplite --lib --crate-type staticlib \
            --no-default-features --features static
    raw="$TARGET_DIR/$target/$PROFILE/liboplite.a"
    mkdir -p "$DIST/$target"
    postprocess "$target" "$raw" "$DIST/$target/liboplite.a"
    log "$target: built in $((SECONDS - start))s"
    bash "$SCRIPT_DIR/check-mobile-lib.sh" "$DIST/$target/liboplite.a" "$target" --raw "$raw" \
        --sizes "$DIST/sizes-$target.txt" --rust-probe "$(rust_probe "$target")"
    # scripts/test.sh sets this: a target's build (std included, ~200 MB)
    # is not needed once its archive is in dist/.
    if [[ -n ${OPLITE_MOBILE_DROP_BUILDS:-} ]]; then rm -rf "${TARGET_DIR:?}/$target"; fi
done

{
    echo "| target | cargo's archive | shipped archive | linked into a shared library, stripped |"
    echo "|---|---:|---:|---:|"
    for target in "${ALL_TARGETS[@]}" "${TARGETS[@]}"; do
        if [[ -f $DIST/sizes-$target.txt ]]; then cat "$DIST/sizes-$target.txt"; fi
    done | awk '!seen[$0]++'
} >"$DIST/sizes.md"
log "all done in $((SECONDS - total_start))s; sizes (profile $PROFILE, bytes):"
cat "$DIST/sizes.md"
# One check per archive built and checked (a failure has exited above).
echo "mobile: ${#TARGETS[@]} passed, 0 failed"
