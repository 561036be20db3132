// A tally of named checks for the client test scripts: each check prints
// `ok: what` or `FAILED: what:` with its failures, and the script ends with
// the counts (scripts/test.sh reads `N passed, M failed`).
export function checklist() {
  const tally = { passed: 0, failed: 0 };
  return {
    // failures: what went wrong, empty when the check passed.
    check(what, failures) {
      if (failures.length === 0) {
        tally.passed++;
        console.log(`ok: ${what}`);
      } else {
        tally.failed++;
        console.error(`FAILED: ${what}:\n  ${failures.join('\n  ')}`);
      }
    },
    get failed() {
      return tally.failed;
    },
    summary() {
      return `${tally.passed} passed, ${tally.failed} failed`;
    },
  };
}
