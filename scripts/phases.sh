# The phase runner of scripts/test.sh (sourced, not run).
#
# A phase is one command whose output goes to its own log. The runner times
# it (wall clock and CPU), counts the checks its log reports, and prints the
# log whole once the phase ends, so that two lanes of phases running at once
# (one per core) never interleave their lines. A lane is a list of phases
# run one after another; a phase that fails skips the rest of its lane.
# `phase_summary` prints the closing table and the one closing line.
#
# What counts as a check, in a phase's log:
#   - cargo's `test result: ok. N passed; M failed; ...` lines;
#   - Node's test runner: `# pass N` / `# fail M` (TAP) or `ℹ pass N` / `ℹ fail M`;
#   - a plain `N passed, M failed` line, optionally led by one word and a
#     colon, which the project's own scripts print.
# Of the passed checks, the closing table tells three parts apart:
#   - the reference side: the ported upstream tests run against a reference
#     core (cargo test lines named `reference`, `text_reference`,
#     `bson_reference`, `reference_053`), which show the port is faithful
#     rather than test oplite;
#   - reruns: every check of a phase in RERUN_PHASES, the same tests again
#     on ARM64, under valgrind, or in a standalone build;
#   - oplite's own: the rest.
#
# Environment: PHASE_DIR, the folder for logs and results (set by phase_init).

RERUN_PHASES=" arm64 memcheck standalone "

phase_init() {
  PHASE_DIR=$1
  PHASE_START=$SECONDS
  rm -rf "$PHASE_DIR" && mkdir -p "$PHASE_DIR"
  export PHASE_DIR PHASE_START
}

# Counts the checks a log reports: prints "passed failed reference-side".
phase_count() {
  awk '
    /^test ([^ ]*::)?((text|bson)_)?reference(_053)? \.\.\. ok$/ { r++; next }
    /^ *test result: / { p += $4; f += $6; next }
    /^# pass [0-9]+$/ || /^ℹ pass [0-9]+$/ { p += $3; next }
    /^# fail [0-9]+$/ || /^ℹ fail [0-9]+$/ { f += $3; next }
    match($0, /^([A-Za-z0-9_-]+: )?[0-9]+ passed, [0-9]+ failed/) {
      line = substr($0, RSTART, RLENGTH); sub(/^[A-Za-z0-9_-]+: /, "", line)
      split(line, w, " "); p += w[1]; f += w[3]
    }
    END { printf "%d %d %d\n", p, f, r }' "$1"
}

# Prints a line under the lock, so lanes do not interleave their output.
phase_say() {
  { flock 9; printf '%s\n' "$@"; } 9>"$PHASE_DIR/.print"
}

# phase NAME BUDGET COMMAND...: runs COMMAND as the phase NAME, with a
# budget in seconds (over it, the closing table says so; nothing is cut).
phase() {
  local name=$1 budget=$2
  shift 2
  local log=$PHASE_DIR/$name.log rc
  phase_say "=== $name: started at $((SECONDS - PHASE_START))s ($(df -h --output=avail . | tail -n1 | tr -d ' ') free)"
  local t0=$SECONDS
  set +e
  # bash's `time` counts the CPU of every child the command waited for.
  { TIMEFORMAT='%U %S'; time "$@" >"$log" 2>&1 </dev/null; } 2>"$PHASE_DIR/$name.cpu"
  rc=$?
  set -e
  local wall=$((SECONDS - t0)) cpu counts
  cpu=$(awk '{ printf "%d", $1 + $2 }' "$PHASE_DIR/$name.cpu")
  counts=$(phase_count "$log")
  echo "$name $rc $wall $cpu $budget $counts" >"$PHASE_DIR/$name.result"
  {
    flock 9
    printf '\n=== %s: %s in %ds (CPU %ds, budget %ds), checks: %s passed, %s failed (%s of them the reference side)\n' \
      "$name" "$([[ $rc == 0 ]] && echo passed || echo "FAILED (exit $rc)")" "$wall" "$cpu" "$budget" ${counts}
    sed "s/^/[$name] /" "$log"
    printf '=== %s: end of log\n' "$name"
  } 9>"$PHASE_DIR/.print"
  return "$rc"
}

# Records a phase that did not run (skipped by a variable, or after a failure).
phase_skip() {
  echo "$1 skipped 0 0 $2 0 0 0" >"$PHASE_DIR/$1.result"
  phase_say "=== $1: skipped ($3)"
}

