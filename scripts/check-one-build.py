#!/usr/bin/env python3
"""Checks that release builds of any mix of the workspace's packages agree.

Cargo resolves features once per invocation, over the packages it was asked
for. When one package turns on a feature of a shared dependency, every crate
above that dependency is compiled anew, so `cargo build --release -p A` and
then `cargo build --release -p A -p B` would build (and, with fat LTO, link)
A's binaries twice; the same happens when the crates a build links decide
how a shared dependency is compiled for LTO. This script asks cargo for the
unit graph of every package alone, of every pair and of the whole workspace
(no compiling: `--unit-graph`, allowed on stable with RUSTC_BOOTSTRAP=1) and
requires each package's own binaries and libraries to be built from the
same crates compiled the same way (features, profile, LTO mode) in every
set that contains it, so that the second build relinks nothing.

The loadable extension is not among them: it is the workspace loadable/,
whose feature `loadable` cannot meet the bundled SQLite the packages here
link. So no set here may give rusqlite `loadable_extension`; loadable/'s own
graph must give it that and no linked SQLite; and loadable/Cargo.lock must
hold the same versions as the root Cargo.lock.
Prints `one-build: N passed, M failed`.
"""
import itertools
import json
import os
import subprocess
import sys
import tomllib

# The native packages (oplite-wasm builds for wasm32 only).
PACKAGES = ["oplite", "oplite-cli", "oplite-test-server", "oplite-test-data", "oplite-wasm-native"]
LOADABLE = "loadable/Cargo.toml"


def key_of(unit):
    target = unit["target"]
    return (unit["pkg_id"].split("#")[-1], target["name"], tuple(target["kind"]), unit["mode"])


def lto_modes(graph):
    """What each unit is compiled with for LTO, as cargo decides it
    (cargo's core/compiler/lto.rs): a final binary, cdylib or staticlib runs
    LTO; a crate below one carries bitcode; one below an rlib root, or below
    a lib target with a cdylib or staticlib beside its rlib, carries object
    code too; build scripts and proc macros carry object code only. The
    mode is part of the unit's hash, so a crate whose mode depends on what
    else is in the build is compiled again, and everything above it."""
    all_units = graph["units"]

    def for_host(unit):
        return bool({"proc-macro", "custom-build"} & set(unit["target"]["kind"]))

    def needs_object(types):
        return any(t in ("bin", "staticlib", "cdylib", "dylib", "proc-macro") for t in types)

    def when_needs_object(types):
        return "object" if all(t == "dylib" for t in types) else "object+bitcode"

    def crate_types(unit):
        return ["bin"] if unit["mode"] in ("test", "bench", "doctest") else unit["target"]["crate_types"]

    modes = {}

    def visit(index, parent):
        unit = all_units[index]
        types = crate_types(unit)
        if for_host(unit):
            mode = "object"
        elif all(t in ("bin", "staticlib", "cdylib") for t in types):
            mode = {"false": "object", "off": "off"}.get(unit["profile"]["lto"], "run")
        elif parent == "off":
            mode = "off"
        elif needs_object(types) and parent in ("run", "bitcode"):
            mode = when_needs_object(types)
        elif parent == "run":
            mode = "bitcode"
        else:
            mode = parent
        previous = modes.get(index)
        if previous is not None:
            both = {previous, mode}
            merged = ("run" if "run" in both else "off" if "off" in both else
                      previous if len(both) == 1 else "object+bitcode")
            if merged == previous:
                return
            mode = merged
        modes[index] = mode
        for dep in unit["dependencies"]:
            visit(dep["index"], mode)

    for root in graph["roots"]:
        unit = all_units[root]
        types = unit["target"]["crate_types"]
        if unit["profile"]["lto"] == "false":
            mode = "object"
        elif unit["profile"]["lto"] == "off":
            mode = "off"
        elif for_host(unit):
            mode = "object"
        else:
            mode = when_needs_object(types) if needs_object(types) else "bitcode"
        visit(root, mode)
    return modes


