#!/usr/bin/env bash
# Checks that the repository stands alone: no tracked file names a relative
# path that leaves it, and a clone with nothing beside it fetches the
# reference core from scratch (download and checksum) and runs tests that
# find their files through the repository (the reference core, SQL, test
# data). Run by scripts/test.sh; builds in target/standalone, so the
# clone's binaries never replace the work tree's.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# Every `../name` in a tracked text file, resolved from the file's folder
# (and from the root, for commands run there): neither may leave the tree.
python3 - <<'PY'
import os, re, subprocess, sys
root = os.getcwd()
files = subprocess.run(["git", "ls-files", "-z"], capture_output=True, check=True).stdout.decode().split("\0")
pattern = re.compile(r"(?:\.\./)+[A-Za-z_][\w.-]*")
bad = []
for name in filter(None, files):
    try:
        text = open(name, encoding="utf-8").read()
    except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
        continue
    for match in pattern.finditer(text):
        rel = match.group(0)
        bases = [os.path.dirname(os.path.join(root, name)), root]
        if all(os.path.relpath(os.path.normpath(os.path.join(b, rel)), root).startswith("..") for b in bases):
            line = text.count("\n", 0, match.start()) + 1
            bad.append(f"{name}:{line}: {rel}")
if bad:
    print("tracked files name paths outside the repository:", *bad, sep="\n  ", file=sys.stderr)
    sys.exit(1)
PY

clone=$(mktemp -d)
cache=$(mktemp -d)
trap 'rm -rf "$clone" "$cache"' EXIT
git clone -q --no-local "$root" "$clone/oplite"
cd "$clone/oplite"

# The 0.5.3 download into an empty cache; the 0.5.4 build is the one
# test.sh made (a fresh build takes minutes), its lock file checked below.
REFERENCE_CORE_053=$(REFERENCE_CORE_CACHE="$cache" bash scripts/reference-core.sh 0.5.3)
echo "reference core 0.5.3 downloaded and checked: $REFERENCE_CORE_053"
REFERENCE_CORE=${REFERENCE_CORE:-$(bash scripts/reference-core.sh 0.5.4)}
export REFERENCE_CORE REFERENCE_CORE_053
cargo metadata -q --locked --format-version 1 --manifest-path reference-core/Cargo.toml >/dev/null
export OPLITE_SO="$root/target/release/liboplite.so"
# The loadable extension's workspace resolves from its committed lock file
# alone (the build phase builds it with --locked in the work tree).
cargo metadata -q --locked --format-version 1 --manifest-path loadable/Cargo.toml >/dev/null
# The clone's own tests: the upload-queue differential (the reference core)
# and the CLI against the loopback service (recorded sessions in test-data/).
CARGO_TARGET_DIR="$root/target/standalone" cargo test -q -p oplite --test upload_queue
CARGO_TARGET_DIR="$root/target/standalone" cargo test -q -p oplite-cli --test end_to_end
echo "standalone clone: ok"
