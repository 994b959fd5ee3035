"""`coderl eval swe-gate`: the validation gate SWE-bench runs on its own rows, on ours: each task's gold
patch and an empty patch, graded by the real grader in the task's environment. A task is kept when
the gold patch resolves it and the empty one does not. PASS_TO_PASS tests that fail even with the
gold patch (the environment drifted from the one the row was made in) are dropped from the kept
row and recorded with their status; a FAIL_TO_PASS test that fails with the gold patch drops the
task. With ``--repeats N`` both patches are graded N times: a test whose runs disagree is flaky,
reported apart from broken ones (a flaky PASS_TO_PASS test is dropped from the row with its
statuses, ``p2p_flaky``; a flaky FAIL_TO_PASS test makes the row ``flaky``, not kept).

Per instance (``gate.jsonl``, appended as each finishes, so a second run on the same ``--out``
resumes): the environment (built or why not, seconds), the gold and empty statuses, the dropped
tests, kept or why not, as a category (``environment``, ``gold_not_resolved``, ``empty_resolves``,
``flaky``, ``sandbox_error``, ``tampered``, ``gold_cut_short``, ...) and a message. Each run has
SWE-bench's own limit (``GATE_LIMITS``: 1800 s); a run the sandbox cut short (the limit, memory,
output) makes the row ``gold_cut_short`` / ``empty_cut_short``, never drift of the tests it did not
reach. ``tasks.jsonl``: the kept rows, ready for
`coderl eval swe --tasks` and training; ``gate.md``: the table docs/agent.md shows.

A row whose gold patch leaves tests failing (FAIL_TO_PASS, or PASS_TO_PASS it drops) is diagnosed:
those tests run once more with the gold patch, each failure's or skip's own words kept
(``failure_reasons``: the exception line, the skip reason, in the row's record and its message),
so a dropped row says why. A row whose every failing FAIL_TO_PASS test fails reaching the network
(the sandbox has none: a host name that does not resolve, an unreachable network; ``NETWORK``)
is ``needs_network``, not ``gold_not_resolved``: the row is sound, it cannot
be graded offline; dropped PASS_TO_PASS tests that need it are counted as such. When the row's
other FAIL_TO_PASS tests pass with every gold run, are not flaky and do not all pass with the
empty patch, the row is kept without the ones that need the network (``f2p_network`` in its
record and its ``gate``): they can never pass offline, and the rest still tell the fix from no
fix. The diagnosis runs with the environment's test services started, as the grader's runs.

Relabelling (``relabelled`` in a kept row's record and its ``gate``; ``kept_relabelled`` in the
summary): a listed FAIL_TO_PASS test that passes with the empty patch in every run (and with gold
in every run) tells no fix from no fix: it moves to PASS_TO_PASS (``f2p_no_signal``). When no
listed FAIL_TO_PASS test is left that tells them apart (the row is ``empty_resolves``, or
``needs_network`` with the rest passing unfixed), the row's FAIL_TO_PASS is derived by execution,
as SWE-smith and SWE-Gym label their rows: the tests its own test patch adds or changes (their
definitions, in the test patch's files, collected with gold and test patch applied) are graded
with gold and empty as many times as the row's own runs, and those failing every empty run and
passing every gold one become its FAIL_TO_PASS; with none, the row stays dropped. Relabelling
happens only on runs graded without a sandbox error, tampering, a failed apply or a run cut
short (the row's own and the derivation's), and derived tests must fail unfixed: a grader that
passes everything can never keep a row by it. The kept row carries SWE-bench's own lists in
``gate.official`` whenever the gate changed them (``coderl eval swe --labels official``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import shlex
import time
from collections import Counter
from pathlib import Path
from typing import Any

from coderl.data.common import read_rows, write_jsonl
from coderl.errors import BadRequest, CoderlError, MalformedDiff
from coderl.eval.swe import read_records
from coderl.sandbox.session import SessionHost
from coderl.swe.grader import DEFAULT_GRADE_LIMITS, GradeResult, RepoGrader
from coderl.swe.grading_run import INSIDE_DIR, service_env, start_services, test_files
from coderl.swe.patch import split_diff
from coderl.swe.store import RepoStore
from coderl.swe.task import RepoTask

PASSING = frozenset({"PASSED", "XPASS", "XFAIL"})
# what the grader says of a run the sandbox ended before it finished (coderl.swe.verdicts.cut_short):
# the tests it did not reach are missing because of the limit, which says nothing of the row
CUT_SHORT = ("tests timed out", "out of memory", "the run's records exceeded the output limit")
# the gate's grading runs: SWE-bench's own limit per instance (1800 s), not an episode's grading one;
# a test file that takes ten minutes on a loaded machine is no broken row
GATE_LIMITS = dataclasses.replace(DEFAULT_GRADE_LIMITS, episode_s=2400.0, exec_s=1800.0)


def gate_record(task: RepoTask, golds: list[GradeResult], empties: list[GradeResult]) -> dict[str, Any]:
    """Kept or not, and why, from the gold and empty grading runs (as many of each as ``--repeats``;
    ``env`` filled in by the caller).

    A test is flaky when its runs disagree (it passes in some gold runs and not in others, or in
    some empty runs and not in others); broken when it fails every gold run. A flaky or broken
    PASS_TO_PASS test is dropped from the row with its record (``p2p_flaky``, ``p2p_dropped``), the
    row kept; a flaky FAIL_TO_PASS test makes the row ``flaky`` (its reward would be noise), one
    failing every gold run makes it ``gold_not_resolved``."""
    gold, empty = golds[0], empties[0]
    gold_runs = [{**g.fail_to_pass, **g.pass_to_pass} for g in golds]
    empty_runs = [{**e.fail_to_pass, **e.pass_to_pass} for e in empties]

    def passes(runs: list[dict[str, str]], test: str) -> int:
        return sum(run.get(test) in PASSING for run in runs)

    def flaky(test: str) -> bool:
        return 0 < passes(gold_runs, test) < len(golds) or 0 < passes(empty_runs, test) < len(empties)

    def statuses(runs: list[dict[str, str]], test: str) -> str:
        return "/".join(run.get(test, "missing") for run in runs)

    drift = {t: statuses(gold_runs, t) for t in task.pass_to_pass if passes(gold_runs, t) == 0}
    p2p_flaky = {t: f"gold {statuses(gold_runs, t)}; empty {statuses(empty_runs, t)}" for t in task.pass_to_pass
                 if t not in drift and flaky(t)}
    f2p_failing = {t: statuses(gold_runs, t) for t in task.fail_to_pass if passes(gold_runs, t) == 0}
    f2p_flaky = {t: f"gold {statuses(gold_runs, t)}; empty {statuses(empty_runs, t)}" for t in task.fail_to_pass
                 if t not in f2p_failing and flaky(t)}
    # passing every gold and every empty run: no signal, moved to PASS_TO_PASS on a kept row
    f2p_no_signal = [t for t in task.fail_to_pass
                     if passes(gold_runs, t) == len(golds) and passes(empty_runs, t) == len(empties)]
    rec: dict[str, Any] = {"instance_id": task.instance_id, "gold": _runs_status(golds), "empty": _runs_status(empties),
                           "repeats": len(golds), "gold_message": gold.message[:500], "empty_message": empty.message[:500],
                           "gold_findings": gold.findings[:5], "p2p_dropped": drift, "p2p_flaky": p2p_flaky,
                           "f2p_flaky": f2p_flaky, "f2p_no_signal": f2p_no_signal, "kept": False,
                           "gold_s": [g.wall_s for g in golds], "empty_s": [e.wall_s for e in empties],
                           "gold_tests": gold_runs[0], "empty_tests": empty_runs[0]}
    for name, results in (("gold", golds), ("empty", empties)):
        for result in results:
            if result.status.value in ("sandbox_error", "tampered", "apply_failed"):
                return {**rec, "category": f"{name}_{result.status.value}",
                        "why": f"{name} patch graded {result.status.value}: "
                               f"{(result.message or '; '.join(result.findings))[:300]}"}
    for name, results in (("gold", golds), ("empty", empties)):
        for result in results:
            if result.message.startswith(CUT_SHORT):  # its missing tests are the limit's, not drift
                return {**rec, "category": f"{name}_cut_short",
                        "why": f"{name} patch's run cut short: {result.message[:200]} ({result.wall_s:.0f} s)"}
    if f2p_failing:  # with what the rest of the row would be, should the failing ones need the network
        rest = [t for t in task.fail_to_pass if t not in f2p_failing]
        rest_record = {"tests": len(rest), "p2p_kept": len(task.pass_to_pass) - len(drift) - len(p2p_flaky),
                       "empty_resolves": all(passes(empty_runs, t) == len(empties) for t in rest)}
        return {**rec, "category": "gold_not_resolved", "f2p_failing": f2p_failing, "f2p_rest": rest_record,
                "why": f"FAIL_TO_PASS failing with the gold patch: {_some(f2p_failing)}"}
    if all(passes(empty_runs, t) == len(empties) for t in task.fail_to_pass):
        return {**rec, "category": "empty_resolves", "why": "every FAIL_TO_PASS test passes with the empty patch"}
    if f2p_flaky:
        return {**rec, "category": "flaky", "why": f"FAIL_TO_PASS flaky over {len(golds)} runs: {_some(f2p_flaky)}"}
    kept_p2p = len(task.pass_to_pass) - len(drift) - len(p2p_flaky)
    why = [f"{len(drift)} PASS_TO_PASS dropped (fail with gold: {_some(drift)})" if drift else "",
           f"{len(p2p_flaky)} flaky PASS_TO_PASS dropped ({_some(p2p_flaky)})" if p2p_flaky else "",
           f"{len(f2p_no_signal)} FAIL_TO_PASS pass with the empty patch too, moved to PASS_TO_PASS"
           if f2p_no_signal else ""]
    return {**rec, "kept": True, "category": "kept", "why": "; ".join(w for w in why if w), "p2p_kept": kept_p2p}


# a test that failed reaching the network (the sandbox has none): the resolver's, the socket's and the
# HTTP clients' words for it (urllib3/requests, httpx, aiohttp, urllib)
NETWORK = re.compile(r"Name or service not known|Temporary failure in name resolution|nodename nor servname"
                     r"|No address associated with hostname|getaddrinfo failed|Network is unreachable"
                     r"|Failed to establish a new connection|Cannot connect to host|Could not resolve host"
                     r"|\[Errno -[235]\]|\[Errno 101\]")

# one run of the named tests (their files collected, the others deselected): each failed or skipped
# test's own words, one JSON line each in a file of its own (pytest's output is not read)
_REASONS = """import json, sys, pytest
WANTED = set(open("/tmp/coderl_tests.txt").read().splitlines())
class Reasons:
    def __init__(self):
        self.seen = set()
    def say(self, nodeid, text):
        if nodeid not in self.seen:
            self.seen.add(nodeid)
            with open("/tmp/coderl_records.out", "a") as out:
                out.write("REASON " + json.dumps([nodeid, " ".join(str(text).split())[:300]]) + "\\n")
    def pytest_collection_modifyitems(self, config, items):
        keep = [item for item in items if item.nodeid in WANTED]
        if keep:
            items[:] = keep
    def pytest_runtest_logreport(self, report):
        if report.passed:
            return
        longrepr = report.longrepr
        if report.skipped and isinstance(longrepr, tuple):
            why = str(longrepr[2])
            self.say(report.nodeid, "SKIPPED: " + (why[len("Skipped: "):] if why.startswith("Skipped: ") else why))
            return
        crash = getattr(longrepr, "reprcrash", None)
        text = crash.message if crash is not None else (str(longrepr).strip().splitlines() or [""])[-1]
        self.say(report.nodeid, report.outcome.upper() + " (" + report.when + "): " + text)
    def pytest_collectreport(self, report):
        if report.failed:
            self.say(report.nodeid, "collection failed: " + (str(report.longrepr).strip().splitlines() or [""])[-1])
