"""The one HTTP client against the real service: coalescing concurrent single submissions into
batches, failures reaching every caller, and the retry policy's backoff."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from coderl.client import SandboxClient
from coderl.errors import BadRequest, ServiceUnavailable
from tests.helpers.service import refused_url

TESTS = {"inputs": ["1 2\n"], "outputs": ["3\n"]}


def test_concurrent_single_submissions_share_requests(service_url, monkeypatch):
    sizes: list[int] = []
    real = SandboxClient.judge

    async def counted(self, subs, **kwargs):
        sizes.append(len(subs))
        return await real(self, subs, **kwargs)

    monkeypatch.setattr(SandboxClient, "judge", counted)
    codes = ["a, b = map(int, input().split())\nprint(a + b)", "print(0)"] * 20

    async def main():
        async with SandboxClient(service_url, max_batch=16) as client:
            return await asyncio.gather(*(client.judge_one({"code": c, "tests": TESTS}) for c in codes))

    results = asyncio.run(main())
    assert [r["verdict"] for r in results] == ["accepted", "wrong_answer"] * 20  # each caller gets its own
    assert sum(sizes) == 40 and len(sizes) <= 4 and max(sizes) == 16


def test_a_failed_batch_raises_in_every_caller(service_url):
    async def down(dead: str):
        async with SandboxClient(dead, retries=1, backoff_s=0.01) as client:
            return await asyncio.gather(*(client.judge_one({"code": "print(1)", "tests": TESTS}) for _ in range(5)),
                                        return_exceptions=True)

    with refused_url() as dead:
        assert all(isinstance(r, ServiceUnavailable) for r in asyncio.run(down(dead)))

    async def bad():
        async with SandboxClient(service_url) as client:
            return await asyncio.gather(client.judge_one({"code": "print(1)", "tests": TESTS, "bogus": 1}),
                                        return_exceptions=True)

    (error,) = asyncio.run(bad())
    assert isinstance(error, BadRequest) and "bogus" in str(error)


@pytest.mark.parametrize("attempt,retry_after", [(0, None), (0, 3.0), (5, None), (1, 100.0)])
def test_backoff_is_jittered_and_never_below_retry_after(attempt, retry_after):
    client = SandboxClient("http://127.0.0.1:1", backoff_s=0.5, max_backoff_s=10.0)
    delays = [client._backoff(attempt, retry_after) for _ in range(200)]
    asyncio.run(client.aclose())
    ceiling = min(10.0, 0.5 * 2 ** attempt)
    floor = min(10.0, retry_after) if retry_after is not None else ceiling / 2
    assert all(floor <= d <= max(ceiling, floor) for d in delays)
    if retry_after is None:
        assert len(set(delays)) > 100  # jittered


def test_a_read_timeout_is_not_sent_again():
    """The service may still be running the work: the client says so instead of doubling it."""
    import socket

    from coderl.errors import ServiceError

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # never accepted while the client runs: every connection it makes waits in the backlog

    async def main():
        async with SandboxClient(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout_s=0.5, retries=3) as c:
            return await asyncio.gather(c.judge([{"code": "print(1)", "tests": TESTS}]), return_exceptions=True)

    (error,) = asyncio.run(main())
    # the client is done: the backlog now holds exactly the connections it made (closed ones too)
    listener.setblocking(False)
    connections = []
    with contextlib.suppress(BlockingIOError):
        while True:
            connections.append(listener.accept()[0])
    for conn in connections:
        conn.close()
    listener.close()
    assert isinstance(error, ServiceError) and "no answer" in str(error) and len(connections) == 1, (error, connections)


def test_serve_takes_ray_and_replicas_from_the_environment(monkeypatch):
    from coderl.cli import build_parser

    monkeypatch.setenv("CODERL_RAY", "1")
    monkeypatch.setenv("CODERL_REPLICAS", "3")
    args = build_parser().parse_args(["serve"])
    assert args.ray is True and args.replicas == 3
