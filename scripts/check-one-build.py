#!/usr/bin/env python3
"""Checks that release builds of any mix of the workspace's packages agree.

Cargo resolves features once per invocation, over the packages it was asked
for. When one package turns on a feature of a shared dependency, every crate
above that dependency is compiled anew, so `cargo build --release -p A` and
then `cargo build --release -p A -p B` would build (and, with fat LTO, link)
A's binaries twice. This script asks cargo for the unit graph of every
package alone and of every pair (no compiling: `--unit-graph`, allowed on
stable with RUSTC_BOOTSTRAP=1) and requires each package's own binaries and
libraries to be built from the same crates with the same features in every
set that contains it, so that the second build relinks nothing.

Pairs that cannot be built together are reported and must be the ones
listed in CANNOT_MIX with their reason: today, the loadable extension
(`oplite` with its default feature) and any package that links SQLite
itself, because rusqlite refuses `loadable_extension` beside a linked SQLite.
Prints `one-build: N passed, M failed`.
"""
import itertools
import json
import os
import subprocess
import sys

# The native packages (oplite-wasm builds for wasm32 only).
PACKAGES = ["oplite", "oplite-cli", "oplite-test-server", "oplite-test-data", "oplite-wasm-native"]

# The loadable extension links no SQLite (it calls the host's through its
# routine table); these packages link rusqlite's bundled SQLite.
CANNOT_MIX = {
    frozenset(["oplite", other]): "the loadable build calls the host's SQLite; this package links its own"
    for other in ["oplite-cli", "oplite-wasm-native"]
}


def key_of(unit):
    target = unit["target"]
    return (unit["pkg_id"].split("#")[-1], target["name"], tuple(target["kind"]), unit["mode"])


def units(packages):
    """For a release build of `packages`: every unit's key and features, and
    for each of the asked packages' own units (its binaries and libraries)
    the features of everything it is built from."""
    args = ["cargo", "build", "--release", "--unit-graph", "-Z", "unstable-options"]
    for package in packages:
        args += ["-p", package]
    env = dict(os.environ, RUSTC_BOOTSTRAP="1")
    out = subprocess.run(args, capture_output=True, text=True, env=env, check=True).stdout
    graph = json.loads(out)
    all_units = graph["units"]
    features = {key_of(u): tuple(sorted(u["features"])) for u in all_units}

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
        built[key_of(all_units[root])] = frozenset((key_of(all_units[i]), features[key_of(all_units[i])]) for i in deps)
    return features, built


def conflicts(features_by_key):
    """Whether the set mixes the loadable extension with a linked SQLite."""
    for (crate, _, _, _), features in features_by_key.items():
        if crate.startswith("rusqlite@") and "loadable_extension" in features and (
            "load_extension" in features or "bundled" in features
        ):
            return True
    return False


def main():
    os.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sets = [[p] for p in PACKAGES] + [list(pair) for pair in itertools.combinations(PACKAGES, 2)]
    seen = {}  # a package's unit -> (what it is built from, first package set)
    passed = failed = 0
    for packages in sets:
        features, built = units(packages)
        name = " ".join(f"-p {p}" for p in packages)
        if conflicts(features):
            reason = CANNOT_MIX.get(frozenset(packages))
            if reason:
                print(f"cannot mix (as documented): {name}: {reason}")
                passed += 1
            else:
                print(f"FAILED: {name}: rusqlite gets both loadable_extension and load_extension")
                failed += 1
            continue
        differing = []
        for key, inputs in built.items():
            first = seen.setdefault(key, (inputs, name))
            if first[0] != inputs:
                changed = sorted(f"{k[0]} {list(f)}" for k, f in inputs - first[0])
                differing.append(f"{key[1]} ({', '.join(key[2])}) differs from its build with {first[1]}: {'; '.join(changed[:4])}")
        if differing:
            failed += 1
            print(f"FAILED: {name} rebuilds what another set built:", *differing, sep="\n  ")
        else:
            passed += 1
    print(f"one-build: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