pytest.main(["-p", "no:cacheprovider", *sys.argv[1:]], plugins=[Reasons()])
"""


async def _records_on_gold(host: SessionHost, snapshot: Path, env_dir: Path, task: RepoTask, script: str,
                           files: list[str], prefix: str, *, timeout_s: float,
                           inputs: dict[str, bytes] | None = None) -> list[Any]:
    """Run a pytest ``script`` (it appends ``<prefix> <json>`` lines to ``/tmp/coderl_records.out``)
    on ``files`` in a fresh session with the gold and the test patch applied, the task's test
    services started as the grader starts them (its starter bound as the grader binds it); the
    records' JSON values. [] when the session, a patch or the run fails. A diagnosis, never a verdict."""
    try:
        session = await host.open(snapshot, env_dir=env_dir, ro_binds=[str(INSIDE_DIR)] if task.env.services else [])
    except CoderlError:
        return []
    try:
        for diff in (task.gold_patch, task.test_patch):
            if diff.strip() and await host.apply_diff(session, diff):
                return []
        for path, data in {"/tmp/coderl_script.py": script.encode(), **(inputs or {})}.items():
            await session.write_file(path, data)
        services = task.env.services
        run = await session.exec(start_services(services, env_dir) + "python /tmp/coderl_script.py "
                                 + " ".join(shlex.quote(f) for f in files)
                                 + " >/dev/null 2>&1; cat /tmp/coderl_records.out", timeout_s=timeout_s,
                                 env=service_env(services, env_dir))
    except CoderlError:
        return []
    finally:
        await session.close()
    found = []
    for line in run.stdout.splitlines():
        if line.startswith(prefix + " "):
            try:
                found.append(json.loads(line[len(prefix) + 1:]))
            except ValueError:
                continue
    return found


