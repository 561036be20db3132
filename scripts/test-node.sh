#!/usr/bin/env bash
# The Node SDK drop-in test (README "Node SDK drop-in"): the official
# @powersync/node 1.1.0 syncs and uploads against the loopback service,
# once with its bundled core and once with oplite; fails on any difference.
# Both checkpoint modes of the SDK (connect({ checkpointMode })): legacy
# (write-checkpoint2.json) and requests (/sync/checkpoint-request and
# db.requestCheckpoint()), each compared on its own; a failure in one mode
# does not skip the other. Then one more legacy-mode run with `lists` as a
# raw table in the SDK schema (run.mjs --raw-table): synced rows go into the
# app's own table, local writes upload through the core's raw-table
# triggers; also compared line by line (OPLITE_NODE_RAW=0 skips it).
# Last, the way back (clients/node/switch-back.mjs): the SDK syncs on oplite,
# runs oplite_uninstall(), and carries on with its bundled core on the same
# file from the stored positions (OPLITE_NODE_SWITCH_BACK=0 skips it).
# Called by scripts/test.sh unless OPLITE_SKIP_NODE=1. Installs what it
# needs and skips what is already there:
#   - clients/node/node_modules (npm ci, when missing or not what
#     package-lock.json pins); better-sqlite3 is compiled from source
#   - the loadable extension (cargo build --release --manifest-path
#     loadable/Cargo.toml) unless
#     OPLITE_SO names a built one (scripts/test.sh builds it first)
#   - the loopback service (cargo build --release -p oplite-test-server)
# Environment: OPLITE_NODE_ROWS=n syncs n rows (default 100000);
# OPLITE_NODE_MODES="legacy requests" (the default) picks the modes;
# OPLITE_NODE_RAW=0 skips the raw-table run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
start=$SECONDS
step() { printf '\n--- node: %s (%ds)\n' "$*" $((SECONDS - start)); }
fail() { echo "scripts/test-node.sh: $*" >&2; exit 1; }

step "checking tools"
command -v node >/dev/null || fail "node (20 or newer) is required"
command -v npm >/dev/null || fail "npm is required"
# npm 11 needs Node 20.17 or newer (22.9 on the 22 line).
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 17) ? 0 : 1)' ||
  fail "node 20.17 or newer is required, found $(node --version)"
echo "node $(node --version), npm $(npm --version)"

step "installing the SDK (npm ci in clients/node)"
addon=clients/node/node_modules/better-sqlite3/build/Release/better_sqlite3.node
# npm ci only when an installed version differs from the lockfile's, or the
# native addon is missing.
if ! npm_lock_matches clients/node || [[ ! -f $addon ]]; then
  for tool in python3 make g++; do
    command -v "$tool" >/dev/null || fail "$tool is required to compile better-sqlite3 (apt-get install python3 make g++)"
  done
  # From source: no prebuilt binary is downloaded from GitHub. The install
  # script must run (package.json's allowScripts approves it for npm 11).
  # node-gyp compiles against the installed Node's own headers when they
  # are there (Debian/NodeSource packages ship them in <prefix>/include/node),
  # instead of downloading them from nodejs.org, which CI cannot reach.
  prefix=$(node -p 'require("path").resolve(process.execPath, "../..")')
  if [[ -z ${npm_config_nodedir:-} && -f $prefix/include/node/node_api.h ]]; then
    export npm_config_nodedir=$prefix
  fi
  (cd clients/node && npm_config_build_from_source=true npm ci --no-audit --no-fund --ignore-scripts=false --foreground-scripts)
else
  echo "npm packages already installed"
fi
[[ -f $addon ]] || fail "npm ci did not build better-sqlite3's native addon ($addon): were install scripts disabled (npm config get ignore-scripts)?"

step "building the loadable extension and the loopback service"
if [[ -z ${OPLITE_SO:-} || ! -f ${OPLITE_SO:-} ]]; then
  cargo build --release --manifest-path loadable/Cargo.toml
  OPLITE_SO=$PWD/target/release/liboplite.so
fi
nm -D --defined-only "$OPLITE_SO" | grep -q ' sqlite3_powersync_init$' || fail "$OPLITE_SO has no sqlite3_powersync_init"
# OPLITE_TEST_SERVER names a built service (scripts/test.sh builds it first).
if [[ -z ${OPLITE_TEST_SERVER:-} ]]; then
  cargo build --release -p oplite-test-server
  OPLITE_TEST_SERVER=$PWD/target/release/oplite-test-server
fi
echo "core: $OPLITE_SO"

failed=() runs=0
for mode in ${OPLITE_NODE_MODES:-legacy requests}; do
  step "$mode checkpoint mode: two runs of the SDK, bundled core then oplite; comparing"
  runs=$((runs + 1))
  OPLITE_SO=$OPLITE_SO OPLITE_TEST_SERVER=$OPLITE_TEST_SERVER node clients/node/run.mjs --mode "$mode" ||
    failed+=("$mode")
done
if [[ ${OPLITE_NODE_RAW:-1} != 0 ]]; then
  step "legacy checkpoint mode, lists as a raw table: bundled core then oplite; comparing"
  runs=$((runs + 1))
  OPLITE_SO=$OPLITE_SO OPLITE_TEST_SERVER=$OPLITE_TEST_SERVER node clients/node/run.mjs --mode legacy --raw-table ||
    failed+=("legacy (raw table)")
fi
if [[ ${OPLITE_NODE_SWITCH_BACK:-1} != 0 ]]; then
  step "the way back: oplite, oplite_uninstall(), then the bundled core on the same file"
  runs=$((runs + 1))
  (cd clients/node && OPLITE_SO=$OPLITE_SO OPLITE_TEST_SERVER=$OPLITE_TEST_SERVER node switch-back.mjs) ||
    failed+=("switch back")
fi
# One check per compared pair of runs (and the switch back), for
# scripts/test.sh's count.
echo "node-sdk: $((runs - ${#failed[@]})) passed, ${#failed[@]} failed"
((${#failed[@]} == 0)) || fail "the runs differ or failed in: ${failed[*]} (see above)"

step "done"
