"""The gate's relabelling (``coderl eval swe-gate``): a listed FAIL_TO_PASS test that passes with the
empty patch in every run moves to PASS_TO_PASS with a record; a row none of whose listed
FAIL_TO_PASS tests tells the fix from no fix gets its FAIL_TO_PASS from the tests its own test
patch adds or changes that fail with the empty patch and pass with gold in every run (as
SWE-smith / SWE-Gym label rows); never on runs that were not clean. Grade results are made here,
plus one real gate (default tier, a few seconds with the builtin task's environment built) over
a builtin task given a test patch and a FAIL_TO_PASS list that passes unfixed (psf__requests-863's
shape)."""

from __future__ import annotations

import asyncio
import json

from coderl.cache import default_cache_dir
from coderl.eval.swe import SweEvalConfig, load_tasks, official_labels
from coderl.eval.swe_gate import (
    can_derive,
    changed_lines,
    derived_record,
    gate_record,
    gate_summary,
    kept_row,
    run_gate,
)
from coderl.swe.grade_status import GradeStatus
from coderl.swe.grader import GradeResult
from coderl.swe.task import RepoTask
from coderl.swe.task_set import build_task_set

TASK = RepoTask(instance_id="r-1", repo="o/r", base_commit="0" * 40, problem_statement="",
                fail_to_pass=("t.py::f", "t.py::g"), pass_to_pass=("t.py::a",))


def result(status: str, f2p: dict[str, str], p2p: dict[str, str] | None = None, message: str = "") -> GradeResult:
    return GradeResult("r-1", GradeStatus(status), None, fail_to_pass=f2p,
                       pass_to_pass=p2p if p2p is not None else {"t.py::a": "PASSED"}, message=message)


def test_a_listed_test_that_passes_unfixed_moves_to_pass_to_pass_with_a_record():
    golds = [result("resolved", {"t.py::f": "PASSED", "t.py::g": "PASSED"})] * 2
    empties = [result("unresolved", {"t.py::f": "FAILED", "t.py::g": "PASSED"})] * 2
    rec = gate_record(TASK, golds, empties)
    assert rec["kept"] and rec["f2p_no_signal"] == ["t.py::g"] and "moved to PASS_TO_PASS" in rec["why"]
    row = kept_row(TASK.to_row(), rec)
    assert row["FAIL_TO_PASS"] == ["t.py::f"] and row["PASS_TO_PASS"] == ["t.py::a", "t.py::g"]
    relabelled = row["gate"]["relabelled"]
    assert relabelled["FAIL_TO_PASS"] == {"was": ["t.py::f", "t.py::g"], "now": ["t.py::f"]}
    assert relabelled["moved_to_p2p"] == ["t.py::g"] and relabelled["PASS_TO_PASS"]["added"] == ["t.py::g"]
    # SWE-bench's own lists stay with the row, for official-label numbers
    assert official_labels(row)["FAIL_TO_PASS"] == ["t.py::f", "t.py::g"]
    assert official_labels(row)["PASS_TO_PASS"] == ["t.py::a"]
    assert gate_summary([{**rec, "relabelled": relabelled}], repeats=2)["kept_relabelled"] == 1
    # a test passing unfixed once in two runs is flaky, never moved: the row is flaky
    once = [result("unresolved", {"t.py::f": "FAILED", "t.py::g": "PASSED"}),
            result("unresolved", {"t.py::f": "FAILED", "t.py::g": "FAILED"})]
    assert gate_record(TASK, golds, once)["category"] == "flaky"
    # a row that keeps its labels carries no relabelling and no official copy
    plain = kept_row(TASK.to_row(), gate_record(TASK, golds, [result("unresolved", {"t.py::f": "FAILED",
                                                                                      "t.py::g": "FAILED"})] * 2))
    assert "relabelled" not in plain["gate"] and "official" not in plain["gate"] and official_labels(plain) == plain


def test_changed_lines_of_a_test_patch():
    patch = ("diff --git a/tests/t.py b/tests/t.py\n--- a/tests/t.py\n+++ b/tests/t.py\n@@ -3,4 +3,6 @@ def x():\n"
             " a\n-b\n+c\n+d\n e\n+f\n g\n@@ -20,2 +22,1 @@\n h\n-i\n"
             "diff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -1 +1 @@\n-x\n+y\n")
    assert changed_lines(patch) == {"tests/t.py": {3, 4, 5, 7, 22, 23}}