async def diagnose(host: SessionHost, snapshot: Path, env_dir: Path, task: RepoTask, tests: list[str]) -> dict[str, str]:
    """Why ``tests`` fail with the gold patch: one more run of them in a fresh session (gold and test
    patch applied), each test's failure or skip in its own words (a collection error under its
    file's name); {} when the run gives none. A diagnosis, never a verdict: the grader's runs
    decided the row."""
    wanted = {t.split("::", 1)[0] for t in tests}
    files = [f for f in test_files(task) if f in wanted]
    records = await _records_on_gold(host, snapshot, env_dir, task, _REASONS, files, "REASON", timeout_s=1800,
                                     inputs={"/tmp/coderl_tests.txt": "\n".join(tests).encode()})
    out = {str(record[0]): str(record[1]) for record in records if isinstance(record, list) and len(record) == 2}
    return {t: out[t] for t in [*tests, *files] if t in out}


def _some_ids(tests: dict[str, str], most: int = 300) -> list[str]:
    return list(tests)[:most]


def with_reasons(record: dict[str, Any], reasons: dict[str, str]) -> dict[str, Any]:
    """The record with the diagnosis (``failure_reasons``): a ``gold_not_resolved`` row whose every
    failing FAIL_TO_PASS test failed reaching the network becomes ``needs_network``; the message
    names each failing test's reason; dropped PASS_TO_PASS tests that need the network are counted."""
    def reason(test: str) -> str:
        file = test.split("::", 1)[0]
        return reasons.get(test) or reasons.get(file, "")

    rec = {**record, "failure_reasons": reasons}
    f2p = record.get("f2p_failing") or {}
    network_p2p = [t for t in record.get("p2p_dropped") or {} if NETWORK.search(reason(t))]
    if network_p2p:
        rec["p2p_network"] = network_p2p
    if record["category"] == "gold_not_resolved" and f2p:
        said = [f"{t} {reason(t) or s}" for t, s in list(f2p.items())[:3]]
        more = f" and {len(f2p) - 3} more" if len(f2p) > 3 else ""
        if all(NETWORK.search(reason(t)) for t in f2p):
            why = (f"{len(f2p)} FAIL_TO_PASS tests need the network, which the sandbox does not give: "
                   + "; ".join(said) + more)
            rest = record.get("f2p_rest") or {}
            if rest.get("tests") and not rest.get("empty_resolves") and not record.get("f2p_flaky"):
                # the row's other FAIL_TO_PASS tests pass with gold every time and fail with empty: it
                # is kept without the ones no offline run can pass, each recorded (as drift is)
                return {**rec, "kept": True, "category": "kept", "f2p_network": list(f2p),
                        "p2p_kept": rest.get("p2p_kept", 0),
                        "why": f"{len(f2p)} FAIL_TO_PASS dropped, they need the network ({'; '.join(said)}{more}); "
                               f"{rest['tests']} kept"
                               + (f", {len(moved)} of them pass with the empty patch too, moved to PASS_TO_PASS"
                                  if (moved := record.get("f2p_no_signal") or []) else "")}
            if rest.get("tests") and rest.get("empty_resolves"):
                why += f"; the other {rest['tests']} pass with the empty patch too"
            return {**rec, "category": "needs_network", "why": why}
        return {**rec, "why": "FAIL_TO_PASS failing with the gold patch: " + "; ".join(said) + more}
    if record["kept"] and network_p2p:
        rec["why"] = f"{record['why']}; {len(network_p2p)} of them need the network"
    return rec


