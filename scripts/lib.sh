# Shell helpers the test scripts share (sourced, not run).

# Runs a command as root: directly, or through sudo.
as_root() {
  if [[ "$(id -u)" -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

# Whether every package DIR/package-lock.json pins is installed in
# DIR/node_modules at that version (optional and dev ones may be absent).
npm_lock_matches() {
  node -e '
    const dir = process.argv[1];
    const lock = require(`${dir}/package-lock.json`).packages;
    for (const [path, entry] of Object.entries(lock)) {
      if (!path.startsWith("node_modules/")) continue;
      let have = null;
      try { have = require(`${dir}/${path}/package.json`).version; } catch {}
      if (have === null && (entry.optional || entry.dev)) continue;
      if (have !== entry.version) process.exit(1);
    }' "$(realpath "$1")"
}

# Installs the Debian packages named "command:package" whose command is
# missing (apt_ensure python3:python3 g++:g++).
apt_ensure() {
  local missing=() item
  for item in "$@"; do command -v "${item%%:*}" >/dev/null || missing+=("${item#*:}"); done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  echo "installing ${missing[*]}" >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2 \
    || { as_root apt-get update >&2 &&
         as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2; }
  as_root apt-get clean >&2
}

# Prints the Chromium to drive: $OPLITE_CHROMIUM, or Debian's chromium
# package, installed with apt-get when missing.
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
