"""Reading a Django grading run back (``pytest_inside/django_runner.py``'s records): per-test verdicts
and the run's `GradeStatus`, with the supervisor's stream read and the files checked as
``coderl.swe.verdicts`` does for pytest (same HMAC and sequence checks, same blob comparisons).

A test passes when its one ``test`` record says the standard library's ``TestCase.run`` reported a
success with no failed subtest, and our own view of the call agrees (the test method was called
once and raised nothing; Python 3.8+, where unittest calls it through ``_callTestMethod``). A wanted test with no record is ``missing``. Skips and expected failures
never pass (SWE-bench's Django log parser reads neither as passed).

``tampered`` (reward 0): a forged or out-of-sequence record (or one the launcher's writer marks
``forged``: sent by code that is not the grader's); a success reported for a call that
raised or never happened, or for a test one of whose parts (set-up, call, subtest, tear-down) was
sent as failed while it ran; a test class whose ``_callTestMethod`` is not ours; test code that is not
what its pristine file compiles to; a test module or test method file whose bytes are not the base
commit's (or the test patch's); a ``rewrite`` record (a class of ``unittest`` changed, a code swap,
a trace hook, raw memory through ctypes); our wrappers not in place at the end; exit status 0
before ``runtests.py`` finished, or with failures recorded; ``runtests.py``'s status not the
process's.
"""

from __future__ import annotations

from collections import defaultdict

from coderl.sandbox.session import ExecResult
from coderl.swe.grade_status import GradeStatus
from coderl.swe.pytest_inside.launcher import EXIT_LAUNCHER, EXIT_NO_RUNNER
from coderl.swe.verdicts import RunVerdicts, cut_short, file_findings, read_stream


def decide_unittest(run: ExecResult, nonce: str, fail_to_pass: tuple[str, ...], pass_to_pass: tuple[str, ...],
                    base: dict[str, str]) -> RunVerdicts:
    """The run's verdicts and status. ``base``: path -> git blob id of the base commit's files."""
    stream = read_stream(run.stdout, nonce)
    kinds: dict[str, list[dict]] = defaultdict(list)
    for r in stream.records:
        kinds[r.get("kind", "")].append(r)
    if stream.exit is not None and not kinds["start"] and not stream.findings and \
            stream.exit.get("exit_code") in (EXIT_NO_RUNNER, EXIT_LAUNCHER):
        return RunVerdicts(GradeStatus.SANDBOX_ERROR, message="the grading run could not start: " + run.stderr.strip()[-300:])
    by_id, findings = _per_test(kinds["test"], kinds["part_failed"])
    f2p = {t: by_id.get(t, {}).get("status", "missing") for t in fail_to_pass}
    p2p = {t: by_id.get(t, {}).get("status", "missing") for t in pass_to_pass}
    cut = cut_short(run)
    if cut:
        return RunVerdicts(GradeStatus.UNRESOLVED, f2p, p2p, message=cut)
    findings = [*stream.findings, *findings, *(f"rewritten at run time: {r.get('what')}" for r in kinds["rewrite"][:10]),
                *(f"a record sent by code that is not the grader's ({r.get('by')})" for r in kinds["forged"][:10])]
    items = [{"origin": r["origin"]} for r in kinds["test"] if r.get("origin")]
    findings += file_findings(defaultdict(list, module=kinds["module"], item=items), stream.protected or {}, base)
    why = _ending(stream.exit, kinds["finish"], findings)
    if findings:
        return RunVerdicts(GradeStatus.TAMPERED, f2p, p2p, findings, "; ".join(findings)[:1000])
    if why:
        return RunVerdicts(GradeStatus.UNRESOLVED, f2p, p2p, message=why)
    resolved = all(by_id.get(t, {}).get("passed", False) for t in (*fail_to_pass, *pass_to_pass))
    return RunVerdicts(GradeStatus.RESOLVED if resolved else GradeStatus.UNRESOLVED, f2p, p2p)


def _per_test(records: list[dict], failed_parts: list[dict]) -> tuple[dict[str, dict], list[str]]:
    """Every name of each recorded test -> its status and whether it passed; the findings. A part
    of a test (set-up, the call, a subtest, tear-down) sent as failed while it ran makes the test
    fail whatever its outcome says, and a ``PASSED`` outcome with one is a finding."""
    out: dict[str, dict] = {}
    findings = []
    failed = {p["ids"][0] for p in failed_parts}
    for r in records:
        name = r["ids"][0]
        status, calls = r["status"], r.get("calls", [])
        if name in failed and status == "PASSED":
            findings.append(f"{name}: reported passed, but a part of it failed while it ran")
            status = "FAILED"
        if r.get("call_overridden"):
            findings.append(f"{name}: its class's _callTestMethod is not unittest's")
        if r.get("foreign_code"):
            findings.append(f"{name}: test code not compiled from its file: {', '.join(r['foreign_code'][:3])}")
        call_agrees = calls == [None] or not r.get("call_seen", True)
        if status == "PASSED" and not call_agrees:
            findings.append(f"{name}: reported passed, but its call " +
                            (f"raised {calls[-1]}" if calls and calls[-1] else "did not happen once"))
        passed = status == "PASSED" and call_agrees
        for test_id in r["ids"]:
            if test_id in out and out[test_id]["status"] != status:  # run twice: the worse counts
                passed = False
            out[test_id] = {"status": status if passed or status != "PASSED" else "FAILED", "passed": passed}
    return out, findings


def _ending(exit_: dict | None, finish: list[dict], findings: list[str]) -> str:
    """Why the verdicts cannot stand ('' when they can); adds what only a patch against the grader causes."""
    if exit_ is None:
        findings.append("the supervisor did not report how the test process ended")
        return ""
    code, signal = exit_.get("exit_code"), exit_.get("signal")
    if not finish:
        if code == 0:
            findings.append("the test process exited 0 before runtests.py finished")
            return ""
        return f"the test process ended before runtests.py finished ({f'signal {signal}' if signal else f'exit {code}'})"
    last = finish[-1]
    if len(finish) > 1:
        findings.append("runtests.py finished more than once")
    if last.get("replaced"):
        findings.append(f"replaced during the run: unittest's {', '.join(last['replaced'])}")
    if code != last["exitstatus"]:
        findings.append(f"exit status {code}, but runtests.py's was {last['exitstatus']}")
    if last["exitstatus"] == 0 and last["failures"]:
        findings.append(f"runtests.py exited 0 with {last['failures']} tests not passing")
    if not last["ran"]:
        return "runtests.py ran no test"
    return ""