def units(args):
    """For a release build with `args`: every unit's key and how it is
    compiled (features, profile, LTO mode), and for each asked-for unit (a
    package's binaries and libraries) how everything it is built from is."""
    command = ["cargo", "build", "--release", "--unit-graph", "-Z", "unstable-options", *args]
    env = dict(os.environ, RUSTC_BOOTSTRAP="1")
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout
    graph = json.loads(out)
    all_units = graph["units"]
    modes = lto_modes(graph)
    compiled = {
        key_of(u): (tuple(sorted(u["features"])), modes[i], json.dumps(u["profile"], sort_keys=True))
        for i, u in enumerate(all_units)
    }

    def closure(index, acc):
        if index in acc:
            return acc
        acc.add(index)
        for dep in all_units[index]["dependencies"]:
            closure(dep["index"], acc)
        return acc

    built = {}
    for root in graph["roots"]:
        deps = closure(root, set())
        built[key_of(all_units[root])] = frozenset((key_of(all_units[i]), compiled[key_of(all_units[i])]) for i in deps)
    return compiled, built


def rusqlite_features(compiled):
    """The union of rusqlite's features in one graph."""
    return {f for (crate, _, _, _), (fs, _, _) in compiled.items() if crate.startswith("rusqlite@") for f in fs}


def check_loadable():
    """loadable/ calls the host's SQLite only, and its lock file holds the
    root's versions. Returns the failures."""
    failures = []
    found = rusqlite_features(units(["--manifest-path", LOADABLE])[0])
    if "loadable_extension" not in found or found & {"bundled", "load_extension"}:
        failures.append(f"{LOADABLE}: rusqlite gets {sorted(found)}, not loadable_extension without a linked SQLite")
    with open("Cargo.lock", "rb") as f:
        root = {(p["name"], p["version"], p.get("source"), p.get("checksum")) for p in tomllib.load(f)["package"]}
    with open("loadable/Cargo.lock", "rb") as f:
        own = tomllib.load(f)["package"]
    stray = [f"{p['name']} {p['version']}" for p in own
             if p["name"] != "oplite-loadable" and (p["name"], p["version"], p.get("source"), p.get("checksum")) not in root]
    if stray:
        failures.append("loadable/Cargo.lock has versions the root Cargo.lock has not: " + ", ".join(stray) +
                        " (refresh it: cp Cargo.lock loadable/ && cargo tree --manifest-path loadable/Cargo.toml >/dev/null)")
    return failures


def main():
    os.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sets = [[p] for p in PACKAGES] + [list(pair) for pair in itertools.combinations(PACKAGES, 2)]
    sets = [[a for p in packages for a in ("-p", p)] for packages in sets] + [["--workspace"]]
    seen = {}  # a package's unit -> (what it is built from, first package set)
    passed = failed = 0
    for args in sets:
        compiled, built = units(args)
        name = " ".join(args)
        if "loadable_extension" in rusqlite_features(compiled):
            print(f"FAILED: {name}: rusqlite gets loadable_extension, which belongs to {LOADABLE} only")
            failed += 1
            continue
        differing = []
        for key, inputs in built.items():
            first = seen.setdefault(key, (inputs, name))
            if first[0] != inputs:
                changed = sorted(f"{k[0]} {list(f)} lto:{lto}" for k, (f, lto, _) in inputs - first[0])
                differing.append(f"{key[1]} ({', '.join(key[2])}) differs from its build with {first[1]}: {'; '.join(changed[:4])}")
        if differing:
            failed += 1
            print(f"FAILED: {name} rebuilds what another set built:", *differing, sep="\n  ")
        else:
            passed += 1
    loadable = check_loadable()
    for failure in loadable:
        print(f"FAILED: {failure}")
    passed, failed = passed + (not loadable), failed + bool(loadable)
    print(f"one-build: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
