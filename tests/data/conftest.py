from __future__ import annotations

import pytest

from coderl.judge import Judge
from coderl.sandbox.blocking import BlockingEngine
from tests.helpers.qwen_tokenizer import build_qwen_tokenizer


@pytest.fixture(scope="session")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(build_qwen_tokenizer())


@pytest.fixture(scope="session")
def data_engine():
    with BlockingEngine(slots=2) as eng:
        yield eng


@pytest.fixture()
def judge(data_engine):
    import asyncio

    j = Judge(data_engine.engine)

    def _judge(sub):
        if isinstance(sub, list):
            async def many():
                return await asyncio.gather(*(j.judge(s) for s in sub))

            return data_engine.call(many())
        return data_engine.call(j.judge(sub))

    return _judge
