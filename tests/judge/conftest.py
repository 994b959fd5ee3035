from __future__ import annotations

import pytest

from coderl.judge import Judge, Submission
from coderl.sandbox.blocking import BlockingEngine


@pytest.fixture(scope="session")
def judge_engine():
    with BlockingEngine(slots=2) as eng:
        yield eng


@pytest.fixture()
def judge(judge_engine):
    """judge(submission) or judge([submissions]) -> JudgeResult(s), on the real sandbox."""
    j = Judge(judge_engine.engine)

    def _judge(sub):
        if isinstance(sub, list):
            import asyncio

            async def many():
                return await asyncio.gather(*(j.judge(s) for s in sub))

            return judge_engine.call(many())
        return judge_engine.call(j.judge(sub))

    return _judge


def py(code: str, spec, **kwargs) -> Submission:
    return Submission(code=code, spec=spec, **kwargs)
