#!/usr/bin/env bash
# The README's main command: builds the `oplite` command-line host and runs
# `oplite demo`: an embedded loopback test service serves a generated
# 1M-op stream, oplite syncs it into oplite-demo.db (replaced on every run)
# with a progress bar, prints a summary, then uploads a local write and waits
# for the write checkpoint that confirms it. Extra arguments go to the demo
# (see `target/release/oplite demo --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "cargo is required (rustup's stable toolchain)"; exit 1; }
cargo build --release -p oplite-cli --bin oplite
exec target/release/oplite demo "$@"
