#!/usr/bin/env bash
# The Rust SDK drop-in test (docs/rust-sdk.md): the scenario of
# clients/rust on the official powersync 0.2.0 crate, built once on the
# reference core 0.5.4 from crates.io (clients/rust/reference, with the
# Rust 1.96 that crate needs) and once on oplite through the [patch] crate
# (clients/rust), each run against a fresh loopback service in each
# checkpoint mode and schema, compared by clients/rust/run.mjs. The SDK's
# bindings generator needs libclang, installed here when missing.
# Usage: bash scripts/test-rust-sdk.sh [run.mjs options, e.g. --rows N]
# (OPLITE_TEST_SERVER may name a built oplite-test-server, else it is built)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_libclang
server=${OPLITE_TEST_SERVER:-}
if [[ -z $server ]]; then
  cargo build --release --locked -p oplite-test-server
  server=$PWD/target/release/oplite-test-server
fi
echo "--- building the scenario on oplite (clients/rust)"
cargo build --locked --manifest-path clients/rust/Cargo.toml
echo "--- building the scenario on the reference core 0.5.4 (clients/rust/reference)"
cargo_196=$(rust_196)
$cargo_196 build --locked --manifest-path clients/rust/reference/Cargo.toml --target-dir target/rust-sdk-reference
OPLITE_TEST_SERVER=$server node clients/rust/run.mjs \
  --reference target/rust-sdk-reference/debug/rust-drop-in-reference --oplite target/debug/rust-drop-in "$@"
