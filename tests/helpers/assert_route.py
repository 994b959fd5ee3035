"""One MultiPL-E-shaped submission on ScaleBox's assert route of the real service: a completion and the
tests the prompt's stop tokens cut it at, as the reward tests of each language send them."""

from __future__ import annotations

import httpx


def accepted(url: str, language: str, completion: str, tests: str, stop_tokens: list[str]) -> bool:
    """Whether ``/common_evaluate_batch`` accepts ``completion`` against the ``assert`` ``tests``."""
    config = {"language": language, "provided_data": {"test_cases": {"type": "assert", "tests": tests,
                                                                     "stop_tokens": stop_tokens}}}
    reply = httpx.post(url + "/common_evaluate_batch", json={"completion": completion, "config": config}, timeout=120)
    assert reply.status_code == 200, reply.text
    return reply.json()["accepted"]
