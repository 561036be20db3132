#!/usr/bin/env bash
# oplite inside SQLite builds that encrypt (docs/mobile.md, "Encrypted
# databases"): cipher/'s tests on rusqlite's bundled SQLCipher (the static
# registration through the oplite host's library, and liboplite.so's entry
# point), then cipher/multiple_ciphers.py on SQLite3MultipleCiphers
# (PyPI's apsw-sqlite3mc) loading liboplite.so. Installs what it needs:
#   - Debian's libssl-dev (SQLCipher's crypto) and pkg-config, when missing
#   - a virtual environment target/cipher-venv with apsw-sqlite3mc
# Needs liboplite.so: $OPLITE_SO, or target/release/liboplite.so (built
# here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

[[ -f /usr/include/openssl/evp.h ]] && command -v pkg-config >/dev/null || apt_install libssl-dev pkg-config
export OPLITE_SO=${OPLITE_SO:-$PWD/target/release/liboplite.so}
[[ -f $OPLITE_SO ]] || cargo build --release --locked --manifest-path loadable/Cargo.toml

echo "--- SQLCipher (rusqlite's bundled-sqlcipher)"
cargo test --locked --manifest-path cipher/Cargo.toml

echo "--- SQLite3MultipleCiphers (apsw-sqlite3mc)"
venv=target/cipher-venv
if [[ ! -x $venv/bin/python ]]; then
  python3 -m venv "$venv" || { apt_install python3-venv && python3 -m venv "$venv"; }
fi
"$venv/bin/pip" install -q apsw-sqlite3mc==3.54.0.0
"$venv/bin/python" cipher/multiple_ciphers.py "$OPLITE_SO"
