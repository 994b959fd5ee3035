"""Golden submissions with their expected verdicts (DMOJ style), judged on the real sandbox.

Layout: ``tests/golden/<language>/<case>/program.<ext>`` (Python ones as ``program.py.txt``, so
linters leave these deliberately broken or hostile programs alone) and ``expect.json``: the
problem (a test spec in ``problems/<name>.json``), the submission's verdict (``expect``, short
code) and one short code per test case (``cases``); ``stop_on_first_failure`` (default false: run
every case) and ``limits`` are optional (default: 1 s CPU, 10 s wall). The memory-limit cases get
5 s of CPU: a memory hog's CPU time (page faults, its runtime's collector) grows with the machine's load
(racket's 0.33 s at load 8 was 0.91 s of the old 1 s at load 16), and a CPU limit reached first
would read as a time limit. A new case is a new folder, no code. All submissions are
judged in one concurrent batch, so compiled languages' build times overlap. The JVM-compiled
languages (``SLOW``: scalac and kotlinc take 5-20 s per submission on 2 vCPU) are a second batch
under the ``slow`` marker, so the default suite stays fast. The test-runner languages (go_test,
junit, pytest: the program is its own tests) keep theirs in ``runners/<language>/<case>/``, checked
on /run_code by tests/server/test_test_runners.py.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from coderl.judge import Judge, JudgeResult, Submission
from coderl.sandbox import Limits, languages
from tests.helpers.require import require

ROOT = Path(__file__).parent
# 1 s of CPU is every time limit case's limit; the wall limit only bounds a hang: 10 s, because a
# runtime's start (node, a JVM, druntime, racket) on a loaded machine read from a cold disk is slow
# in wall time only, and at 3 s it turned cases of other verdicts into time limits (racket/function_ac
# at load 19, d/re at load 20+)
LIMITS = Limits(cpu_s=1, wall_s=10, memory_mb=256, stdout_kb=1024)
CASES = sorted(p.parent for p in ROOT.glob("*/*/expect.json"))
SLOW = {"scala", "kotlin"}
FAST_CASES = [c for c in CASES if c.parent.name not in SLOW]
SLOW_CASES = [c for c in CASES if c.parent.name in SLOW]
# the first test of each batch also runs its module fixture (the whole batch: 108-120 s here at load
# 8-16) and, when this is the session's first engine, the toolchains' first build (85 s with a fresh
# cache): the suite's 300 s per-test timeout counts fixtures, so the batch's own 900 s bound is used
pytestmark = pytest.mark.timeout(900)


def _submission(case: Path) -> Submission:
    expect = json.loads((case / "expect.json").read_text())
    program = next(case.glob("program.*"))
    return Submission(language=case.parent.name, code=program.read_text(),
                      spec=json.loads((ROOT / "problems" / f"{expect['problem']}.json").read_text()),
                      limits=LIMITS.replace(**expect.get("limits", {})),
                      stop_on_first_failure=expect.get("stop_on_first_failure", False))


def _judge_all(engine, cases: list[Path]) -> dict[Path, JudgeResult]:
    judge = Judge(engine.engine)
    present = [c for c in cases if c.parent.name in engine.engine.languages()]

    async def everything() -> list[JudgeResult]:
        return await asyncio.gather(*(judge.judge(_submission(c)) for c in present))

    return dict(zip(present, engine.call(everything(), 900), strict=True))


@pytest.fixture(scope="module")
def verdicts(engine) -> dict[Path, JudgeResult]:
    return _judge_all(engine, FAST_CASES)


@pytest.fixture(scope="module")
def slow_verdicts(engine) -> dict[Path, JudgeResult]:
    return _judge_all(engine, SLOW_CASES)


def test_every_language_has_golden_cases():
    assert {c.parent.name for c in CASES} == {lang.name for lang in languages.ALL}


def test_every_language_has_every_verdict_it_can_give():
    """accepted, wrong answer, runtime error, time limit everywhere; compile error where there is a
    compiler; memory limit everywhere but verilog (a simulation has no heap to exhaust)."""
    for lang in languages.ALL:
        have = {json.loads((c / "expect.json").read_text())["expect"] for c in CASES if c.parent.name == lang.name}
        want = {"AC", "WA", "RE", "TLE"} | ({"CE"} if lang.compile_argv or lang.warm_python else set()) \
            | (set() if lang.name == "verilog" else {"MLE"})
        assert want <= have, (lang.name, sorted(want - have))


def _check(results: dict[Path, JudgeResult], case: Path) -> None:
    require(case in results, f"{case.parent.name} toolchain not installed on this host (scripts/setup.sh installs it)")
    expect = json.loads((case / "expect.json").read_text())
    res = results[case]
    got = {"expect": res.verdict.short, "cases": [c.verdict.short for c in res.cases]}
    assert got == {"expect": expect["expect"], "cases": expect["cases"]}, res.to_dict(include_output=False)


@pytest.mark.parametrize("case", FAST_CASES, ids=[f"{c.parent.name}/{c.name}" for c in FAST_CASES])
def test_golden(verdicts, case):
    _check(verdicts, case)


@pytest.mark.slow
@pytest.mark.parametrize("case", SLOW_CASES, ids=[f"{c.parent.name}/{c.name}" for c in SLOW_CASES])
def test_golden_jvm_compiled(slow_verdicts, case):
    _check(slow_verdicts, case)
