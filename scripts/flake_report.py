"""Read the junit XML files of flake_check.sh's runs and name every test that did not pass every time.

Usage: python scripts/flake_report.py DIR N   (DIR holds run1.xml .. runN.xml)
A run whose XML is missing (pytest died, or was killed) counts against every test: it is named."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def outcomes(xml: Path) -> dict[str, tuple[str, str]]:
    """test id -> (outcome, message) for one run: passed, failed, error or skipped."""
    found: dict[str, tuple[str, str]] = {}
    for case in ET.parse(xml).iter("testcase"):
        test = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                message = (child.get("message") or "").splitlines()[0][:160] if child.get("message") else ""
                break
        found[test] = (outcome, message)
    return found


def main(folder: Path, runs: int) -> int:
    per_test: dict[str, list[str]] = defaultdict(lambda: ["absent"] * runs)
    skip_reason: dict[str, str] = {}
    missing = []
    for i in range(runs):
        xml = folder / f"run{i + 1}.xml"
        if not xml.exists():
            missing.append(i + 1)
            continue
        for test, (outcome, message) in outcomes(xml).items():
            per_test[test][i] = outcome
            if outcome == "skipped":
                skip_reason[test] = message
    bad = {t: o for t, o in per_test.items() if any(x not in ("passed", "skipped") for x in o)}
    always_skipped = sorted(t for t, o in per_test.items() if all(x == "skipped" for x in o))
    print(f"flake_check: {len(per_test)} tests over {runs} runs")
    for run in missing:
        print(f"  run {run} left no junit XML (pytest died or was killed): see run{run}.log")
    for test in always_skipped:
        print(f"  skipped every run: {test}: {skip_reason.get(test, '')}")
    for test, seen in sorted(bad.items()):
        print(f"  NOT PASSING EVERY TIME: {test}: {' '.join(seen)}")
    if not bad and not missing:
        print(f"flake_check: every test passed in all {runs} runs")
        return 0
    print(f"flake_check: {len(bad)} tests did not pass every time")
    return 1


if __name__ == "__main__":
    if len(sys.argv) != 3 or not sys.argv[2].isdigit():
        sys.exit("usage: flake_report.py DIR N")
    sys.exit(main(Path(sys.argv[1]), int(sys.argv[2])))