# lane NAME SPEC...: runs phases in order; each SPEC is "name budget skip-var
# command...", passed as one string and split by the shell. After a failure
# the rest of the lane is recorded as skipped.
lane() {
  local lane_name=$1 failed="" spec name budget skip
  shift
  for spec in "$@"; do
    read -r name budget skip _ <<<"$spec"
    local command=${spec#* * * }
    if [[ -n $failed ]]; then
      phase_skip "$name" "$budget" "$failed failed earlier in lane $lane_name"
    elif [[ $skip != - && -n ${!skip:-} ]]; then
      phase_skip "$name" "$budget" "$skip is set"
    elif ! phase "$name" "$budget" bash -c "$command"; then
      failed=$name
    fi
  done
  [[ -z $failed ]]
}

# Waits until phase NAME has a result (another lane runs it); fails unless
# it passed.
phase_wait() {
  while [[ ! -f $PHASE_DIR/$1.result ]]; do sleep 2; done
  [[ $(cut -d' ' -f2 "$PHASE_DIR/$1.result") == 0 ]] || { echo "phase $1, which this one needs, did not pass"; return 1; }
}

# The failed checks of every failed phase, repeated after the table: the
# end of a long run is what a reader (or a CI page showing only its tail)
# sees first.
phase_failures() {
  local name rc
  for name in "$@"; do
    [[ -f $PHASE_DIR/$name.result ]] || continue
    read -r _ rc _ <"$PHASE_DIR/$name.result"
    [[ $rc == 0 || $rc == skipped ]] && continue
    echo "failed in $name:"
    { grep -E -A4 '^(FAILED|not ok|---- |test .* FAILED|error(\[|:))' "$PHASE_DIR/$name.log" | cut -c1-400 | head -n 40 | sed 's/^/  /'; } || true
    echo "  (the log's last lines)"
    { tail -n 5 "$PHASE_DIR/$name.log" | cut -c1-400 | sed 's/^/  /'; } || true
  done
}

# The closing table (one row a phase, in the order given) and the closing
# line counting the checks of every phase. Fails if any phase failed.
phase_summary() {
  local total=$((SECONDS - PHASE_START)) name rc wall cpu budget p f r own rerun
  local sum_p=0 sum_f=0 sum_own=0 sum_r=0 sum_rerun=0 bad=0
  printf '\n| phase | result | time | CPU | budget | passed | oplite | reference side | reruns | failed |\n'
  printf '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n'
  for name in "$@"; do
    if [[ ! -f $PHASE_DIR/$name.result ]]; then
      printf '| %s | did not run | | | | | | | | |\n' "$name"; bad=1; continue
    fi
    read -r _ rc wall cpu budget p f r <"$PHASE_DIR/$name.result"
    if [[ $RERUN_PHASES == *" $name "* ]]; then rerun=$p r=0; else rerun=0; fi
    own=$((p - r - rerun))
    local result=passed
    case $rc in
      0) ;;
      skipped) result=skipped ;;
      # A phase that failed counts as a failed check even when its log
      # counted none (a build error, a crash before the summary).
      *) result="FAILED ($rc)"; bad=1; ((f > 0)) || f=1 ;;
    esac
    [[ $rc == skipped || $wall -le $budget ]] || result="$result, over budget"
    printf '| %s | %s | %ss | %ss | %ss | %s | %s | %s | %s | %s |\n' \
      "$name" "$result" "$wall" "$cpu" "$budget" "$p" "$own" "$r" "$rerun" "$f"
    sum_p=$((sum_p + p)) sum_f=$((sum_f + f)) sum_own=$((sum_own + own)) sum_r=$((sum_r + r)) sum_rerun=$((sum_rerun + rerun))
  done
  printf '| all | | %ds | | | %d | %d | %d | %d | %d |\n\n' "$total" "$sum_p" "$sum_own" "$sum_r" "$sum_rerun" "$sum_f"
  printf 'of the %d passed: %d check oplite, %d the reference side (the ported suite on a reference core), %d are reruns (%s)\n' \
    "$sum_p" "$sum_own" "$sum_r" "$sum_rerun" "$(echo $RERUN_PHASES | sed 's/ /, /g')"
  phase_failures "$@"
  if ((total > 45 * 60)); then
    echo "warning: the run took $((total / 60)) minutes, past the 45-minute mark (CI's limit is 90; see docs/development.md)"
  fi
  printf '%d passed, %d failed\n' "$sum_p" "$sum_f"
  ((bad == 0))
}