def test_derivation_keeps_only_tests_failing_unfixed_and_passing_with_gold_on_clean_runs():
    empty_resolves = gate_record(TASK, [result("resolved", {"t.py::f": "PASSED", "t.py::g": "PASSED"})],
                                 [result("resolved", {"t.py::f": "PASSED", "t.py::g": "PASSED"})])
    assert empty_resolves["category"] == "empty_resolves" and can_derive(empty_resolves)
    runs = {"t.py::f": "PASSED", "t.py::g": "PASSED"}
    golds = [result("resolved", {"t.py::new": "PASSED", "t.py::same": "PASSED", "t.py::broke": "FAILED"}, {**runs, "t.py::a": "PASSED"})] * 2
    empties = [result("unresolved", {"t.py::new": "FAILED", "t.py::same": "PASSED", "t.py::broke": "FAILED"},
                      {**runs, "t.py::a": "PASSED"})] * 2
    rec = derived_record(TASK, empty_resolves, ["t.py::new", "t.py::same", "t.py::broke"], golds, empties)
    assert rec["kept"] and rec["derivation"]["derived"] == {"t.py::new": "gold PASSED/PASSED; empty FAILED/FAILED"}
    row = kept_row(TASK.to_row(), rec)
    assert row["FAIL_TO_PASS"] == ["t.py::new"] and row["PASS_TO_PASS"] == ["t.py::a", "t.py::f", "t.py::g"]
    assert row["gate"]["relabelled"]["derived"] == rec["derivation"]["derived"]
    assert row["gate"]["official"]["FAIL_TO_PASS"] == ["t.py::f", "t.py::g"]
    # a derivation run with a sandbox error relabels nothing: the row stays dropped as it was
    bad = [golds[0], result("sandbox_error", {}, {}, "the sandbox failed")]
    assert derived_record(TASK, empty_resolves, ["t.py::new"], bad, empties)["category"] == "empty_resolves"
    # a grader that passes everything derives nothing
    everything = [result("resolved", {"t.py::new": "PASSED"}, {**runs, "t.py::a": "PASSED"})] * 2
    none = derived_record(TASK, empty_resolves, ["t.py::new"], everything, everything)
    assert not none["kept"] and none["category"] == "empty_resolves" and "no test" in none["derivation"]["why"]
    # a row whose listed tests tell gold from empty is never derived; nor one graded sandbox_error
    assert not can_derive(gate_record(TASK, golds[:1], [result("unresolved", {"t.py::f": "FAILED", "t.py::g": "FAILED"})]))
    assert not can_derive(gate_record(TASK, [result("sandbox_error", {}, {})], empties[:1]))


def test_the_gate_relabels_a_real_row_from_its_test_patch(tmp_path):
    """A builtin task made psf__requests-863-shaped: its FAIL_TO_PASS lists a test that passes
    unfixed; its test patch changes an existing test and adds two (one failing unfixed and passing
    with the fix, one passing either way). The base tree's own failing test, which the test patch
    does not touch, is never derived."""
    task = build_task_set(tmp_path)[0]  # caesar: the fix wraps around the alphabet
    assert task.instance_id == "coderl__caesar-1"
    test_patch = ("diff --git a/tests/test_cipher.py b/tests/test_cipher.py\n--- a/tests/test_cipher.py\n"
                  "+++ b/tests/test_cipher.py\n@@ -10,7 +10,7 @@ def test_other_characters_unchanged():\n"
                  " \n \n def test_empty():\n-    assert encrypt(\"\", 5) == \"\"\n+    assert encrypt(\"\", 6) == \"\"\n"
                  " \n \n def test_wraps_around():\n@@ -17,2 +17,10 @@ def test_wraps_around():\n"
                  "     assert encrypt(\"xyz\", 3) == \"abc\"\n     assert encrypt(\"z\", 1) == \"a\"\n+\n+\n"
                  "+def test_z_to_a():\n+    assert encrypt(\"z\", 1) == \"a\"\n+\n+\n+def test_plain():\n"
                  "+    assert encrypt(\"ab\", 1) == \"bc\"\n")
    row = {**task.to_row(), "test_patch": test_patch, "FAIL_TO_PASS": ["tests/test_cipher.py::test_simple_shift"],
           "PASS_TO_PASS": ["tests/test_cipher.py::test_other_characters_unchanged", "tests/test_cipher.py::test_empty"]}
    (tmp_path / "rows.jsonl").write_text(json.dumps(row) + "\n")
    summary = asyncio.run(run_gate(str(tmp_path / "rows.jsonl"), tmp_path / "repos", tmp_path / "gate",
                                   cache_dir=default_cache_dir()))
    gate = json.loads((tmp_path / "gate" / "gate.json").read_text())
    assert summary["kept"] == 1 and summary["kept_relabelled"] == 1, json.dumps(gate, indent=1)[:3000]
    rec = gate["instances"][0]
    assert rec["derivation"]["candidates"] == ["tests/test_cipher.py::test_empty", "tests/test_cipher.py::test_z_to_a",
                                               "tests/test_cipher.py::test_plain"], rec["derivation"]
    assert rec["relabelled"]["FAIL_TO_PASS"] == {"was": ["tests/test_cipher.py::test_simple_shift"],
                                                 "now": ["tests/test_cipher.py::test_z_to_a"]}
    assert rec["listed"]["category"] == "empty_resolves"
    kept = json.loads((tmp_path / "gate" / "tasks.jsonl").read_text())
    assert kept["FAIL_TO_PASS"] == ["tests/test_cipher.py::test_z_to_a"]
    assert kept["PASS_TO_PASS"] == ["tests/test_cipher.py::test_other_characters_unchanged",
                                    "tests/test_cipher.py::test_empty", "tests/test_cipher.py::test_simple_shift"]
    assert kept["gate"]["official"]["FAIL_TO_PASS"] == ["tests/test_cipher.py::test_simple_shift"]
    assert "relabelled" in (tmp_path / "gate" / "gate.md").read_text()
    # `coderl eval swe` grades the gate's lists by default, SWE-bench's with --labels official
    def lists(labels: str) -> tuple:
        cfg = SweEvalConfig(tasks=str(tmp_path / "gate"), out_dir=str(tmp_path / "eval"), cache_dir=default_cache_dir(),
                            repos=str(tmp_path / "repos"), labels=labels)
        (loaded,), _ = load_tasks(cfg)
        return loaded.fail_to_pass, loaded.pass_to_pass

    assert lists("row") == (tuple(kept["FAIL_TO_PASS"]), tuple(kept["PASS_TO_PASS"]))
    assert lists("official") == (tuple(row["FAIL_TO_PASS"]), tuple(row["PASS_TO_PASS"]))
