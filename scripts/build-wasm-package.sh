#!/usr/bin/env bash
# Builds the web package: wasm/ (crate oplite-wasm) for wasm32-unknown-unknown,
# then wasm-bindgen, then the JS API, into wasm/pkg/:
#   oplite.js / oplite.d.ts        the API apps import
#   oplite_wasm.js, *_bg.wasm      the module wasm-bindgen generated
# and the PowerSync web SDK adapter (wasm/powersync-web/ with the module
# beside it) into wasm/pkg-powersync-web/ (@oplite/powersync-web).
# Installs what it needs (the Debian rustc-web toolchain, wasm-bindgen-cli of
# the exact version in Cargo.lock) and skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/build-wasm.sh oplite-wasm

version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [[ "$have" != "$version" ]]; then
  echo "[build-wasm-package] installing wasm-bindgen-cli $version (found: ${have:-none})"
  cargo install wasm-bindgen-cli --version "$version"
fi

wasm=target/wasm/wasm32-unknown-unknown/release/oplite_wasm.wasm
rm -rf wasm/pkg
wasm-bindgen --target web --out-dir wasm/pkg "$wasm"
cp wasm/js/{oplite.js,oplite.d.ts,apply-pacing.js,idb-store.js,storage.js} wasm/pkg/
cat > wasm/pkg/package.json <<JSON
{
  "name": "oplite-wasm",
  "version": "$(awk -F'"' '/^version = / { print $2; exit }' Cargo.toml)",
  "description": "oplite (PowerSync-compatible sync engine) and SQLite in one WebAssembly module",
  "type": "module",
  "main": "oplite.js",
  "types": "oplite.d.ts",
  "files": ["oplite.js", "oplite.d.ts", "apply-pacing.js", "idb-store.js", "storage.js", "oplite_wasm.js", "oplite_wasm.d.ts", "oplite_wasm_bg.wasm", "oplite_wasm_bg.wasm.d.ts"],
  "license": "Apache-2.0"
}
JSON
rm -rf wasm/pkg-powersync-web
mkdir -p wasm/pkg-powersync-web
cp wasm/powersync-web/{index.js,index.d.ts,connection.js,tabs.js,slots.js,line-batch.js,sql-shapes.js,oplite-worker.js,oplite-host.js,adoption.js,sdk-storage.js,package.json} wasm/pkg-powersync-web/
cp wasm/pkg/{oplite.js,oplite.d.ts,apply-pacing.js,idb-store.js,storage.js,oplite_wasm.js,oplite_wasm.d.ts,oplite_wasm_bg.wasm,oplite_wasm_bg.wasm.d.ts} wasm/pkg-powersync-web/
# Both packages carry the workspace's version (scripts/package.sh names the
# tarballs after it, and examples/web installs them by name).
crate_version=$(awk -F'"' '/^version = / { print $2; exit }' Cargo.toml)
adapter_version=$(node -p 'require("./wasm/powersync-web/package.json").version')
if [[ $adapter_version != "$crate_version" ]]; then
  echo "[build-wasm-package] wasm/powersync-web/package.json has version $adapter_version, the workspace $crate_version: make them agree" >&2
  exit 1
fi
raw=$(stat -c %s wasm/pkg/oplite_wasm_bg.wasm)
gz=$(gzip -9 -c wasm/pkg/oplite_wasm_bg.wasm | wc -c)
echo "[build-wasm-package] wasm/pkg/oplite_wasm_bg.wasm: $raw bytes, $gz gzip -9"
