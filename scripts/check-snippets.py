#!/usr/bin/env python3
"""Runs the code a newcomer copies from the docs, so that it cannot rot.

Two kinds of check:

- A code block right after a line `<!-- snippet: PATH -->` (in README.md,
  docs/*.md, examples/*/README.md) must appear, verbatim, in the file PATH:
  the docs show code that a test runs (the examples, cli/examples).
- The programs of the switching guide (docs/switching.md, "Your own
  host") run as a user would run them, from a fresh directory holding
  `dist/` (what scripts/package.sh builds): the Python block with apsw, the
  JavaScript block with better-sqlite3, the apsw shell session, and the SQL
  example, whose results are checked against what its comments say. Its
  rusqlite block is cli/examples/load_extension.rs, which cli/tests/switching_guide.rs
  compares and runs.

Run it with a Python that has apsw, from the repository's root, after
scripts/package.sh; NODE_PATH-style resolution of better-sqlite3 comes from
the directory named by OPLITE_SNIPPETS_NODE_MODULES (default
examples/node/node_modules). Closes with `snippets: N passed, M failed`.
"""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.M | re.S)
MARKER = re.compile(r"<!-- snippet: (\S+) -->\s*$")
results = []


def check(what, ok, detail=""):
    results.append(ok)
    print(f"{'ok' if ok else 'FAILED'} - {what}{'' if ok or not detail else ': ' + detail.strip()}")


def blocks(path):
    """(language, code, the line before the fence) for each fenced block."""
    text = open(path, encoding="utf-8").read()
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        yield match.group(1), match.group(2), before


def check_sources():
    docs = ["README.md", *glob.glob("docs/*.md"), *glob.glob("examples/*/README.md")]
    for doc in sorted(docs):
        for _, code, before in blocks(doc):
            marker = MARKER.search(before)
            if not marker:
                continue
            source = marker.group(1)
            try:
                text = open(source, encoding="utf-8").read()
            except OSError as e:
                check(f"{doc}: the snippet from {source}", False, str(e))
                continue
            check(f"{doc}: the snippet from {source} is in it, verbatim", code in text,
                  "the block differs from the file; copy it again")


def run(argv, cwd, stdin=None):
    proc = subprocess.run(argv, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


GUIDE = "docs/switching.md"


def guide_block(lang, contains=""):
    # Blocks shown as snippets of a file are checked against it, not run.
    found = [code for l, code, before in blocks(GUIDE) if l == lang and contains in code and not MARKER.search(before)]
    if len(found) != 1:
        check(f"{GUIDE} has one {lang} block{' with ' + contains if contains else ''}", False, f"found {len(found)}")
        return None
    return found[0]


def check_programs(work):
    python = guide_block("python")
    if python is not None:
        code, out, err = run([sys.executable, "-c", python], work)
        check("the guide's Python program prints oplite's version", code == 0 and out.startswith("oplite "), out + err)

    js = guide_block("js")
    if js is not None:
        with open(os.path.join(work, "app.mjs"), "w") as f:
            f.write(js)
        code, out, err = run(["node", "app.mjs"], work)
        check("the guide's Node program prints oplite's version", code == 0 and out.startswith("oplite "), out + err)

    session = guide_block("text", "sqlite> .load")
    if session is not None:
        commands = "".join(line[len("sqlite> "):] + "\n" for line in session.splitlines() if line.startswith("sqlite> "))
        code, out, err = run([sys.executable, "-m", "apsw", "shell.db"], work, stdin=commands + "SELECT oplite_version();\n")
        check("the guide's apsw shell session loads oplite", code == 0 and not err and "oplite " in out, out + err)


def check_sql_example(work):
    """The SQL example, statement by statement, with what its comments say."""
    import apsw

    sql = guide_block("sql")
    if sql is None:
        return
    db = apsw.Connection(os.path.join(work, "sql.db"))
    db.enable_load_extension(True)
    db.load_extension(os.path.join(work, "dist/lib/liboplite"), "sqlite3_oplite_init")
    outputs = []
    try:
        for statement in split_statements(sql):
            outputs.append((statement, db.execute(statement).fetchall()))
    except apsw.Error as e:
        check("the guide's SQL example runs", False, f"{type(e).__name__}: {e}")
        return
    check("the guide's SQL example runs", True)
    view = db.execute("SELECT description, done FROM todos").fetchall()
    check("its view holds the row it wrote", view == [("Milk", 0)], repr(view))
    crud = db.execute("SELECT data FROM ps_crud").fetchall()
    entry = json.loads(crud[0][0]) if len(crud) == 1 else {}
    check("ps_crud holds the entry its comment shows",
          entry.get("op") == "PUT" and entry.get("type") == "todos" and entry.get("data") == {"description": "Milk", "done": 0},
          repr(crud))
    control = next((rows for statement, rows in outputs if "powersync_control('start'," in statement), None)
    instructions = json.loads(control[0][0]) if control else []
    kinds = [next(iter(i)) for i in instructions]
    check("powersync_control('start') returns UpdateSyncStatus and EstablishSyncStream",
          "UpdateSyncStatus" in kinds and "EstablishSyncStream" in kinds, repr(kinds))


def split_statements(sql):
    """The statements of a script, comments removed, each with its `;`."""
    import apsw

    text = re.sub(r"--[^\n]*", "", sql)
    statements, current = [], ""
    for piece in text.split(";"):
        current += piece + ";"
        if apsw.complete(current):
            if current.strip(" \n;"):
                statements.append(current.strip())
            current = ""
    return statements


def main():
    os.chdir(ROOT)
    check_sources()
    library = os.path.join(ROOT, "dist/lib/liboplite.so")
    modules = os.environ.get("OPLITE_SNIPPETS_NODE_MODULES", os.path.join(ROOT, "examples/node/node_modules"))
    if not os.path.exists(library):
        check("dist/lib/liboplite.so exists", False, "run scripts/package.sh first")
    elif not os.path.isdir(os.path.join(modules, "better-sqlite3")):
        check(f"better-sqlite3 is installed in {modules}", False, "npm install in examples/node first")
    else:
        with tempfile.TemporaryDirectory(prefix="oplite-snippets-") as work:
            os.symlink(os.path.join(ROOT, "dist"), os.path.join(work, "dist"))
            os.symlink(modules, os.path.join(work, "node_modules"))
            check_programs(work)
            check_sql_example(work)
    passed = sum(results)
    print(f"snippets: {passed} passed, {len(results) - passed} failed")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
