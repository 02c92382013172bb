#!/usr/bin/env python3
"""Prints, for each failed test in a ctest JUnit file, its name and the last lines of its output.

run-tests.sh calls it at the very end, so the failure is in the part of the log that CI keeps
(the tail), not only in the middle of a 30-minute run. Usage: ctest-failures.py PASS FILE [LINES]
"""
import sys
import xml.etree.ElementTree as ET


def main() -> int:
    name, path = sys.argv[1], sys.argv[2]
    lines = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"[{name}] no test results in {path}: {e}")
        return 0
    for case in root.iter("testcase"):
        if case.get("status") not in ("fail", "failed") and case.find("failure") is None:
            continue
        out = case.findtext("system-out") or ""
        tail = out.rstrip("\n").split("\n")[-lines:]
        print(f"\n----- [{name}] FAILED: {case.get('name')} ({case.get('time', '?')} s); "
              f"last {len(tail)} lines of its output:")
        for line in tail:
            print(f"  | {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
