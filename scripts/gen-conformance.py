#!/usr/bin/env python3
"""Regenerates docs/conformance.md from the kit's test list (developer tool).

  python3 scripts/gen-conformance.py build/default/stores/sqlite/tests/mqlite_sqlite_tck_test

Each kit test names the SPEC sections it pins (Spec5_…, Spec7_2_…,
Spec10_Spec8_…); this groups the tests by section. The `docs.conformance`
ctest check (tck/check_conformance.cmake) fails if the document names a test
that does not exist, omits a kit test, or a kit test cites no section.
"""
import re
import subprocess
import sys

TITLES = {
    "1": "Architecture (the store boundary)", "2": "Queues", "3": "Messages and states", "4": "Send", "5": "Receive (claim) and ordering",
    "6": "Settle, renew, DLQ operations", "7.1": "Recovery", "7.2": "Settlement receipts",
    "7.3": "Receive attempts", "7.4": "Delivery bound", "7.5": "No loss, no corruption",
    "8": "Transactions: the outbox", "9": "Concurrency and processes",
    "10": "Errors, limits, durability, schema", "11": "Performance contract",
    "12": "The conformance kit",
}

def sections(name):
    out = []
    for m in re.finditer(r"Spec(\d+)(?:_(\d)(?=_))?", name):
        major, minor = m.group(1), m.group(2)
        out.append(f"{major}.{minor}" if major == "7" and minor else major)
    return out

def key(s):
    return [int(x) for x in s.split(".")]

def main():
    listing = subprocess.run([sys.argv[1], "--gtest_list_tests"], capture_output=True, text=True,
                             check=True).stdout
    tests, suite = [], None
    for line in listing.splitlines():
        if not line.startswith(" ") and line.endswith("."):
            suite = line.split("/")[-1].rstrip(".")
        elif line.startswith("  ") and suite:
            test = f"{suite}.{line.strip().split('/')[0].split()[0]}"
            if test not in tests:  # once, however many profiles instantiate it
                tests.append(test)
    by = {}
    for t in tests:
        for s in sections(t.split(".", 1)[1]) or ["?"]:
            by.setdefault(s, []).append(t)
    out = [HEADER]
    for s in sorted((k for k in by if k != "?"), key=key):
        title = TITLES.get(s, TITLES.get(s.split(".")[0], ""))
        out.append(f"\n## §{s} {title}\n")
        for t in by[s]:
            out.append(f"- `{t}`")
    out.append(FOOTER)
    open("docs/conformance.md", "w").write("\n".join(out) + "\n")
    print(f"{len(tests)} kit tests, {len(by)} sections")

HEADER = """# Conformance: every SPEC rule and the tests that pin it

Generated from the kit's test list by `scripts/gen-conformance.py`; the
`docs.conformance` test fails if this page names a test that does not exist,
leaves out a kit test, or a kit test cites no SPEC section. A test that pins
several sections is listed under each. All tests below are in the conformance
kit (`tck/src/suite_*.cc`) and run against every store (`Sqlite/…`,
`Memory/…`, or a porter's instantiation); capabilities may skip some (see
[porting.md](porting.md)). Which guarantee (G1–G8, PIN) each test stands
behind it declares beside its `TEST_P` (`MQLITE_TCK_GRADES`, see
`mqlite/tck.h`), and `mqlite-tck --json` lists it."""

FOOTER = """
## Store-specific pins (outside the kit)

The kit is behaviour-only; each store pins its own layout and performance:

- SQLite, SPEC §11: `SqlitePlanPin.EveryStatementSeeksItsNamedIndex` and
  `SqlitePlanPin.ClaimCursorStepsDoNotGrowWithBlockedOrWaitingBacklog`
  (`stores/sqlite/tests/internal/plan_pin_test.cc`; the first also runs as the
  kit's PIN through the SQLite profile).
- SQLite, SPEC §10: `SqliteSchemaGolden.DdlHashIsPinnedToTheToken`,
  `SqliteSchemaGolden.FreshFileHoldsExactlyTheCanonicalDdl`, and the
  schema-token tests in `stores/sqlite/tests/open_test.cc`.
- SQLite, SPEC §9: symlinked and relative spellings of one file are
  `DbLocked` (`open_test.cc`); a lock held by another process, and released by
  its SIGKILL (`process_test.cc`).
- SQLite, SPEC §8: COMMIT/ROLLBACK through the native handle is refused
  (`sqlite_tx_test.cc`).
- Memory store, SPEC §11: counted index steps (`stores/memory/tests/memory_store_test.cc`).
- The kit's own proof that it can fail: `tck.mutant.*` (SPEC §12)."""

if __name__ == "__main__":
    main()