def _runs_status(results: list[GradeResult]) -> str:
    """The status of the runs: one word when they agree, else each status with its count."""
    counts = Counter(r.status.value for r in results)
    return next(iter(counts)) if len(counts) == 1 else ", ".join(f"{s} x{n}" for s, n in counts.items())


def _some(tests: dict[str, str]) -> str:
    items = list(tests.items())
    more = f" and {len(items) - 3} more" if len(items) > 3 else ""
    return ", ".join(f"{t} {s}" for t, s in items[:3]) + more


def labels(task: RepoTask, record: dict[str, Any]) -> tuple[list[str], list[str]]:
    """A kept row's FAIL_TO_PASS and PASS_TO_PASS: the lists its record was decided on (the row's, or
    the derived ones, ``lists``) less the FAIL_TO_PASS tests that need the network and those with
    no signal (moved to PASS_TO_PASS), less the drifted and the flaky PASS_TO_PASS tests."""
    lists = record.get("lists") or {}
    f2p = list(lists.get("FAIL_TO_PASS", task.fail_to_pass))
    p2p = list(lists.get("PASS_TO_PASS", task.pass_to_pass))
    network, no_signal = record.get("f2p_network") or [], record.get("f2p_no_signal") or []
    out = set(record["p2p_dropped"]) | set(record.get("p2p_flaky") or {})
    return ([t for t in f2p if t not in network and t not in no_signal],
            [t for t in dict.fromkeys([*p2p, *no_signal]) if t not in out])


