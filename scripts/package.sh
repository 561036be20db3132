#!/usr/bin/env bash
# Writes dist/: everything oplite ships, ready to install without building.
#
#   scripts/package.sh             # build the native artefacts if needed, then package
#   scripts/package.sh --no-build  # package only what is already built
#
#   dist/lib/liboplite.so          the loadable extension (entry points
#                                  sqlite3_oplite_init, sqlite3_powersync_init)
#   dist/include/oplite.h          the C header of the static builds
#   dist/bin/oplite                the command-line host
#   dist/bin/oplite-test-server    the loopback test service
#   dist/npm/oplite-wasm-V.tgz             the web package, for `npm install`
#   dist/npm/oplite-powersync-web-V.tgz    the web SDK adapter, for `npm install`
#   dist/mobile/<target>/liboplite.a       the mobile static libraries
#   dist/docs/oplite-wasm/index.html           API reference of oplite-wasm
#   dist/docs/oplite-powersync-web/index.html  API reference of @oplite/powersync-web
#   dist/SHA256SUMS
#
# The native artefacts are built with cargo as an ordinary user. The two npm
# tarballs need the web package, which scripts/build-wasm-package.sh builds
# (it installs a browser Rust toolchain as root, see docs/web.md); the mobile
# libraries need scripts/build-mobile.sh. What is not built is left out and
# said so, and the script still succeeds: dist/ holds what there is.
# The API references are rendered from the packages' .d.ts files by TypeDoc
# (wasm/reference/, which pins it; npm ci there when it is missing), with
# every warning an error: a reference that does not render fails the script.
# Only without Node.js are they left out.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

build=1
case "${1:-}" in
  "") ;;
  --no-build) build=0 ;;
  -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "package.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
esac

if [[ $build == 1 ]]; then
  # Two commands: the loadable extension is a workspace of its own, loadable/
  # (docs/development.md, "One build").
  cargo build --release --manifest-path loadable/Cargo.toml
  cargo build --release -p oplite-cli -p oplite-test-server
fi

rm -rf dist
mkdir -p dist/lib dist/include dist/bin dist/npm
missing=()

# Copies FILE into DIR, or says what builds it.
take() {
  local file=$1 dir=$2 how=$3
  if [[ -f $file ]]; then cp "$file" "$dir/"; else missing+=("$file ($how)"); fi
}
take target/release/liboplite.so dist/lib "cargo build --release --manifest-path loadable/Cargo.toml"
take include/oplite.h dist/include "in the repository"
take target/release/oplite dist/bin "cargo build --release -p oplite-cli"
take target/release/oplite-test-server dist/bin "cargo build --release -p oplite-test-server"

for pkg in wasm/pkg wasm/pkg-powersync-web; do
  if [[ -f $pkg/package.json && -f $pkg/oplite_wasm_bg.wasm ]]; then
    npm pack --silent --pack-destination dist/npm "./$pkg" >/dev/null
  else
    missing+=("$pkg (scripts/build-wasm-package.sh)")
  fi
done

# The API references of the two web packages, from their .d.ts files (they
# need no build); TypeDoc's warnings are errors (wasm/reference/base.json).
if command -v node >/dev/null && command -v npm >/dev/null; then
  npm_ci_pinned wasm/reference >&2
  for reference in oplite-wasm powersync-web; do
    (cd wasm/reference && node node_modules/typedoc/bin/typedoc --options "$reference.json" --logLevel Warn) \
      || { echo "package.sh: the API reference $reference did not render (above)" >&2; exit 1; }
  done
else
  missing+=("dist/docs (Node.js and npm, for TypeDoc)")
fi

if compgen -G "target/mobile/dist/*/liboplite.a" >/dev/null; then
  for lib in target/mobile/dist/*/liboplite.a; do
    target=$(basename "$(dirname "$lib")")
    mkdir -p "dist/mobile/$target"
    cp "$lib" "dist/mobile/$target/"
  done
  [[ ! -f target/mobile/dist/sizes.md ]] || cp target/mobile/dist/sizes.md dist/mobile/
else
  missing+=("target/mobile/dist (scripts/build-mobile.sh)")
fi

(cd dist && find . -type f ! -name SHA256SUMS -printf '%P\n' | sort | xargs sha256sum >SHA256SUMS)
echo "dist/:"
(cd dist && find . -type f ! -path './docs/*' -printf '  %P  %s bytes\n' | sort)
for reference in dist/docs/*/; do
  [[ -d $reference ]] || continue
  echo "  ${reference#dist/}index.html  ($(find "$reference" -type f | wc -l) files)"
done
for m in "${missing[@]}"; do echo "left out: $m" >&2; done
