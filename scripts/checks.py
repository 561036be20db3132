"""The report of the project's check scripts: one `ok - WHAT` or
`FAILED - WHAT` line per check, its details indented below it, and a
closing `NAME: N passed, M failed` line, the form scripts/phases.sh counts.
"""

results = []


def check(what, ok, details=()):
    """Records one check and prints its line."""
    results.append(ok)
    print(f"{'ok' if ok else 'FAILED'} - {what}")
    for detail in details:
        print(f"    {detail}")


def summary(name):
    """Prints the closing line; the exit code: 0 if every check passed."""
    passed = sum(results)
    print(f"{name}: {passed} passed, {len(results) - passed} failed")
    return 0 if all(results) else 1
