#!/usr/bin/env bash
# Prints the path of a reference core, the PowerSync SQLite core oplite is
# compared with (entry point sqlite3_powersync_init):
#   0.5.4 (the default): built from its published crates.io source by the
#     shell crate in reference-core/, as the core's own loadable build does
#     (SQLite's allocator, panic = "abort", opt-level "z"). It needs Rust
#     1.96: Debian's rustc-web (installed with apt-get as root or sudo when
#     missing, as for the WASM build) or a rustup nightly.
#   0.5.3: lib/libpowersync_x64.linux.so of the npm package @powersync/node
#     1.1.0, the core the JS SDKs bundle, downloaded with `npm pack` and
#     checked against its SHA-256.
# The first call builds or downloads it into the cache; later calls only
# print the path. The binaries are never committed.
#   usage: REFERENCE_CORE=$(bash scripts/reference-core.sh [0.5.4|0.5.3])
# Environment: REFERENCE_CORE_CACHE, a folder to cache the library in
# (default: $XDG_CACHE_HOME or ~/.cache, then oplite-reference/<version>).
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-0.5.4}
cache=${REFERENCE_CORE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/oplite-reference/$version}

fetch_053() {
  local npm_version=1.1.0 member=package/lib/libpowersync_x64.linux.so
  local sha256=a6de0c79151ad6243ca18633f0df10bed32b692095fdf0f01ebdac6eb01d2edf
  local so=$cache/libpowersync_x64.linux.so
  verify() { [[ $(sha256sum "$1" | cut -d' ' -f1) == "$sha256" ]]; }
  if [[ -s $so ]] && verify "$so"; then echo "$so"; return; fi
  command -v npm >/dev/null || { echo "reference-core.sh: npm is required to download @powersync/node" >&2; exit 1; }
  mkdir -p "$cache"
  # Global, not local: the EXIT trap runs after this function has returned.
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "@powersync/node@$npm_version" >/dev/null)
  tar -xzf "$tmp/powersync-node-$npm_version.tgz" -C "$tmp" "$member"
  if ! verify "$tmp/$member"; then
    echo "reference-core.sh: $member in @powersync/node@$npm_version has SHA-256 $(sha256sum "$tmp/$member" | cut -d' ' -f1), expected $sha256" >&2
    exit 1
  fi
  mv "$tmp/$member" "$so"
  echo "$so"
}

build_054() {
  # The cache is keyed by the shell crate's files, so a change rebuilds.
  local key so
  key=$(cat reference-core/Cargo.toml reference-core/Cargo.lock reference-core/build.rs reference-core/src/lib.rs | sha256sum | cut -c1-16)
  so=$cache/$key/libpowersync.so
  if [[ -s $so ]]; then echo "$so"; return; fi
  source scripts/lib.sh
  ensure_libclang
  apt_ensure cc:gcc
  local cargo
  cargo=$(rust_196)
  mkdir -p "$cache/$key"
  echo "reference-core.sh: building powersync_core 0.5.4 from crates.io with $($cargo --version)" >&2
  $cargo build --release --locked --manifest-path reference-core/Cargo.toml --target-dir "$cache/target" >&2
  cp "$cache/target/release/libpowersync.so" "$so.tmp"
  mv "$so.tmp" "$so"
  echo "$so"
}

case $version in
  0.5.3) fetch_053 ;;
  0.5.4) build_054 ;;
  *) echo "reference-core.sh: no reference core $version (0.5.4 or 0.5.3)" >&2; exit 2 ;;
esac
