#!/usr/bin/env bash
# What a newcomer runs, run as a newcomer would (the "examples" phase of
# scripts/test.sh; docs/development.md):
#   1. dist/, packaged from what the build phases built (scripts/package.sh)
#   2. the npm tarballs installed into a fresh app directory with
#      `npm install ./dist/npm/...tgz`, and imported there
#   3. examples/rust: the Rust SDK on oplite (examples/rust/test.sh), and
#      examples/node: npm ci, then its test (the Node SDK on oplite)
#   4. examples/web: npm install, then its test (the web SDK on oplite in
#      headless Chromium, OPFS and IndexedDB)
#   5. the README's programs and the docs' snippets (scripts/check-snippets.py,
#      with apsw from PyPI in a virtual environment under target/), and
#      docs/sql.md against what dist/'s liboplite.so registers
#      (scripts/check-sql-docs.py, with the same apsw)
# Needs the web packages (wasm/pkg, wasm/pkg-powersync-web) that
# scripts/build-wasm-package.sh builds; scripts/package.sh builds the native
# artefacts, or with --no-build (as scripts/test.sh passes, after its build
# phase) packages what is built.
# OPLITE_SKIP_WASM=1 skips the web steps (2 and 4). Ends with one line
# `examples: N passed, M failed`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
start=$SECONDS
step() { printf '\n--- examples: %s (%ds)\n' "$*" $((SECONDS - start)); }
passed=0 failed=()
outcome() { if [[ $1 == 0 ]]; then passed=$((passed + 1)); else failed+=("$2"); fi; }

step "packaging dist/ (scripts/package.sh $*)"
bash scripts/package.sh "$@"
version=$(awk -F'"' '/^version = / { print $2; exit }' Cargo.toml)
web=1
[[ ${OPLITE_SKIP_WASM:-0} == 1 ]] && web=0

if [[ $web == 1 ]]; then
  step "the npm tarballs in a fresh app directory"
  app=$(mktemp -d)
  trap 'rm -rf "$app"' EXIT
  set +e
  (
    set -e
    cd "$app"
    echo '{"name": "fresh-app", "private": true, "type": "module"}' > package.json
    npm install --no-audit --no-fund "$OLDPWD/dist/npm/oplite-wasm-$version.tgz" "$OLDPWD/dist/npm/oplite-powersync-web-$version.tgz"
    cp "$OLDPWD/scripts/check-tarballs.mjs" .
    node check-tarballs.mjs
  )
  outcome $? "the tarballs"
  set -e
fi

step "examples/rust (cargo build; the todo app against the loopback service)"
bash examples/rust/test.sh && outcome 0 || outcome 1 "examples/rust"

step "examples/node (npm ci; node test.mjs)"
npm_ci_better_sqlite3 examples/node
(cd examples/node && node test.mjs) && outcome 0 || outcome 1 "examples/node"

if [[ $web == 1 ]]; then
  step "examples/web (npm install; node test.mjs)"
  chromium=$(ensure_chromium)
  # The adapter from the tarball just packed, not a copy installed earlier.
  rm -rf examples/web/node_modules/@oplite
  (cd examples/web && npm install --no-audit --no-fund && OPLITE_CHROMIUM=$chromium node test.mjs) && outcome 0 || outcome 1 "examples/web"
fi

step "the README's programs, the docs' snippets and the SQL reference (apsw in target/snippets-venv)"
venv=target/snippets-venv
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import apsw' 2>/dev/null; then
  # Debian's python3 makes virtual environments only with python3-venv.
  python3 -c 'import ensurepip' 2>/dev/null || apt_install python3-venv
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet apsw
fi
"$venv/bin/python" scripts/check-snippets.py && outcome 0 || outcome 1 "the snippets"
"$venv/bin/python" scripts/check-sql-docs.py dist/lib/liboplite.so && outcome 0 || outcome 1 "the SQL reference"

step "done"
echo "examples: $passed passed, ${#failed[@]} failed${failed[*]:+ (${failed[*]})}"
[[ ${#failed[@]} == 0 ]]
