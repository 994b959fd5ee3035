"""The gate's decision over repeated gold and empty runs (``coderl eval swe-gate --repeats N``):
flaky tests apart from broken ones, a flaky PASS_TO_PASS test dropped with its record, a flaky
FAIL_TO_PASS test making the row flaky. Grade results are made here (the grader's own runs are in
tests/swe/test_swe_bench_rows.py)."""

from __future__ import annotations

from coderl.eval.swe_gate import gate_record, gate_summary, kept_row
from coderl.swe.grade_status import GradeStatus
from coderl.swe.grader import GradeResult
from coderl.swe.task import RepoTask

TASK = RepoTask(instance_id="r-1", repo="o/r", base_commit="0" * 40, problem_statement="",
                fail_to_pass=("t.py::f",), pass_to_pass=("t.py::a", "t.py::b", "t.py::c"))


def run(status: str, f: str, a: str = "PASSED", b: str = "PASSED", c: str = "PASSED") -> GradeResult:
    return GradeResult("r-1", GradeStatus(status), None, fail_to_pass={"t.py::f": f},
                       pass_to_pass={"t.py::a": a, "t.py::b": b, "t.py::c": c})


def test_stable_runs_keep_the_row():
    rec = gate_record(TASK, [run("resolved", "PASSED")] * 3, [run("unresolved", "FAILED")] * 3)
    assert rec["kept"] and rec["category"] == "kept" and rec["p2p_flaky"] == {} and rec["gold"] == "resolved"


def test_a_flaky_pass_to_pass_test_is_dropped_not_the_row():
    golds = [run("resolved", "PASSED"), run("unresolved", "PASSED", b="FAILED"), run("resolved", "PASSED")]
    empties = [run("unresolved", "FAILED", c="FAILED")] * 3  # c fails every empty run: not flaky, kept
    rec = gate_record(TASK, golds, empties)
    assert rec["kept"] and set(rec["p2p_flaky"]) == {"t.py::b"} and rec["p2p_dropped"] == {}
    assert rec["p2p_flaky"]["t.py::b"].startswith("gold PASSED/FAILED/PASSED")
    assert rec["gold"] == "resolved x2, unresolved x1"
    row = kept_row(TASK.to_row(), rec)
    assert row["PASS_TO_PASS"] == ["t.py::a", "t.py::c"] and row["gate"]["p2p_flaky"] == rec["p2p_flaky"]


def test_broken_apart_from_flaky():
    drift = gate_record(TASK, [run("unresolved", "PASSED", a="FAILED")] * 2, [run("unresolved", "FAILED")] * 2)
    assert drift["kept"] and set(drift["p2p_dropped"]) == {"t.py::a"} and drift["p2p_flaky"] == {}
    flaky = gate_record(TASK, [run("resolved", "PASSED"), run("unresolved", "FAILED")], [run("unresolved", "FAILED")] * 2)
    assert not flaky["kept"] and flaky["category"] == "flaky" and set(flaky["f2p_flaky"]) == {"t.py::f"}
    sometimes = gate_record(TASK, [run("resolved", "PASSED")] * 2, [run("unresolved", "FAILED"), run("resolved", "PASSED")])
    assert sometimes["category"] == "flaky"  # the empty patch resolves it once in two
    broken = gate_record(TASK, [run("unresolved", "FAILED")] * 2, [run("unresolved", "FAILED")] * 2)
    assert broken["category"] == "gold_not_resolved"
    infra = gate_record(TASK, [run("resolved", "PASSED"), run("sandbox_error", "missing")], [run("unresolved", "FAILED")] * 2)
    assert infra["category"] == "gold_sandbox_error" and not infra["kept"]


def test_the_summary_counts_dropped_tests_of_kept_rows_only():
    kept = gate_record(TASK, [run("unresolved", "PASSED", a="FAILED")], [run("unresolved", "FAILED")])
    infra = gate_record(TASK, [run("sandbox_error", "missing", "missing", "missing", "missing")],
                        [run("sandbox_error", "missing", "missing", "missing", "missing")])
    assert len(infra["p2p_dropped"]) == 3  # every test "missing": the record says so, the count must not
    summary = gate_summary([kept, infra], repeats=1)
    assert summary["kept"] == 1 and summary["broken_rows"] == 1 and summary["p2p_dropped"] == 1
