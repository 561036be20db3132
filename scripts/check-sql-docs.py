#!/usr/bin/env python3
"""Checks that docs/sql.md, the SQL reference, lists what oplite registers.

A function added without an entry, or an entry left behind by a function
that was renamed or removed, makes the reference lie; reading the Rust
source for names would miss whatever a macro or a loop registers. So this
script asks SQLite: it loads the built extension into an apsw connection
(`sqlite3_oplite_init`) and takes what `pragma_function_list` and
`pragma_module_list` show there and not on a fresh connection without it,
before and after `powersync_init()` (in a transaction rolled back again),
less the `pragma_*` tables SQLite itself makes the first time a statement
uses one. The entries are the code spans holding a name or a call
(`name`, `name(args)`) in the first cell of docs/sql.md's tables whose
first column is `function` or `table` (a cell such as `` `uuid()`,
`gen_random_uuid()` `` names two). Both ways must
match, except for the few names in INTERNAL, each with its reason; and an
entry's argument list, `name(a, b)` or `name(a, ...)`, must fit one of the
arities the function is registered with.

Closes with `sql-docs: N passed, M failed`; exits 1 on any failure. Run it
with a Python that has apsw (scripts/test-examples.sh does, after the
build). Usage: check-sql-docs.py [LIBRARY] (default: $OPLITE_SO, else
dist/lib/liboplite.so).
"""
import os
import re
import sys

from checks import check, summary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = "docs/sql.md"
ENTRY_POINT = "sqlite3_oplite_init"
# Registered on purpose without an entry: name -> why.
INTERNAL = {
    "powersync_internal_close": "the pre-close hook, an eponymous table SQLite disconnects as the "
    "connection closes (docs/architecture.md); nothing to call or query, and the reference core "
    "registers the same name without documenting it",
}
NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?")


def registered(connection):
    """{function name: set of arities} and the set of module names."""
    functions = {}
    for name, narg in connection.execute("SELECT name, narg FROM pragma_function_list"):
        functions.setdefault(name, set()).add(narg)
    modules = {name for (name,) in connection.execute("SELECT name FROM pragma_module_list")}
    return functions, modules


def cells(line):
    """The cells of a Markdown table row (`\\|` is a pipe inside a cell)."""
    row = line.strip().removeprefix("|")
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row)]


def arity(arguments):
    """The argument count an entry's list shows: -1 for `...`."""
    if arguments is None:
        return None
    if "..." in arguments:
        return -1
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "x", arguments).strip()
    return 0 if not text else text.count(",") + 1


def entries(text):
    """(line, name, arity or None) for each name docs/sql.md documents."""
    found = []
    lines = text.split("\n")
    in_fence = False
    kind = None
    for i, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        if in_fence or not line.lstrip().startswith("|"):
            kind = None  # the next table row is a header
            continue
        row = cells(line)
        if kind is None:  # the header row
            kind = row[0].lower() if row[0].lower() in ("function", "table") else ""
            continue
        if not kind or re.fullmatch(r":?-+:?", row[0]):
            continue
        for span in re.findall(r"`([^`]+)`", row[0]):
            named = NAME.fullmatch(span.replace("\\|", "|").strip())
            if named:
                found.append((i + 1, named.group(1), arity(named.group(2))))
    return found


def main(argv):
    os.chdir(ROOT)
    try:
        import apsw
    except ImportError:
        check("apsw is importable", False, [f"{sys.executable} -m pip install apsw"])
        return finish()

    library = argv[0] if argv else os.environ.get("OPLITE_SO") or "dist/lib/liboplite.so"
    plain = apsw.Connection(":memory:")
    base_functions, base_modules = registered(plain)
    connection = apsw.Connection(":memory:")
    connection.enable_load_extension(True)
    try:
        connection.load_extension(library, ENTRY_POINT)
    except apsw.Error as e:
        check(f"{library} loads ({ENTRY_POINT})", False, [f"{type(e).__name__}: {e}"])
        return finish()
    functions, modules = registered(connection)
    try:
        connection.execute("BEGIN; SELECT powersync_init()")  # it needs a transaction
        more_functions, more_modules = registered(connection)
        connection.execute("ROLLBACK")
    except apsw.Error as e:
        check("powersync_init() runs", False, [f"{type(e).__name__}: {e}"])
        more_functions, more_modules = {}, set()
    for name, arities in more_functions.items():
        functions.setdefault(name, set()).update(arities)
    modules |= more_modules
    added_functions = {n: a for n, a in functions.items() if n not in base_functions}
    added_modules = {n for n in modules - base_modules if not n.startswith("pragma_")}
    added = set(added_functions) | added_modules
    check(f"{library} adds {len(added_functions)} functions and {len(added_modules)} tables "
          f"(SQLite {apsw.sqlite_lib_version()})", bool(added_functions))

    documented = entries(open(DOC, encoding="utf-8").read())
    names = {name for _, name, _ in documented}
    missing = sorted(added - names - set(INTERNAL))
    check(f"every function and table oplite registers has an entry in {DOC} ({len(added - set(INTERNAL))})",
          not missing, [f"{name}: no entry ({'table' if name in added_modules else 'function'})" for name in missing])
    stale = [(line, name) for line, name, _ in documented if name not in added]
    check(f"every entry in {DOC} names something oplite registers ({len(documented)})",
          not stale, [f"line {line}: {name}: not registered" for line, name in stale])
    wrong = [f"line {line}: {name}: the entry shows {n} arguments, registered with {sorted(added_functions[name])}"
             for line, name, n in documented
             if n is not None and name in added_functions and n not in added_functions[name]]
    check("every entry's arguments fit the function's registered arity", not wrong, wrong)
    allow = [f"{name}: {'not registered' if name not in added else 'has an entry; drop it from INTERNAL'}"
             for name in sorted(INTERNAL) if name not in added or name in names]
    check(f"the allow-list names only registered names without an entry ({len(INTERNAL)})", not allow, allow)
    return finish()


def finish():
    return summary("sql-docs")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
