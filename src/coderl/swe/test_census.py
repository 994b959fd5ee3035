"""Which tests of a repository pass, and how the others fail: the whole suite run once in a session
sandbox over a pristine snapshot, with a diff applied first (a bug, the tests it hides), in the
task's environment. The data builders (`coderl data swe-smith`, `coderl data synth`) compare a
clean run with a bugged one to find FAIL_TO_PASS and PASS_TO_PASS; the grader never uses this
(its own launcher and reporter judge an agent's diff).

The statuses are the grader's names (``PASSED``, ``FAILED``, ``ERROR``, ``SKIPPED``, ``XFAIL``,
``XPASS``); a test file that does not even collect is recorded under its path as ``ERROR``, so the
tests it held are absent from the run (a bug that breaks an import fails them all). Each failure
keeps pytest's one-line crash message (the exception and its text), what a problem statement may
quote; never the traceback's source lines.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from coderl.errors import SandboxError
from coderl.sandbox.session import SessionHost, SessionLimits
from coderl.swe.grading_run import pytest_args

PASSING = frozenset({"PASSED", "XPASS", "XFAIL"})
CENSUS_LIMITS = SessionLimits(episode_s=1500.0, exec_s=1200.0, memory_mb=4096, max_processes=512, output_kb=4096)
_RESULTS = "/tmp/coderl-census.json"
# run inside the sandbox by the environment's interpreter: pytest with a plugin recording each test's
# phases; the records go to a file (the project's own output is free to print anything)
_CENSUS = """import json, sys, pytest
out, why = {}, {}
def _msg(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr or "")
    return text[:2000]
class Census:
    def pytest_collectreport(self, report):
        if report.failed:
            out[report.nodeid or "<collection>"] = "ERROR"; why[report.nodeid or "<collection>"] = _msg(report)
    def pytest_runtest_logreport(self, report):
        status = out.get(report.nodeid)
        if report.when == "setup":
            status = "ERROR" if report.failed else "SKIPPED" if report.skipped else "PASSED"
        elif report.when == "call":
            xfail = hasattr(report, "wasxfail")
            status = ("XFAIL" if xfail else "SKIPPED") if report.skipped else \\
                ("XPASS" if xfail else "PASSED") if report.passed else "FAILED"
        elif report.failed and status in ("PASSED", "XPASS", "XFAIL"):
            status = "ERROR"
        out[report.nodeid] = status
        if report.failed and report.nodeid not in why:
            why[report.nodeid] = _msg(report)
code = pytest.main(["-p", "no:cacheprovider", "--color=no", *sys.argv[2:]], plugins=[Census()])
json.dump({"exit": int(code), "tests": out, "messages": why}, open(sys.argv[1], "w"))
"""


@dataclass(frozen=True)
class Census:
    """One run of the suite: test id -> status, failure messages, pytest's exit code."""

    tests: dict[str, str]
    messages: dict[str, str] = field(default_factory=dict)
    exit_code: int = 0
    wall_s: float = 0.0

    def passing(self) -> set[str]:
        return {t for t, s in self.tests.items() if s in PASSING}


async def run_census(host: SessionHost, snapshot: Path, env_dir: Path, diff: str, test_cmd: str) -> Census:
    """The suite's outcome on ``snapshot`` with ``diff`` applied (``git apply``; empty: as it is).
    A diff that does not apply, or a run that leaves no records, is a ``SandboxError``: the run
    says nothing about the tests."""
    session = await host.open(snapshot, env_dir=env_dir, limits=CENSUS_LIMITS)
    try:
        await session.write_file("/tmp/coderl-census.py", _CENSUS.encode())
        if diff:
            await session.write_file("/tmp/coderl-bug.patch", diff.encode())
            applied = await session.exec("git apply --binary /tmp/coderl-bug.patch", timeout_s=120)
            if applied.exit_code != 0:
                raise SandboxError(f"the diff does not apply: {applied.stderr.strip()[-300:]}")
        args = " ".join(shlex.quote(a) for a in _own_args(pytest_args(test_cmd)))
        run = await session.exec(f"python /tmp/coderl-census.py {_RESULTS} {args}")
        try:
            data = json.loads(await session.read_file(_RESULTS, max_bytes=64 << 20))
        except Exception as exc:  # no file, cut or unreadable: the run tells nothing
            tail = (run.stderr or run.stdout).strip()[-400:]
            how = (f"killed by signal {run.signal}" + (" (out of memory)" if run.oom_killed else "")
                   if run.exit_code is None and not run.timed_out else
                   "timed out" if run.timed_out else f"exit {run.exit_code}")
            raise SandboxError(f"the test run left no records ({how}): {tail}") from exc
        return Census(tests=data["tests"], messages=data["messages"], exit_code=data["exit"], wall_s=run.wall_s)
    finally:
        await session.close()


def _own_args(args: list[str]) -> list[str]:
    """The task's pytest options less those the census sets itself (its report, the cache plugin)."""
    out, skip = [], False
    for i, arg in enumerate(args):
        if skip:
            skip = False
        elif arg == "-p" and args[i + 1:i + 2] == ["no:cacheprovider"]:
            skip = True
        elif arg != "-rA":
            out.append(arg)
    return out
