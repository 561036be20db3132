#!/usr/bin/env bash
# Builds the Rust todo app (the PowerSync Rust SDK with oplite through the
# `[patch.crates-io]` entry) and runs it against the loopback test service:
# first sync, a local todo uploaded through the connector, and the service's
# copy synced back. The SDK's bindings generator needs libclang (Debian's
# libclang-dev), installed here when missing.
# Usage: bash examples/rust/test.sh   (from anywhere; OPLITE_TEST_SERVER may
# name a built oplite-test-server, else it is built)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
source "$root/scripts/lib.sh"
ensure_libclang
server=${OPLITE_TEST_SERVER:-}
if [[ -z $server ]]; then
  cargo build --release --locked --manifest-path "$root/Cargo.toml" -p oplite-test-server
  server=$root/target/release/oplite-test-server
fi
cargo build --locked --manifest-path "$here/Cargo.toml"
work=$(mktemp -d)
"$server" --shape two-tables --ops 2000 >"$work/server.out" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do grep -q 'listening on' "$work/server.out" && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' "$work/server.out" | head -n 1)
timeout 180 "$root/target/debug/oplite-rust-todo" --endpoint "$url" --dev-token --db "$work/todos.db" | tee "$work/app.out"
grep -q '^core 0\.5\.4/' "$work/app.out"
grep -q 'is on the service and synced back' "$work/app.out"