def relabelling(task: RepoTask, record: dict[str, Any]) -> dict[str, Any] | None:
    """The record of a kept row whose FAIL_TO_PASS the gate changed beyond the tests that need the
    network (those are ``f2p_network``'s): the old and the new lists, the tests moved to
    PASS_TO_PASS, the derived ones with their statuses; None when the row keeps its labels."""
    if not record.get("kept"):
        return None
    derived = record.get("derivation") or {}
    moved = derived.get("moved_to_p2p", record.get("f2p_no_signal") or [])
    if not moved and not derived:
        return None
    f2p, p2p = labels(task, record)
    return {"FAIL_TO_PASS": {"was": list(task.fail_to_pass), "now": f2p}, "moved_to_p2p": list(moved),
            "derived": derived.get("derived", {}),
            "PASS_TO_PASS": {"added": [t for t in p2p if t not in task.pass_to_pass],
                             "removed": [t for t in task.pass_to_pass if t not in p2p]}}


def kept_row(row: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """The validated row: the drifted and the flaky PASS_TO_PASS tests taken out (each kept in the
    row's ``gate`` record with its statuses), relabelled when the gate relabelled it (``relabelled``);
    SWE-bench's own lists in ``gate.official`` whenever the gate changed them."""
    task = RepoTask.from_row(row)
    f2p, p2p = labels(task, record)
    gate: dict[str, Any] = {"p2p_dropped": record["p2p_dropped"], "p2p_flaky": record.get("p2p_flaky", {}),
                            "repeats": record.get("repeats", 1)}
    if record.get("f2p_network"):  # FAIL_TO_PASS tests that need the network: out of the row, named in its record
        gate["f2p_network"] = record["f2p_network"]
    relabelled = record.get("relabelled") or relabelling(task, record)
    if relabelled:
        gate["relabelled"] = relabelled
    if f2p != list(task.fail_to_pass) or p2p != list(task.pass_to_pass):
        gate["official"] = {"FAIL_TO_PASS": list(task.fail_to_pass), "PASS_TO_PASS": list(task.pass_to_pass)}
    return {**row, "FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p, "gate": gate}


def can_derive(record: dict[str, Any]) -> bool:
    """No listed FAIL_TO_PASS test tells the fix from no fix here, on clean runs: every one passes
    with the empty patch (``empty_resolves``), or the ones that can run offline all do and the
    others need the network (``needs_network``); none flaky."""
    if record.get("f2p_flaky"):
        return False
    if record["category"] == "empty_resolves":
        return True
    rest = record.get("f2p_rest") or {}
    return record["category"] == "needs_network" and bool(rest.get("tests")) and bool(rest.get("empty_resolves"))


# changed lines of a test patch's files, in the new file's numbering
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def changed_lines(test_patch: str) -> dict[str, set[int]]:
    """Per Python file of the test patch, the lines (new numbering) it adds, and the two lines
    around each place it removes some."""
    out: dict[str, set[int]] = {}
    for section in split_diff(test_patch):
        if not section.new_path.endswith(".py"):
            continue
        lines, new = out.setdefault(section.new_path, set()), None
        for line in section.text.splitlines():
            hunk = _HUNK.match(line)
            if hunk:
                new = int(hunk[1])
            elif new is None or line.startswith("\\"):
                continue
            elif line.startswith("+"):
                lines.add(new)
                new += 1
            elif line.startswith("-"):
                lines.update((new - 1, new))
            else:
                new += 1
    return out


# every collected test's definition: its node id, its source file (relative to the tree) and lines
_DEFINITIONS = """import inspect, json, os, sys, pytest
ROOT = os.path.realpath(os.getcwd())
class Definitions:
    def pytest_collection_finish(self, session):
        with open("/tmp/coderl_records.out", "a") as out:
            for item in session.items:
                try:
                    obj = item.obj
                    fn = inspect.unwrap(getattr(obj, "__func__", obj))
                    lines, start = inspect.getsourcelines(fn)
                    path = os.path.relpath(os.path.realpath(inspect.getsourcefile(fn)), ROOT)
                except Exception:
                    continue
                out.write("DEF " + json.dumps([item.nodeid, path, start, start + len(lines) - 1]) + "\\n")
files = [f for f in sys.argv[1:] if os.path.isfile(f)]
if files:
    pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *files], plugins=[Definitions()])
"""


async def patch_added_tests(host: SessionHost, snapshot: Path, env_dir: Path, task: RepoTask) -> list[str]:
    """The tests the row's test patch adds or changes: pytest's collection of the test patch's
    Python files (gold and test patch applied, in a fresh session) and each collected test whose
    definition (decorators included) holds a line the test patch adds or changes; every
    parametrization of such a test. [] when nothing can be read."""
    try:
        changed = {path: lines for path, lines in changed_lines(task.test_patch).items() if lines}
    except MalformedDiff:
        return []
    files = [f for f in changed if Path(f).name not in ("conftest.py", "__init__.py")]
    if not files:
        return []
    found = []
    for record in await _records_on_gold(host, snapshot, env_dir, task, _DEFINITIONS, files, "DEF", timeout_s=600):
        try:
            nodeid, path, start, end = record
        except (TypeError, ValueError):
            continue
        if any(start <= n <= end for n in changed.get(str(path), ())):
            found.append(str(nodeid))
    return list(dict.fromkeys(found))


def _clean(results: list[GradeResult]) -> bool:
    """Every run graded without a sandbox error, tampering, a failed apply or being cut short."""
    return all(r.status.value not in ("sandbox_error", "tampered", "apply_failed")
               and not r.message.startswith(CUT_SHORT) for r in results)


def derived_record(task: RepoTask, record: dict[str, Any], candidates: list[str],
                   golds: list[GradeResult], empties: list[GradeResult]) -> dict[str, Any]:
    """The row relabelled from its test patch's tests (``candidates``, graded as FAIL_TO_PASS in
    ``golds`` / ``empties``): those failing every empty run and passing every gold one are its
    FAIL_TO_PASS, the listed ones with no signal move to PASS_TO_PASS, those that need the network
    are dropped as before; the kept record is decided again on these runs (drift, flakiness). With
    none derived, or a derivation run not clean, the row's own record stands, with the derivation."""
    network = list(record.get("f2p_failing") or {}) if record["category"] == "needs_network" else []
    moved = [t for t in task.fail_to_pass if t not in network]
    note: dict[str, Any] = {"candidates": candidates, "moved_to_p2p": moved}
    gold_runs = [{**g.fail_to_pass, **g.pass_to_pass} for g in golds]
    empty_runs = [{**e.fail_to_pass, **e.pass_to_pass} for e in empties]

    def statuses(runs: list[dict[str, str]], test: str) -> str:
        return "/".join(run.get(test, "missing") for run in runs)

    if not candidates:
        return {**record, "derivation": {**note, "why": "the test patch adds or changes no test collected here"}}
    if not _clean(golds) or not _clean(empties):
        bad = next(r for r in [*golds, *empties] if not _clean([r]))
        return {**record, "derivation": {**note, "why": f"a derivation run was not clean: {bad.status.value} "
                                                          f"{bad.message[:200]}"}}
    derived = {t: f"gold {statuses(gold_runs, t)}; empty {statuses(empty_runs, t)}" for t in candidates
               if all(run.get(t) in PASSING for run in gold_runs) and not any(run.get(t) in PASSING for run in empty_runs)}
    note["derived"] = derived
    if not derived:
        tried = {t: f"gold {statuses(gold_runs, t)}; empty {statuses(empty_runs, t)}" for t in candidates}
        return {**record, "derivation": {**note, "tried": tried,
                                         "why": "no test the test patch adds or changes fails with the empty patch "
                                                "and passes with gold in every run"}}
    lists = {"FAIL_TO_PASS": list(derived),
             "PASS_TO_PASS": [t for t in dict.fromkeys([*task.pass_to_pass, *moved]) if t not in derived]}
    relabelled = dataclasses.replace(task, fail_to_pass=tuple(lists["FAIL_TO_PASS"]),
                                     pass_to_pass=tuple(lists["PASS_TO_PASS"]))
    new = gate_record(relabelled, golds, empties)
    new = {**new, "lists": lists, "derivation": note, "listed": {k: record.get(k) for k in ("category", "why", "gold", "empty")}}
    if network:
        new["f2p_network"] = network
    if new["kept"]:
        new["why"] = "; ".join(w for w in (f"relabelled: {len(moved)} listed FAIL_TO_PASS pass with the empty patch "
                                           f"({record['category']}), {len(derived)} derived from the test patch "
                                           f"({', '.join(list(derived)[:3])})", new.get("why", "")) if w)
    return new


async def run_gate(tasks_file: str, repos: Path, out: Path, *, cache_dir: Path, concurrency: int = 1,
                   instances: list[str] | None = None, repeats: int = 1) -> dict[str, Any]:
    rows = [r for r in read_rows(tasks_file) if isinstance(r, dict)]
    if instances:
        rows = [r for r in rows if r.get("instance_id") in set(instances)]
    if not rows:
        raise BadRequest(f"{tasks_file}: no tasks")
    if not repos.is_dir():
        raise BadRequest(f"--repos {repos}: no such directory")
    out.mkdir(parents=True, exist_ok=True)
    log = out / "gate.jsonl"
    done = {r["instance_id"]: r for r in read_records(log)}
    store = RepoStore(repos.resolve(), cache_dir)
    gate = asyncio.Semaphore(concurrency)
    async with SessionHost() as host:
        grader = RepoGrader(host, store, env_cache=cache_dir, concurrency=concurrency, limits=GATE_LIMITS)

        async def one(row: dict[str, Any]) -> None:
            task = RepoTask.from_row(row)
            async with gate:
                t0 = time.monotonic()
                try:
                    _, env_dir = await grader.prepare(task)
                    env = {"built": True, "env_dir": str(env_dir), "prepare_s": round(time.monotonic() - t0, 1)}
                except CoderlError as exc:
                    env = {"built": False, "error": str(exc)[:500], "prepare_s": round(time.monotonic() - t0, 1)}
                if env["built"]:
                    golds, empties = [], []
                    for _ in range(repeats):
                        golds.append(await grader.grade(task, task.gold_patch))
                        empties.append(await grader.grade(task, ""))
                    record = {**gate_record(task, golds, empties), "env": env}
                    failing = [*_some_ids(record.get("f2p_failing") or {}), *_some_ids(record["p2p_dropped"])]
                    snapshot = store.snapshot(task.repo, task.base_commit)
                    if failing and record["category"] in ("gold_not_resolved", "kept"):
                        reasons = await diagnose(host, snapshot, env_dir, task, failing)
                        record = with_reasons(record, reasons)
                    if can_derive(record) and _clean(golds) and _clean(empties):
                        candidates = await patch_added_tests(host, snapshot, env_dir, task)
                        trial = dataclasses.replace(task, fail_to_pass=tuple(candidates), pass_to_pass=tuple(
                            t for t in dict.fromkeys([*task.pass_to_pass, *task.fail_to_pass]) if t not in candidates))
                        dgolds, dempties = [], []
                        for _ in range(repeats if candidates else 0):
                            dgolds.append(await grader.grade(trial, task.gold_patch))
                            dempties.append(await grader.grade(trial, ""))
                        record = derived_record(task, record, candidates, dgolds, dempties)
                        if record["kept"] and record["p2p_dropped"]:
                            reasons = await diagnose(host, snapshot, env_dir, task, _some_ids(record["p2p_dropped"]))
                            record = with_reasons(record, reasons)
                    relabelled = relabelling(task, record)
                    if relabelled:
                        record["relabelled"] = relabelled
                else:
                    record = {"instance_id": task.instance_id, "kept": False, "category": "environment",
                              "why": f"environment not built: {env['error']}", "env": env, "gold": "", "empty": ""}
            record["repo"], record["version"] = row.get("repo"), row.get("version", "")
            with log.open("a") as fh:
                fh.write(json.dumps(record) + "\n")
            done[task.instance_id] = record

        await asyncio.gather(*(one(r) for r in rows if r["instance_id"] not in done))
    records = [done[r["instance_id"]] for r in rows]
    kept = [kept_row(r, done[r["instance_id"]]) for r in rows if done[r["instance_id"]]["kept"]]
    write_jsonl(kept, out / "tasks.jsonl")
    summary = gate_summary(records, repeats)
    (out / "gate.json").write_text(json.dumps({"summary": summary, "instances": records}, indent=2))
    (out / "gate.md").write_text(gate_markdown(summary, records) + "\n")
    return summary


def gate_summary(records: list[dict[str, Any]], repeats: int) -> dict[str, Any]:
    """The gate's counts. Dropped and flaky PASS_TO_PASS tests are counted on the kept rows only: a
    row graded sandbox_error or tampered has every test "missing", which is no drift of its tests.
    Rows that need the network are counted apart from broken ones (sound rows, not gradable offline)."""
    categories = Counter(r["category"] for r in records)
    kept = [r for r in records if r["kept"]]
    return {"tasks": len(records), "kept": len(kept), "repeats": repeats, "categories": dict(categories),
            "flaky_rows": categories.get("flaky", 0), "needs_network_rows": categories.get("needs_network", 0),
            "broken_rows": sum(n for c, n in categories.items() if c not in ("kept", "flaky", "needs_network")),
            "p2p_dropped": sum(len(r.get("p2p_dropped") or {}) for r in kept),
            "p2p_flaky": sum(len(r.get("p2p_flaky") or {}) for r in kept),
            "f2p_network": sum(len(r.get("f2p_network") or []) for r in kept),
            "kept_relabelled": sum(bool(r.get("relabelled")) for r in kept),
            "f2p_moved_to_p2p": sum(len((r.get("relabelled") or {}).get("moved_to_p2p") or []) for r in kept),
            "f2p_derived": sum(len((r.get("relabelled") or {}).get("derived") or {}) for r in kept)}


def gate_markdown(summary: dict[str, Any], records: list[dict[str, Any]]) -> str:
    lines = [f"kept {summary['kept']}/{summary['tasks']} over {summary.get('repeats', 1)} run(s) of gold and empty; "
             + ", ".join(f"{k} {v}" for k, v in sorted(summary["categories"].items()))
             + f"; flaky rows {summary.get('flaky_rows', 0)}, needing the network {summary.get('needs_network_rows', 0)}, "
             f"broken rows {summary.get('broken_rows', 0)}; "
             f"PASS_TO_PASS dropped: {summary['p2p_dropped']} failing with gold, {summary.get('p2p_flaky', 0)} flaky; "
             f"FAIL_TO_PASS dropped as needing the network: {summary.get('f2p_network', 0)}; "
             f"relabelled rows kept {summary.get('kept_relabelled', 0)} (FAIL_TO_PASS moved to PASS_TO_PASS "
             f"{summary.get('f2p_moved_to_p2p', 0)}, derived from test patches {summary.get('f2p_derived', 0)})", "",
             "| instance | env | gold | empty | kept | why not / dropped tests |", "|---|---|---|---|---|---|"]
    for r in records:
        env = r.get("env", {})
        built = f"yes ({env.get('prepare_s', 0):.0f} s)" if env.get("built") else "no"
        lines.append(f"| {r['instance_id']} | {built} | {r.get('gold', '')} | {r.get('empty', '')} | "
                     f"{('relabelled' if r.get('relabelled') else 'yes') if r['kept'] else 'no'} | {' '.join(r.get('why', '').replace('|', '/').split())[:200]} |")
    return "\n".join(lines)

