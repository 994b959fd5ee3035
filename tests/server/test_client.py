"""The one HTTP client against the real service: coalescing concurrent single submissions into
batches, failures reaching every caller, the retry policy's backoff, and a request a proxy loses
sent again once its deadline has passed."""

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


@pytest.mark.parametrize("call", ["judge", "judge_in_client_timeout", "run"])
def test_a_request_a_proxy_loses_is_sent_again(service_url, call):
    """Issue 49: Ray Serve's proxy held a request whose replica had died and never answered it; the
    client waited out its read timeout (180 s in the kill test) and then gave up. A request that
    carries its deadline is counted lost at deadline + grace and sent again (here to the real
    service through a proxy that swallows the first request and holds its connection open)."""
    async def main(url: str):
        if call == "judge":  # the caller's deadline (1 s): lost after 2 s
            async with SandboxClient(url, timeout_s=60, retries=2, backoff_s=0.01) as c:
                (result,) = await c.judge([{"code": "print(3)", "tests": TESTS}], timeout_s=1)
            return result["verdict"]
        if call == "judge_in_client_timeout":  # none given: the client's timeout_s bounds each attempt
            async with SandboxClient(url, timeout_s=4, retries=2, backoff_s=0.01) as c:
                (result,) = await c.judge([{"code": "print(3)", "tests": TESTS}])
            return result["verdict"]
        async with SandboxClient(url, timeout_s=60, retries=2, backoff_s=0.01) as c:
            return (await c.run("python", "print(7)", timeout_s=1))["run"]["stdout"]

    async def through_proxy():
        async with _swallowing_proxy(service_url) as (url, requests):
            return await main(url), requests

    answer, requests = asyncio.run(through_proxy())
    assert answer == ("7\n" if call == "run" else "accepted")
    assert len(requests) == 2 and requests[0] == requests[1], requests  # swallowed, then the same request again


def test_a_lost_request_without_a_deadline_is_not_sent_again():
    """A read timeout on a request that names no deadline is not re-sent: opening a session may
    still complete on the node (a second open would hold a second sandbox until its lease ends)."""
    import socket

    from coderl.client import SessionService
    from coderl.errors import ServiceError

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # never accepted while the client runs: every connection it makes waits in the backlog

    async def main():
        async with SessionService(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout_s=0.5) as s:
            return await asyncio.gather(s.open(), return_exceptions=True)

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


@contextlib.asynccontextmanager
async def _swallowing_proxy(target: str):
    """A TCP proxy to ``target`` that reads the first connection's request and never answers it,
    holding the connection open (as Ray Serve's proxy held a request it had lost), and pipes every
    later connection through. Yields its URL and each connection's first request (its request
    line and body)."""
    port = int(target.rsplit(":", 1)[1])
    requests: list[bytes] = []

    async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
        head = await reader.readuntil(b"\r\n\r\n")
        length = [line.split(b":", 1)[1] for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:")]
        return head, await reader.readexactly(int(length[0]) if length else 0)

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, first: bytes = b"") -> None:
        try:
            writer.write(first)
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, body = await read_request(reader)
        requests.append(head.split(b"\r\n", 1)[0] + b" " + body)
        if len(requests) == 1:
            await reader.read()  # swallowed: nothing is answered until the client hangs up
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.gather(pipe(reader, up_writer, head + body), pipe(up_reader, writer))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", requests
    finally:
        server.close()

