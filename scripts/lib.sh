# Shell helpers the test scripts share (sourced, not run).

# Runs a command as root: directly, or through sudo.
as_root() {
  if [[ "$(id -u)" -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

# Whether every package DIR/package-lock.json pins is installed in
# DIR/node_modules at that version (optional ones may be absent, and dev
# ones too unless --with-dev is given).
npm_lock_matches() {
  node -e '
    const [dir, withDev] = [process.argv[1], process.argv[2] === "--with-dev"];
    const lock = require(`${dir}/package-lock.json`).packages;
    for (const [path, entry] of Object.entries(lock)) {
      if (!path.startsWith("node_modules/")) continue;
      let have = null;
      try { have = require(`${dir}/${path}/package.json`).version; } catch {}
      if (have === null && (entry.optional || (entry.dev && !withDev))) continue;
      if (have !== entry.version) process.exit(1);
    }' "$(realpath "$1")" "${2:-}"
}

# Installs DIR's npm packages (npm ci from DIR/package-lock.json) unless
# every package its lock pins, dev ones included, is installed at that
# version: wasm/ (the web tests), wasm/reference/ (the API references).
npm_ci_pinned() {
  local dir=$1
  if npm_lock_matches "$dir" --with-dev; then
    echo "npm packages in $dir already installed"
  else
    (cd "$dir" && npm ci --no-audit --no-fund)
  fi
}

# Installs the Debian packages named "command:package" whose command is
# missing (apt_ensure python3:python3 g++:g++).
apt_ensure() {
  local missing=() item
  for item in "$@"; do command -v "${item%%:*}" >/dev/null || missing+=("${item#*:}"); done
  [[ ${#missing[@]} -eq 0 ]] || apt_install "${missing[@]}"
}

# Installs Debian packages (apt-get as root, updating the lists if needed).
apt_install() {
  echo "installing $*" >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >&2 \
    || { as_root apt-get update >&2 &&
         as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >&2; }
  as_root apt-get clean >&2
}

# Prints the Chromium to drive: $OPLITE_CHROMIUM, or Debian's chromium
# package, installed with apt-get when missing.
# Installs libclang (Debian's libclang-dev) when missing: bindgen, which
# the PowerSync SDK's and core's crates run in their build scripts, loads
# libclang itself, not the libclang-cpp Debian installs beside other LLVM
# packages.
ensure_libclang() {
  [[ -n $(ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/*-linux-gnu/libclang-[0-9]*.so* 2>/dev/null) ]] || apt_install libclang-dev
}

# Prints a cargo command of Rust 1.96 or later, which powersync_core 0.5.4
# needs: Debian's rustc-web (installed when missing, as for the WASM
# build) or a rustup nightly. Its output is meant to be word-split:
#   $(rust_196) build --release ...
rust_196() {
  local minor
  minor=$(/usr/bin/rustc --version 2>/dev/null | sed -nE 's/^rustc 1\.([0-9]+)\..*/\1/p')
  if [[ -n $minor && $minor -ge 96 && -x /usr/bin/cargo ]]; then
    echo "env PATH=/usr/bin:$PATH RUSTC=/usr/bin/rustc /usr/bin/cargo"
    return
  fi
  minor=$(cargo +nightly --version 2>/dev/null | sed -nE 's/^cargo 1\.([0-9]+)\..*/\1/p')
  if [[ -n $minor && $minor -ge 96 ]]; then echo "cargo +nightly"; return; fi
  bash scripts/install-wasm-toolchain.sh >&2
  echo "env PATH=/usr/bin:$PATH RUSTC=/usr/bin/rustc /usr/bin/cargo"
}

ensure_chromium() {
  local chromium=${OPLITE_CHROMIUM:-/usr/bin/chromium}
  if [[ ! -x "$chromium" ]]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >&2
    as_root apt-get clean >&2
  fi
  "$chromium" --version 2>/dev/null | head -n1 >&2
  echo "$chromium"
}

# Runs Debian's cargo with Debian's rustc-web rather than rustup's, nightly
# features (-Zbuild-std) allowed; the settings before `--` are passed to it
# as environment, the rest are cargo's arguments:
#   debian_cargo CARGO_TARGET_DIR=target/wasm -- build --release ...
debian_cargo() {
  local settings=()
  while [[ $# -gt 0 && $1 != -- ]]; do settings+=("$1"); shift; done
  [[ ${1:-} == -- ]] && shift
  env PATH="/usr/bin:$PATH" RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1 \
    "${settings[@]}" /usr/bin/cargo "$@"
}

# Installs DIR's packages (npm ci from its lockfile) when they differ from
# the lockfile or better-sqlite3's native addon is missing. The addon is
# compiled from source (no prebuilt binary from GitHub), against the
# installed Node's own headers when it ships them (Debian and NodeSource
# packages put them in <prefix>/include/node), so nothing is downloaded
# from nodejs.org. DIR/package.json's allowScripts lets npm 11 run
# better-sqlite3's install script.
npm_ci_better_sqlite3() {
  local dir=$1 addon=$1/node_modules/better-sqlite3/build/Release/better_sqlite3.node tool prefix
  if npm_lock_matches "$dir" && [[ -f $addon ]]; then
    echo "npm packages in $dir already installed"
    return 0
  fi
  for tool in python3 make g++; do
    command -v "$tool" >/dev/null || { echo "$tool is required to compile better-sqlite3 (apt-get install python3 make g++)" >&2; return 1; }
  done
  prefix=$(node -p 'require("path").resolve(process.execPath, "../..")')
  if [[ -z ${npm_config_nodedir:-} && -f $prefix/include/node/node_api.h ]]; then
    export npm_config_nodedir=$prefix
  fi
  (cd "$dir" && npm_config_build_from_source=true npm ci --no-audit --no-fund --ignore-scripts=false --foreground-scripts)
  [[ -f $addon ]] || { echo "npm ci did not build better-sqlite3's native addon ($addon): were install scripts disabled (npm config get ignore-scripts)?" >&2; return 1; }
}
