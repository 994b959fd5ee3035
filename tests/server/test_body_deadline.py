"""A Ray Serve replica's deadline on each request's body (`coderl.server.ray_serve.BodyDeadline`).

Issue 49: Ray Serve's replica fetches a request's body from the proxy, and the first fetch empties
the proxy's queue; when the replica that fetched it died before the proxy saw it accept the
request, the proxy sent the request to the survivor, whose fetch waited until the client gave up
(180 s in the kill test). The replica's app (``replica_app``) is called here as Ray's replica
calls it, with a ``receive`` whose body never comes, one whose body ends short, and one that
delivers it; no Ray needed (tests/server/test_ray.py has the same through a real proxy)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from coderl.server.ray_serve import replica_app
from coderl.server.settings import Settings

WAIT_S = 0.5


@pytest.fixture(scope="module")
def app():
    return replica_app(Settings(slots=1), body_wait_s=WAIT_S)


def _scope(length: int) -> dict:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
            "path": "/v1/run", "raw_path": b"/v1/run", "query_string": b"", "root_path": "",
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(length).encode())],
            "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 1)}


async def _call(app, length: int, messages: list[dict]) -> tuple[int, dict]:
    """The app's answer to a request whose ``receive`` yields ``messages``, then nothing ever again
    (as a Ray replica's does once the proxy's queue for the request is empty and its client waits)."""
    sent: list[dict] = []

    async def receive() -> dict:
        if messages:
            return messages.pop(0)
        await asyncio.Event().wait()  # never set
        raise AssertionError("unreachable")

    async def send(message: dict) -> None:
        sent.append(message)

    await asyncio.wait_for(app(_scope(length), receive, send), 60)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(body)


def test_a_body_that_never_comes_is_answered_504(app):
    """The survivor of the kill test held such a request 180 s; now 504 (sent again by the client) after WAIT_S."""
    status, reply = asyncio.run(_call(app, 40, []))
    assert status == 504 and "stopped arriving" in reply["detail"], reply


def test_a_body_that_ends_short_is_answered_504(app):
    """Part of a body fetched by a replica that died leaves the rest; run with it, the request would be a 4xx
    (never sent again)."""
    body = json.dumps({"language": "python", "code": "print(1)"}).encode()
    status, reply = asyncio.run(_call(app, len(body), [{"type": "http.request", "body": body[10:],
                                                           "more_body": False}]))
    assert status == 504 and f"{len(body) - 10} of its {len(body)} bytes" in reply["detail"], reply
    status, reply = asyncio.run(_call(app, len(body), [{"type": "http.request", "body": body[:10], "more_body": True}]))
    assert status == 504 and "stopped arriving" in reply["detail"], reply


def test_a_whole_body_reaches_the_app(app):
    """In parts or at once, the app reads the same body (its validation answers it: the service's engine is not
    started here) and the replica names itself."""
    async def main() -> list[httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://replica") as client:
            whole = await client.post("/v1/run", json={"language": "python"})

            async def parts():
                yield b'{"language": '
                yield b'"python"}'

            chunked = await client.post("/v1/run", content=parts(), headers={"content-type": "application/json"})
            return [whole, chunked]

    for response in asyncio.run(main()):
        assert response.status_code == 422 and "body.code: Field required" in response.json()["detail"], response.text
        assert response.headers["x-coderl-replica"]


def test_a_body_past_the_size_cap_is_refused_by_the_app_not_buffered():
    """Reading ahead stops at the app's cap (``max_body_mb``): what is past it is the app's 413."""
    # a wait for the rest of the body would outlast _call's bound of 60 s
    capped = replica_app(Settings(slots=1, max_body_mb=0.001), body_wait_s=600)  # 1,048 bytes
    status, reply = asyncio.run(_call(capped, 4096, [{"type": "http.request", "body": b"x" * 2048, "more_body": True}]))
    assert status == 413 and "over" in reply["detail"], reply
