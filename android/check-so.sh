#!/usr/bin/env bash
# Checks an Android build of liboplite.so (the loadable extension):
#   - every LOAD segment is aligned to a multiple of 16 KB (0x4000; LLD's
#     default of 64 KB on arm64 also qualifies), as Android 15+ devices with
#     16 KB pages require;
#   - its SONAME is liboplite.so;
#   - it exports exactly sqlite3_oplite_init and sqlite3_powersync_init
#     (pass other names as arguments to expect those instead);
#   - it needs no libsqlite3.so and no C++ runtime: SQLite is the host's,
#     reached through the routine table load_extension passes.
# Uses llvm-readelf from the NDK if ANDROID_NDK_HOME is set, else from PATH
# (llvm-readelf or llvm-readelf-22).
# Usage: android/check-so.sh <liboplite.so> [expected export...]
set -euo pipefail

[[ $# -ge 1 ]] || { echo "usage: $0 <liboplite.so> [expected export...]" >&2; exit 2; }
so="$1"
shift
expected=("$@")
[[ ${#expected[@]} -gt 0 ]] || expected=(sqlite3_oplite_init sqlite3_powersync_init)

readelf=""
for candidate in "${ANDROID_NDK_HOME:-/nonexistent}"/toolchains/llvm/prebuilt/*/bin/llvm-readelf llvm-readelf llvm-readelf-22; do
    if command -v "$candidate" >/dev/null 2>&1; then readelf="$candidate"; break; fi
done
[[ -n $readelf ]] || { echo "[check-so] llvm-readelf not found" >&2; exit 1; }

fail() { echo "[check-so] FAIL: $so: $*" >&2; exit 1; }

aligns="$("$readelf" -l -W "$so" | awk '$1 == "LOAD" { print $NF }' | sort -u)"
[[ -n $aligns ]] || fail "no LOAD segments"
for align in $aligns; do
    (( align % 16384 == 0 )) || fail "a LOAD segment is aligned to $align, not a multiple of 16 KB"
done

dynamic="$("$readelf" -d -W "$so")"
grep -q 'SONAME.*\[liboplite\.so\]' <<<"$dynamic" || fail "SONAME is not liboplite.so"
needed="$(sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' <<<"$dynamic" | tr '\n' ' ')"
if grep -qE 'sqlite|c\+\+' <<<"$needed"; then fail "needs $needed"; fi

exports="$("$readelf" --dyn-syms -W "$so" \
    | awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && $5 != "LOCAL" && NF >= 8 { print $NF }' | sed 's/@.*//' | sort -u)"
want="$(printf '%s\n' "${expected[@]}" | sort -u)"
[[ $exports == "$want" ]] || fail "exports $(tr '\n' ' ' <<<"$exports")instead of $(tr '\n' ' ' <<<"$want")"

echo "[check-so] OK: $so: LOAD aligned to $(tr '\n' ' ' <<<"$aligns")(16 KB pages work), SONAME liboplite.so, needs ${needed:-nothing}, exports $(tr '\n' ' ' <<<"$exports")"
