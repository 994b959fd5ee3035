"""Reading a grading run back: per-test verdicts from the reporter's records, cross-checked, and the
run's `GradeStatus` (``resolved``, ``unresolved``, ``tampered``; ``sandbox_error`` when pytest never started).

The input is what the launcher's supervisor wrote on the command's stdout (``E`` the protected files'
blob ids before the run, ``R`` the reporter's records, ``X`` the test process's real exit status)
and the nonce the host gave the run. The log (stderr) is never read for verdicts.

A test passes when pytest's report of its call passed (``PASSED``, or ``XPASS``: it was expected
to fail and did not), its set-up and tear-down passed, and our own view of the call agrees (it
raised nothing). ``XFAIL`` passes only for a test the test file itself marks ``xfail``; a skip
never passes; a test with no records is ``missing``.

``tampered`` (reward 0) is any inconsistency only a patch working against the grader produces:
a record whose HMAC or sequence is wrong, one the launcher's writer marked ``forged`` (sent by code
that is not the grader's), a record written twice, out of order or after pytest finished
(``_order``); a report that disagrees with what the call raised; a
test module, conftest, plugin, runner-named module or the file a test function's code comes from
whose bytes are not the base commit's (or,
for the test files, what they were before the run); a function of pytest, pluggy or the reporter
or a hook implementation replaced during the run; a ``rewrite`` record (a wanted test's code is
not what its pristine file compiles to, what it closes over changed, a test function's code set,
a trace or profile hook or ctypes' raw memory access from the code under test:
``pytest_inside/rewrites.py``); an exit status that disagrees with pytest's
own or with the failures reported (a nonzero exit with no failure, exit 0 with one); exit 0
before pytest finished; fewer tests set up than were collected.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections import defaultdict
from dataclasses import dataclass, field

from coderl.sandbox.session import ExecResult
from coderl.swe.grade_status import GradeStatus
from coderl.swe.pytest_inside.launcher import EXIT_LAUNCHER, EXIT_NO_RUNNER

PASSING = frozenset({"PASSED", "XPASS"})
_PYTEST_EXITS = {2: "pytest was interrupted (a collection error, or the run was stopped)", 3: "pytest hit an internal error",
                 4: "pytest rejected its command line or configuration", 5: "pytest collected no tests"}


@dataclass
class RunVerdicts:
    status: GradeStatus  # resolved, unresolved, tampered or sandbox_error
    fail_to_pass: dict[str, str] = field(default_factory=dict)
    pass_to_pass: dict[str, str] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)
    message: str = ""


@dataclass
class _Stream:
    protected: dict | None = None
    records: list[dict] = field(default_factory=list)
    exit: dict | None = None
    findings: list[str] = field(default_factory=list)


def read_stream(stdout: str, nonce: str) -> _Stream:
    """The supervisor's lines, each record's HMAC and sequence number checked."""
    out = _Stream()
    key = nonce.encode()
    for line in stdout.splitlines():
        tag, _, body = line.partition(" ")
        if out.exit is not None:
            out.findings.append("output after the supervisor's last line")
            break
        if tag in ("E", "X"):
            try:
                value = json.loads(body)
            except ValueError:
                out.findings.append(f"an unreadable supervisor line: {line[:120]!r}")
                continue
            if tag == "X":
                out.exit = value
            elif out.protected is None and not out.records:
                out.protected = value["protected"]
            else:
                out.findings.append("the protected files' hashes after the run began")
        elif tag == "R":
            mac, _, text = body.partition(" ")
            expected = hmac.new(key, text.encode(), hashlib.sha256).hexdigest()
            if not hmac.compare_digest(mac, expected):
                out.findings.append(f"a record not written by the reporter: {body[:120]!r}")
                continue
            record = json.loads(text)
            if record.get("seq") != len(out.records):
                out.findings.append(f"record {record.get('seq')} out of sequence (expected {len(out.records)})")
            if record.get("kind") == "forged":
                out.findings.append(f"a record sent by code that is not the grader's ({record.get('by')})")
            out.records.append(record)
        else:
            out.findings.append(f"a line the supervisor did not write: {line[:120]!r}")
    return out


def decide(run: ExecResult, nonce: str, fail_to_pass: tuple[str, ...], pass_to_pass: tuple[str, ...],
           base: dict[str, str]) -> RunVerdicts:
    """The run's verdicts and status. ``base``: path -> git blob id of the base commit's files."""
    stream = read_stream(run.stdout, nonce)
    records = stream.records
    kinds = defaultdict(list)
    for r in records:
        kinds[r.get("kind")].append(r)
    started = bool(kinds["start"])
    if stream.exit is not None and not started and not stream.findings and \
            stream.exit.get("exit_code") in (EXIT_NO_RUNNER, EXIT_LAUNCHER):
        return RunVerdicts(GradeStatus.SANDBOX_ERROR, message="the grading run could not start pytest: "
                                                              + run.stderr.strip()[-300:])
    per_test = _per_test(kinds)
    f2p = {t: per_test.get(t, ("missing", False))[0] for t in fail_to_pass}
    p2p = {t: per_test.get(t, ("missing", False))[0] for t in pass_to_pass}
    cut = cut_short(run)
    if cut:  # the records may end in the middle of a line: what they hold is not judged
        return RunVerdicts(GradeStatus.UNRESOLVED, f2p, p2p, message=cut)
    findings = [*stream.findings, *_order(records), *_consistency(kinds), *file_findings(kinds, stream.protected or {}, base)]
    why = _incomplete(stream, kinds, findings)
    if findings:
        return RunVerdicts(GradeStatus.TAMPERED, f2p, p2p, findings, "; ".join(findings)[:1000])
    if why:
        return RunVerdicts(GradeStatus.UNRESOLVED, f2p, p2p, message=why)
    resolved = all(per_test.get(t, ("missing", False))[1] for t in (*fail_to_pass, *pass_to_pass))
    return RunVerdicts(GradeStatus.RESOLVED if resolved else GradeStatus.UNRESOLVED, f2p, p2p)


def _per_test(kinds: dict) -> dict[str, tuple[str, bool]]:
    """test id -> (pytest's status, or ``missing``; whether it counts as passing)."""
    marked = {r["id"]: r["xfail"] for r in kinds["item"]}
    phases: dict[str, dict[str, dict]] = defaultdict(dict)
    failed_subtests = {r["id"] for r in kinds["report"] if r.get("sub") and r["outcome"] == "failed"}
    for r in kinds["report"]:
        if not r.get("sub"):
            phases[r["id"]][r["when"]] = r
    out = {}
    for test, xfail_marked in marked.items():
        got = phases.get(test, {})
        setup, call, teardown = got.get("setup"), got.get("call"), got.get("teardown")
        if setup is None:
            status = "missing"
        elif setup["outcome"] == "failed":
            status = "ERROR"
        elif setup["outcome"] == "skipped":
            status = "XFAIL" if setup["xfail"] else "SKIPPED"
        elif call is None:
            status = "missing"
        elif call["outcome"] == "passed":
            status = "XPASS" if call["xfail"] else "PASSED"
        elif call["outcome"] == "skipped":
            status = "XFAIL" if call["xfail"] else "SKIPPED"
        else:
            status = "FAILED"
        if status in PASSING and (teardown is None or teardown["outcome"] == "failed"):
            status = "ERROR" if teardown is not None else "missing"
        if status in PASSING and test in failed_subtests:  # a subtest of it failed
            status = "FAILED"
        out[test] = (status, status in PASSING or (status == "XFAIL" and xfail_marked))
    return out


ONCE = ("start", "collected", "finish", "exit")  # the run's own records: each written once
AFTER_FINISH = frozenset({"rewrite", "forged", "plugin", "exit"})  # what pytest's end may still bring


def _order(records: list[dict]) -> list[str]:
    """Records in an order only the reporter's run writes: the launcher's ``start`` first; the run's
    own records once each; a test's item once, and a phase's report again only after pytest-
    rerunfailures marked the earlier one ``rerun``; after ``finish`` only findings and ``exit``,
    after ``exit`` nothing."""
    found = []
    if records and records[0].get("kind") != "start":
        found.append(f"the first record is {records[0].get('kind')!r}, not the launcher's start")
    seen: dict[tuple, str] = {}
    finished = exited = False
    for r in records:
        kind = r.get("kind")
        if exited or (finished and kind not in AFTER_FINISH):
            found.append(f"a {kind!r} record after pytest {'exited' if exited else 'finished'}")
        finished, exited = finished or kind == "finish", exited or kind == "exit"
        key = (kind,) if kind in ONCE else (kind, r.get("id")) if kind == "item" else \
            (kind, r.get("id"), r.get("when")) if kind == "report" and not r.get("sub") else None
        if key is None:
            continue
        if key in seen and seen[key] != "rerun":
            found.append(f"a second {kind!r} record{f' for {key[1]}' if len(key) > 1 else ''}")
        seen[key] = r.get("outcome", "")
    return found[:10]


def _consistency(kinds: dict) -> list[str]:
    """Reports against our own view of each call."""
    found = []
    raised = {r["id"]: r["raised"] for r in kinds["call"]}
    for r in kinds["report"]:
        if r["when"] != "call" or r.get("sub"):
            continue
        if r["id"] not in raised:
            found.append(f"{r['id']}: a call report without the call")
        elif r["outcome"] == "passed" and raised[r["id"]] is not None:
            found.append(f"{r['id']}: reported passed, but its call raised ({raised[r['id']]})")
        elif r["outcome"] == "skipped" and raised[r["id"]] is None:
            found.append(f"{r['id']}: reported skipped, but its call raised nothing")
    found += [f"rewritten at run time: {r.get('what')}" for r in kinds["rewrite"][:10]]
    for r in [*kinds["finish"], *kinds["exit"]]:
        if r.get("replaced"):
            found.append(f"replaced during the run: {', '.join(r['replaced'][:5])}")
            break
    return found


def file_findings(kinds: dict, protected: dict, base: dict[str, str]) -> list[str]:
    """Every test module, plugin, conftest and runner-named file from the work tree must hold the
    base commit's bytes (the protected files: what they held before the run)."""
    found = []
    checked = [("test module", r) for r in kinds["module"]] + [("plugin", r) for r in kinds["plugin"]]
    checked += [("test function's source", r["origin"]) for r in kinds["item"] if r.get("origin")]
    for r in kinds["start"]:
        checked += [("file shadowing the runner", s) for s in r.get("shadows", [])]
    for r in kinds["finish"]:
        checked += [("module shadowing the standard library or the runner", s) for s in r.get("shadowed", [])]
        checked += [("native extension module", s) for s in r.get("native", [])]
    for what, r in checked:
        path = r.get("path")
        if path is None:
            found.append(f"a {what} without a source file")
        elif not r.get("in_repo", True) and what != "file shadowing the runner":
            found.append(f"a {what} from outside the work tree and the environment: {path}")
        elif r.get("blob") is None:  # a directory
            if not any(p.startswith(path.rstrip("/") + "/") for p in base):
                found.append(f"a {what} the base commit does not have: {path}")
        elif path not in protected and path not in base:
            found.append(f"a {what} the base commit does not have: {path}")
        elif r["blob"] != (protected[path] if path in protected else base[path]):
            found.append(f"a {what} changed from the base commit: {path}")
    return found


def cut_short(run: ExecResult) -> str:
    """Why the sandbox ended the run before it could finish ('' when it did not)."""
    if run.timed_out:
        return "tests timed out"
    if run.oom_killed:
        return "out of memory"
    if run.stdout_truncated or run.output_limit:
        return "the run's records exceeded the output limit"
    return ""


def _incomplete(stream: _Stream, kinds: dict, findings: list[str]) -> str:
    """Why the run's verdicts cannot stand ('' when they can); adds to ``findings`` what only a
    patch working against the grader causes."""
    if stream.exit is None:
        findings.append("the supervisor did not report how the test process ended")
        return ""
    code, signal = stream.exit.get("exit_code"), stream.exit.get("signal")
    finish, done = kinds["finish"], kinds["exit"]
    if not finish or not done:
        if code == 0:
            findings.append("the test process exited 0 before pytest finished")
            return ""
        return f"the test process ended before pytest finished ({f'signal {signal}' if signal else f'exit {code}'})"
    status, ret = finish[-1]["exitstatus"], done[-1]["ret"]
    if len(finish) > 1 or len(done) > 1:
        findings.append("pytest finished more than once")
    if ret != status or code != ret:
        findings.append(f"exit status {code}, but pytest's was {status} (returned {ret})")
    failures = finish[-1]["failures"]
    if status == 0 and failures:
        findings.append(f"exit status 0 with {failures} failures reported")
    if status == 1 and not failures:
        findings.append("exit status 1 (tests failed) with no failure reported")
    if status == 0 and finish[-1]["setups"] != finish[-1]["collected"]:
        findings.append(f"{finish[-1]['collected']} tests collected, {finish[-1]['setups']} set up")
    return _PYTEST_EXITS.get(status, "")
