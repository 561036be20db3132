#!/usr/bin/env bash
# Coverage-guided fuzzing of oplite with libFuzzer (fuzz/), on rustup's
# stable toolchain: RUSTC_BOOTSTRAP=1 enables the -Z flags cargo-fuzz would
# pass, so neither nightly nor cargo-fuzz is needed (with cargo-fuzz
# installed, `RUSTC_BOOTSTRAP=1 cargo fuzz run <target>` works the same).
#
#   scripts/fuzz.sh [seconds per target] [target...]
#
# Targets: parse_text parse_binary bson control schema. The seed corpus is copied
# from test-data/fuzz/<target>/ into target/fuzz-corpus/<target>/, which
# keeps what libFuzzer finds between runs; crashes go to
# target/fuzz-artifacts/<target>/. OPLITE_FUZZ_ASAN=0 builds without
# AddressSanitizer (faster; Rust's own checks still catch panics).
# OPLITE_FUZZ_JOBS (default 2) targets run at once.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(parse_text parse_binary bson control schema)
root=$PWD
host=$(rustc -vV | sed -n 's/^host: //p')

flags="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
flags+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table"
flags+=" -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
if [[ ${OPLITE_FUZZ_ASAN:-1} != 0 ]]; then
  flags+=" -Zsanitizer=address"
fi
echo "building fuzz targets ($host)"
(cd fuzz && RUSTC_BOOTSTRAP=1 RUSTFLAGS="$flags" cargo build --release --target "$host" --bins \
  --target-dir "$root/target/fuzz-build")

# Two targets at a time (one per core); each writes its summary line to
# a file, printed in target order at the end.
jobs=${OPLITE_FUZZ_JOBS:-2}
results=$root/target/fuzz-artifacts/results
rm -rf "$results" && mkdir -p "$results"
fuzz_one() {
  local target=$1
  local corpus=$root/target/fuzz-corpus/$target
  local artifacts=$root/target/fuzz-artifacts/$target/
  mkdir -p "$corpus" "$artifacts"
  cp -n test-data/fuzz/"$target"/* "$corpus"/ 2>/dev/null || true
  local log=$root/target/fuzz-artifacts/$target.log
  # -rss_limit_mb and -malloc_limit_mb catch leaks and runaway allocations,
  # -timeout catches hangs.
  "$root/target/fuzz-build/$host/release/$target" "$corpus" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -max_len=65536 -artifact_prefix="$artifacts" -print_final_stats=1 >"$log" 2>&1 || {
      tail -40 "$log"; echo "fuzz target $target failed"; return 1; }
  local runs cov
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  echo "$target: $runs executions, $cov, no crash" >"$results/$target"
}
for target in "${targets[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do
    wait -n || true
  done
  echo "fuzzing $target for ${seconds}s"
  fuzz_one "$target" &
done
wait || true
# A target passed only if it wrote its summary line.
bad=0
for target in "${targets[@]}"; do
  [[ -f $results/$target ]] || { echo "fuzz target $target did not finish cleanly"; bad=$((bad + 1)); }
done
echo "fuzz: $((${#targets[@]} - bad)) passed, $bad failed"
((bad == 0)) || exit 1
summary=()
for target in "${targets[@]}"; do
  summary+=("$(cat "$results/$target")")
done
printf '%s\n' "${summary[@]}"
