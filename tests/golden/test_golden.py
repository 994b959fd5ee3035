"""Golden submissions with their expected verdicts (DMOJ style), judged on the real sandbox.

Layout: ``tests/golden/<language>/<case>/program.<ext>`` (Python ones as ``program.py.txt``, so
linters leave these deliberately broken or hostile programs alone) and ``expect.json``: the
problem (a test spec in ``problems/<name>.json``), the submission's verdict (``expect``, short
code) and one short code per test case (``cases``); ``stop_on_first_failure`` (default false: run
every case) and ``limits`` are optional. A new case is a new folder, no code. All submissions are
judged in one concurrent batch, so compiled languages' build times overlap.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from coderl.judge import Judge, JudgeResult, Submission
from coderl.sandbox import Limits

ROOT = Path(__file__).parent
LIMITS = Limits(cpu_s=1, wall_s=3, memory_mb=256, stdout_kb=1024)
CASES = sorted(p.parent for p in ROOT.glob("*/*/expect.json"))


def _submission(case: Path) -> Submission:
    expect = json.loads((case / "expect.json").read_text())
    program = next(case.glob("program.*"))
    return Submission(language=case.parent.name, code=program.read_text(),
                      spec=json.loads((ROOT / "problems" / f"{expect['problem']}.json").read_text()),
                      limits=LIMITS.replace(**expect.get("limits", {})),
                      stop_on_first_failure=expect.get("stop_on_first_failure", False))


@pytest.fixture(scope="module")
def verdicts(engine) -> dict[Path, JudgeResult]:
    judge = Judge(engine.engine)

    async def everything() -> list[JudgeResult]:
        return await asyncio.gather(*(judge.judge(_submission(c)) for c in CASES))

    return dict(zip(CASES, engine.call(everything()), strict=True))


def test_every_language_has_golden_cases():
    assert {c.parent.name for c in CASES} == {"python", "c", "cpp", "java", "javascript", "go", "rust"}


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.name}" for c in CASES])
def test_golden(verdicts, case):
    expect = json.loads((case / "expect.json").read_text())
    res = verdicts[case]
    got = {"expect": res.verdict.short, "cases": [c.verdict.short for c in res.cases]}
    assert got == {"expect": expect["expect"], "cases": expect["cases"]}, res.to_dict(include_output=False)
