#!/usr/bin/env python3
"""Checks two rules of the house in oplite's Rust crates: no import circles
between modules, and `unsafe` code only in the extension's `sqlite` module.

Each .rs file is a module. A module imports another when it names it through
`use crate::...`, `use super::...` or a `crate::`/`super::` path in its code;
a path is charged to the longest module it reaches (an item of `sync::line`
charges `sync::line`). Names a module takes from its own ancestors (a child
reading its parent's items) are left out, as are `#[cfg(test)]` modules at
the end of a file: tests may reach anywhere. A circle is a set of modules
that reach each other (a strongly connected component of more than one).

Prints each circle with its edges, and each `unsafe` outside
extension/src/sqlite/ (the WASM crate, which is a SQLite host, keeps its own
boundary and is not checked for it); exits 1 if either is found. Closes with
`house: N passed, M failed`, one check per crate and the unsafe check.
Usage: check-house.py [SRC_DIR...] (default: every crate of the workspace).
"""
import os
import re
import sys

CRATES = ["extension/src", "cli/src", "test-server/src", "wasm/src", "wasm/native/src", "test-data/src", "cipher/src"]
TESTS = re.compile(r"#\[cfg\((?:all\()?test[^\]]*\]\s*mod\s+\w+")


def modules(root):
    """Maps each module path (a tuple of names) to its file."""
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(folder, name)
            parts = tuple(os.path.relpath(path, root)[:-3].split(os.sep))
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            found[parts] = path
    return found


def use_paths(tree):
    """Expands a use tree (`a::{b, c::{d, e}}`) into its paths."""
    tree = re.sub(r"\s+", "", tree)
    paths = []

    def walk(prefix, items):
        depth, item, split = 0, "", []
        for ch in items:
            depth += ch == "{"
            depth -= ch == "}"
            if ch == "," and depth == 0:
                split.append(item)
                item = ""
            else:
                item += ch
        split.append(item)
        for item in filter(None, split):
            if "{" in item:
                head, body = item.split("{", 1)
                walk(prefix + [p for p in head.split("::") if p], body[:-1])
            else:
                names = [p for p in item.split(" as ")[0].split("::") if p and p not in ("self", "*")]
                paths.append(prefix + names)

    walk([], tree)
    return paths


def imports(module, path, known):
    """The modules `module` (in file `path`) imports."""
    source = re.sub(r"//[^\n]*", "", open(path, encoding="utf-8").read())
    source = TESTS.split(source)[0]
    refs = [p for u in re.finditer(r"\buse\s+([^;]+);", source) for p in use_paths(u.group(1))]
    refs += [m.group(1).split("::") for m in re.finditer(r"\b((?:crate|super)(?:::\w+)+)", source)]
    targets = set()
    for ref in refs:
        if ref[0] == "crate":
            target = ref[1:]
        elif ref[0] == "super":
            base, rest = list(module[:-1]), ref[1:]
            while rest and rest[0] == "super":
                base, rest = base[:-1], rest[1:]
            target = base + rest
        else:
            continue
        target = tuple(target)
        while target and target not in known:
            target = target[:-1]
        if target != module and module[: len(target)] != target:
            targets.add(target)
    return targets


def circles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in graph:
        if v not in index:
            visit(v)
    return found


UNSAFE = re.compile(r"\bunsafe\s*(\{|fn\b|impl\b|extern\b)")
UNSAFE_HOME = os.path.join("extension", "src", "sqlite")


def stray_unsafe():
    """Files of the extension with `unsafe` code outside its sqlite module."""
    stray = []
    for path in modules(os.path.join("extension", "src")).values():
        if path.startswith(UNSAFE_HOME):
            continue
        source = re.sub(r"//[^\n]*", "", open(path, encoding="utf-8").read())
        if UNSAFE.search(source):
            stray.append(path)
    return sorted(stray)


def main(roots):
    passed = failed = 0
    stray = stray_unsafe()
    for path in stray:
        print(f"unsafe code outside {UNSAFE_HOME}: {path}")
    passed, failed = (0, 1) if stray else (1, 0)
    for root in roots:
        known = modules(root)
        graph = {m: imports(m, p, known) for m, p in known.items()}
        found = circles(graph)
        if found:
            failed += 1
        else:
            passed += 1
            print(f"{root}: {len(known)} modules, no import circle")
        for component in found:
            name = lambda m: "::".join(m) or "crate root"
            print(f"{root}: import circle of {len(component)} modules")
            for m in component:
                print(f"  {name(m)} -> {', '.join(sorted(name(t) for t in graph[m] if t in component))}")
    print(f"house: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    os.chdir(os.path.dirname(here))
    sys.exit(main(sys.argv[1:] or [c for c in CRATES if os.path.isdir(c)]))
