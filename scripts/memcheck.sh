#!/usr/bin/env bash
# Runs a subset of oplite's integration tests under valgrind memcheck: the
# tests that push hostile input through powersync_control (bad input, the
# seeded fuzz bodies), the golden traces, migrations and upgrades, and
# connections closed after sessions (the statement cache freed). memcheck
# sees the whole process, SQLite's C code and the FFI boundary included,
# with no special build: it reuses the debug test binaries.
#
#   scripts/memcheck.sh            # the CI subset
#   OPLITE_FUZZ_ITERS=20000 scripts/memcheck.sh   # more fuzz inputs
#
# Fails on any invalid read or write, use of uninitialised memory, or
# definite leak.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { apt-get install -y valgrind >/dev/null 2>&1 || { echo "valgrind is required"; exit 1; }; }

tests=(bad_input bad_input_table golden init upgrade fuzz connection_close)
args=()
for t in "${tests[@]}"; do args+=(--test "$t"); done
mapfile -t bins < <(cargo test -p oplite "${args[@]}" --no-run \
  --message-format=json 2>/dev/null | grep -o '"executable":"[^"]*"' | cut -d'"' -f4)
[[ ${#bins[@]} -eq ${#tests[@]} ]] || { echo "expected ${#tests[@]} test binaries, got ${#bins[@]}"; exit 1; }

export OPLITE_FUZZ_ITERS=${OPLITE_FUZZ_ITERS:-1000}
for bin in "${bins[@]}"; do
  name=$(basename "$bin")
  skip=()
  # The 16 MB and 20,000-op lines take minutes under memcheck; the other
  # bad-input rows run.
  [[ $name == bad_input_table-* ]] && skip=(--skip huge_lines)
  echo "memcheck: ${name%-*}"
  set +e
  valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
    --show-leak-kinds=definite --track-origins=no \
    "$bin" --test-threads=2 -q "${skip[@]}" 2>&1 | sed -e '/^$/d' -e 's/^/  /'
  rc=${PIPESTATUS[0]}
  set -e
  [[ $rc -eq 0 ]] || { echo "memcheck failed for $name (exit $rc)"; exit 1; }
done
echo "memcheck: ${#bins[@]} test binaries clean"
