#!/usr/bin/env python3
"""Mutation check: do the tests catch a bug when one is put in?

Puts each of a few known bugs into a copy of the repository (a git worktree
of HEAD under target/mutation/), one at a time, builds the loadable
extension and runs the extension's tests (`cargo test-ext`, unit and
integration tests, against the reference cores as scripts/test.sh runs
them), and prints which test files failed. A case that no test catches is a
hole in the suite, and the script then exits 1.

    python3 scripts/mutation-check.py [--list] [CASE ...]

Each mutation is an exact piece of source text and its replacement; a piece
that is no longer in the source (the code moved) is an error, so the check
cannot go quiet by mutating nothing. docs/development.md lists the cases.
A full run takes about 8 minutes per case on a 2-core machine.
"""

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "target" / "mutation"
TREE = WORK / "tree"
TARGET = WORK / "target"


@dataclass
class Case:
    name: str
    bug: str
    path: str
    before: str
    after: str
    count: int = 1


CASES = [
    Case(
        "checksum-off-by-one",
        "a stored PUT adds its checksum plus one to the bucket's op checksum",
        "extension/src/sync/data_line.rs",
        "                sums.op += op.checksum;\n                puts.push(op)?;",
        "                sums.op += op.checksum + Checksum(1);\n                puts.push(op)?;",
    ),
    Case(
        "dropped-crud-entry",
        "a delete through a view queues no ps_crud entry",
        "extension/src/schema/triggers.rs",
        '            sql.push_str(&self.queue(&entry, Some("OLD.id"), None));',
        "            let _ = &entry;",
    ),
    Case(
        "skipped-remove",
        "a REMOVE op leaves the op it removes (and its row) in place",
        "extension/src/sync/data_line.rs",
        "                let removed = remove_current(stored, &key_buf, op_count, &mut puts, &mut superseded, &mut sums)?;",
        "                let removed: Option<i64> = {\n                    let _ = stored;\n                    None\n                };",
    ),
    Case(
        "priority-ignored",
        "a partial checkpoint applies (and delays) the buckets of every priority",
        "extension/src/sync/client.rs",
        ".filter(|b| b.priority() <= priority)",
        ".filter(|_| true)",
        count=2,
    ),
    Case(
        "bson-int-as-double",
        "a BSON int64 is read as a double",
        "extension/src/bson/de.rs",
        "            Value::Int64(v) => visitor.visit_i64(v),",
        "            Value::Int64(v) => visitor.visit_f64(v as f64),",
    ),
]


def run(args, **kwargs):
    return subprocess.run(args, check=True, text=True, **kwargs)


def output(args, **kwargs):
    return run(args, stdout=subprocess.PIPE, **kwargs).stdout.strip()


def prepare_tree():
    """A clean worktree of HEAD at TREE."""
    WORK.mkdir(parents=True, exist_ok=True)
    head = output(["git", "-C", str(ROOT), "rev-parse", "HEAD"])
    if not (TREE / ".git").exists():
        run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(TREE), head], stdout=subprocess.DEVNULL)
    run(["git", "-C", str(TREE), "checkout", "--quiet", "--detach", head])
    run(["git", "-C", str(TREE), "checkout", "--quiet", "--", "."])


def mutate(case):
    path = TREE / case.path
    text = path.read_text()
    found = text.count(case.before)
    if found != case.count:
        sys.exit(f"{case.name}: expected {case.count} copies of its source text in {case.path}, found {found}")
    path.write_text(text.replace(case.before, case.after))


def environment():
    env = dict(os.environ)
    env["CARGO_TARGET_DIR"] = str(TARGET)
    env["OPLITE_SO"] = str(TARGET / "release" / "liboplite.so")
    for name, version in (("REFERENCE_CORE", "0.5.4"), ("REFERENCE_CORE_053", "0.5.3")):
        if name not in env:
            env[name] = output(["bash", str(ROOT / "scripts" / "reference-core.sh"), version])
    return env


def check(case, env):
    """Builds the mutated tree and runs the tests; returns the failing
    test files (`lib` for the unit tests) with their failing tests."""
    prepare_tree()
    mutate(case)
    run(["cargo", "build", "--quiet", "--release", "--manifest-path", "loadable/Cargo.toml"], cwd=TREE, env=env)
    log = WORK / f"{case.name}.log"
    with open(log, "w") as out:
        subprocess.run(["cargo", "test", "-p", "oplite", "--no-fail-fast"], cwd=TREE, env=env, stdout=out, stderr=subprocess.STDOUT)
    caught = {}
    current = None
    for line in log.read_text().splitlines():
        started = re.match(r"\s+Running (?:unittests )?(\S+)", line)
        if started:
            source = started.group(1)
            current = "lib" if source.startswith("src/") else Path(source).stem
        failed = re.match(r"test (\S+) \.\.\. FAILED", line)
        if failed and current:
            caught.setdefault(current, []).append(failed.group(1))
    return caught, log


def main(argv):
    if "--list" in argv:
        for case in CASES:
            print(f"{case.name}: {case.bug} ({case.path})")
        return 0
    chosen = [c for c in CASES if not argv or c.name in argv]
    unknown = set(argv) - {c.name for c in CASES}
    if unknown:
        sys.exit(f"unknown cases: {', '.join(sorted(unknown))} (--list shows them)")
    env = environment()
    rows = []
    for case in chosen:
        print(f"== {case.name}: {case.bug}", flush=True)
        caught, log = check(case, env)
        tests = sum(len(t) for t in caught.values())
        files = ", ".join(f"{name} ({len(t)})" for name, t in sorted(caught.items())) or "NONE"
        print(f"   {tests} failing tests in: {files} (log: {log.relative_to(ROOT)})", flush=True)
        rows.append((case, tests, files))
    prepare_tree()
    print("\n| case | the bug | failing tests | caught by (test file: failures) |")
    print("|---|---|---:|---|")
    for case, tests, files in rows:
        print(f"| {case.name} | {case.bug} | {tests} | {files} |")
    missed = [case.name for case, tests, _ in rows if tests == 0]
    if missed:
        print(f"\nnot caught: {', '.join(missed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
