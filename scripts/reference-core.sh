#!/usr/bin/env bash
# Prints the path of the reference core: the PowerSync SQLite core 0.5.3 as
# shipped in the npm package @powersync/node 1.1.0 (lib/libpowersync_x64.linux.so,
# entry point sqlite3_powersync_init). The first call downloads the package
# with `npm pack`, checks the library's SHA-256 and caches it; later calls
# only print the path. The differential tests and the benchmarks use it; the
# binary is never committed.
#   usage: REFERENCE_CORE=$(bash scripts/reference-core.sh)
# Environment: REFERENCE_CORE_CACHE, a folder to cache the library in
# (default: $XDG_CACHE_HOME or ~/.cache, then oplite-reference/<version>).
set -euo pipefail
version=1.1.0
sha256=a6de0c79151ad6243ca18633f0df10bed32b692095fdf0f01ebdac6eb01d2edf
member=package/lib/libpowersync_x64.linux.so
cache=${REFERENCE_CORE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/oplite-reference/$version}
so=$cache/libpowersync_x64.linux.so

verify() { [[ $(sha256sum "$1" | cut -d' ' -f1) == "$sha256" ]]; }

if [[ -s $so ]] && verify "$so"; then
  echo "$so"
  exit 0
fi
command -v npm >/dev/null || { echo "reference-core.sh: npm is required to download @powersync/node" >&2; exit 1; }
mkdir -p "$cache"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@powersync/node@$version" >/dev/null)
tar -xzf "$tmp/powersync-node-$version.tgz" -C "$tmp" "$member"
if ! verify "$tmp/$member"; then
  echo "reference-core.sh: $member in @powersync/node@$version has SHA-256 $(sha256sum "$tmp/$member" | cut -d' ' -f1), expected $sha256" >&2
  exit 1
fi
mv "$tmp/$member" "$so"
echo "$so"
