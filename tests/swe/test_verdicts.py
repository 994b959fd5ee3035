"""``coderl.swe.verdicts`` on record streams written by the launcher's own sender (HMAC, sequence),
for the cross-checks no red-team patch reaches on its own: exit statuses against the failures, a
missing record, the launcher's own exits before and after the run starts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from coderl.sandbox.session import ExecResult
from coderl.swe.pytest_inside.launcher import EXIT_NO_RUNNER
from coderl.swe.verdicts import decide

NONCE = "n" * 64
T = "tests/test_x.py::test_a"


# The launcher's sender is an audit hook for the rest of its process (no hook can be removed) and
# keeps objects away from the garbage collector until the process ends (os._exit): each stream is written by a
# process of its own, as in a grading run, with the one function that sends as the grader's code.
_WRITE = """
import json, os, sys
from coderl.swe.pytest_inside.launcher import sender
def emit(send, records):
    for kind, fields in records:
        send(kind, **fields)
emit(sender(1, sys.argv[1].encode(), [emit.__code__]), json.loads(sys.stdin.read()))
os._exit(0)  # as the launcher ends: no finalization of what the sender keeps from the collector
"""


def stream(records: list[tuple[str, dict]], exit_code: int | None = 0, drop: int | None = None) -> str:
    """The supervisor's stdout for these records, written through the launcher's sender."""
    proc = subprocess.run([sys.executable, "-c", _WRITE, NONCE], input=json.dumps(records), capture_output=True,
                          text=True, timeout=60, check=True)
    lines = [f"R {line}" for line in proc.stdout.splitlines()]
    if drop is not None:
        del lines[drop]
    out = ["E " + json.dumps({"protected": {}}), *lines]
    if exit_code is not None:
        out.append("X " + json.dumps({"exit_code": exit_code, "signal": None}))
    return "\n".join(out) + "\n"


def run_of(records, exit_code=0, drop=None, **kw) -> ExecResult:
    return ExecResult.of_command(exit_code=0, signal=None, timed_out=kw.pop("timed_out", False),
                                 stdout=stream(records, exit_code, drop), stderr="log", **kw)


def passing(outcome: str = "passed", raised: str | None = None, xfail_marked: bool = False, status: int = 0,
            failures: int = 0, setups: int = 1) -> list[tuple[str, dict]]:
    xfail = outcome == "skipped"
    return [("start", {"pytest": "9", "runner": {}, "shadows": []}),
            ("item", {"id": T, "xfail": xfail_marked}), ("collected", {"n": 1}),
            ("report", {"id": T, "when": "setup", "outcome": "passed", "xfail": False}),
            ("call", {"id": T, "raised": raised}),
            ("report", {"id": T, "when": "call", "outcome": outcome, "xfail": xfail}),
            ("report", {"id": T, "when": "teardown", "outcome": "passed", "xfail": False}),
            ("finish", {"exitstatus": status, "failures": failures, "setups": setups, "collected": 1,
                        "shadowed": [], "replaced": []}),
            ("exit", {"ret": status, "replaced": []})]


def verdict(run: ExecResult):
    return decide(run, NONCE, (T,), (), {})


def test_a_consistent_passing_run_resolves():
    v = verdict(run_of(passing()))
    assert (v.status, v.fail_to_pass, v.findings) == ("resolved", {T: "PASSED"}, [])


@pytest.mark.parametrize(("records", "exit_code", "finding"), [
    (passing(status=0, failures=1), 0, "exit status 0 with 1 failures"),
    (passing(status=1, failures=0), 1, "exit status 1 (tests failed) with no failure"),
    (passing(), 3, "exit status 3, but pytest's was 0"),
    (passing(setups=0), 0, "1 tests collected, 0 set up"),
    (passing(raised="error"), 0, "reported passed, but its call raised"),
    (passing()[:-2], 0, "exited 0 before pytest finished"),
])
def test_inconsistent_runs_are_tampered(records, exit_code, finding):
    v = verdict(run_of(records, exit_code))
    assert v.status == "tampered" and any(finding in f for f in v.findings), v


def test_a_missing_record_or_a_foreign_line_is_tampered():
    gap = verdict(run_of(passing(), drop=3))
    assert gap.status == "tampered" and any("out of sequence" in f for f in gap.findings), gap
    forged = run_of(passing())
    forged = ExecResult(**{**forged.__dict__, "stdout": forged.stdout.replace("X ", "PASSED tests/test_x.py::test_a\nX ")})
    v = verdict(forged)
    assert v.status == "tampered" and any("did not write" in f for f in v.findings), v


def test_xfail_counts_only_where_the_test_file_marks_it():
    unmarked = verdict(run_of(passing(outcome="skipped", raised="xfail")))
    marked = verdict(run_of(passing(outcome="skipped", raised="xfail", xfail_marked=True)))
    assert (unmarked.status, unmarked.fail_to_pass[T]) == ("unresolved", "XFAIL")
    assert (marked.status, marked.fail_to_pass[T]) == ("resolved", "XFAIL")


def test_the_launchers_own_exit_is_a_sandbox_error_only_before_the_run_starts():
    before = verdict(run_of([], EXIT_NO_RUNNER))
    after = verdict(run_of(passing()[:1], EXIT_NO_RUNNER))
    assert before.status == "sandbox_error" and after.status == "unresolved", (before, after)


def test_records_cut_by_the_output_limit_are_unresolved():
    run = run_of(passing(), stdout_truncated=True)
    cut = ExecResult(**{**run.__dict__, "stdout": run.stdout[:len(run.stdout) // 2]})  # ends mid-record
    v = verdict(cut)
    assert (v.status, v.message) == ("unresolved", "the run's records exceeded the output limit"), v


def test_no_end_of_run_is_unresolved_when_timed_out_and_tampered_otherwise():
    timed_out = verdict(run_of(passing()[:3], None, timed_out=True))
    vanished = verdict(run_of(passing()[:3], None))
    assert (timed_out.status, timed_out.message) == ("unresolved", "tests timed out")
    assert vanished.status == "tampered" and "supervisor did not report" in vanished.message
