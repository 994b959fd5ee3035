"""The README's main job, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys


def test_demo_scores_real_problems_end_to_end(tmp_path):
    out = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "coderl.cli", "demo", "--json", str(out)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["isolation"] == "bwrap" and report["all_as_expected"]
    names = {r["set"] for r in report["rows"]}
    assert "HumanEval canonical solutions" in names and "hostile programs" in names
    assert {"Repository tasks, gold patch (coderl's own)", "Repository tasks, empty patch"} <= names
    assert "all as expected" in done.stdout
