#!/usr/bin/env bash
# The README's main command: builds the `oplite` command-line host and runs
# `oplite demo`. Extra arguments are passed to the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "cargo is required (rustup's stable toolchain)"; exit 1; }
cargo build --release -p oplite-cli
exec target/release/oplite demo "$@"
