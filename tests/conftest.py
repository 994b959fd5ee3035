"""Fixtures shared by the whole suite: one real, fully isolated engine; the judge on it; the
offline Qwen tokenizer."""

from __future__ import annotations

import asyncio
import time

import pytest

from coderl.judge import Judge
from coderl.sandbox.blocking import BlockingEngine
from tests.helpers.require import check_needs_marks


@pytest.fixture(scope="session")
def engine():
    with BlockingEngine(slots=2) as eng:
        yield eng


@pytest.fixture()
def judge(engine):
    """judge(submission) or judge([submissions]) -> JudgeResult(s), on the real sandbox."""
    j = Judge(engine.engine)

    def _judge(sub):
        if isinstance(sub, list):
            async def many():
                return await asyncio.gather(*(j.judge(s) for s in sub))

            return engine.call(many())
        return engine.call(j.judge(sub))

    return _judge


@pytest.fixture(scope="session")
def tokenizer():
    from transformers import AutoTokenizer

    from coderl.data.qwen_tokenizer import build_qwen_tokenizer

    return AutoTokenizer.from_pretrained(build_qwen_tokenizer())


def pytest_configure(config):
    config.addinivalue_line("markers", "needs(available, reason): skip locally, fail under CODERL_TEST_ALL=1 "
                            "(tests/helpers/require.py)")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A missing resource is checked before any fixture is built (tests/helpers/require.py)."""
    check_needs_marks(item)


# The modules that run the sandbox image go last: .ci/run builds it in the background from the start
# (scripts/build_images.sh --local-base sandbox; ~12 min from nothing), and whatever is left of that build
# when they ask for it, they wait for (the script's lock). The sort is stable: every other test keeps
# its place, and these keep their own order.
SANDBOX_IMAGE_MODULES = ("tests/deploy/test_k8s_pod_in_container.py", "tests/docker/test_image_sandbox.py")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.nodeid.split("::")[0] in SANDBOX_IMAGE_MODULES)


# Each tier's time (setup, call and teardown of its tests, in this pytest), printed at the end: CI's run
# shows what the default suite (`bash scripts/test.sh`, under 15 min) costs inside it (README, CI budget).
_TIER_TIME: dict[str, list[float]] = {}
# ... and each test file's, per tier: the 15 dearest files of each tier are printed too, so a CI log says
# where the time goes (the tier a file's tests are in: a file with slow and default tests has two rows).
_FILE_TIME: dict[str, dict[str, list[float]]] = {}
SLOWEST_FILES = 15


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.monotonic()
    yield
    tier = "heavy" if item.get_closest_marker("heavy") else "slow" if item.get_closest_marker("slow") else "default"
    spent = _TIER_TIME.setdefault(tier, [0, 0.0])
    took = time.monotonic() - start
    spent[0] += 1
    spent[1] += took
    in_file = _FILE_TIME.setdefault(tier, {}).setdefault(item.nodeid.split("::")[0], [0, 0.0])
    in_file[0] += 1
    in_file[1] += took


def pytest_terminal_summary(terminalreporter):
    if _TIER_TIME:
        terminalreporter.write_line("time by tier (setup, call, teardown): " + "; ".join(
            f"{tier} {int(n)} tests {spent / 60:.1f} min" for tier, (n, spent) in sorted(_TIER_TIME.items())))
    for tier, files in sorted(_FILE_TIME.items()):
        terminalreporter.write_line(f"the {SLOWEST_FILES} dearest files of the {tier} tier (s, tests):")
        for path, (n, spent) in sorted(files.items(), key=lambda kv: -kv[1][1])[:SLOWEST_FILES]:
            terminalreporter.write_line(f"  {spent:7.1f} s {int(n):4d}  {path}")
