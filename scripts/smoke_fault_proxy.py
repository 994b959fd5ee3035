"""A loopback proxy in front of the sandbox service that fails a fraction of its scoring requests:
the smoke runs' fault switch (SMOKE_FAULT_RATE, scripts/smoke_pipeline.sh and
scripts/smoke_agent_remote_step.sh), to show a sandbox failure train nothing and be counted.

    python scripts/smoke_fault_proxy.py UPSTREAM_URL PORT RATE LOG_JSONL [ROUTE ...]

Everything is forwarded to UPSTREAM_URL unchanged except requests on the faulted ROUTEs (default
/v1/judge and /v1/swe/grade: the code reward's and the repository grader's). Of those, the n-th is
failed when floor(n * RATE) steps up (RATE 0.2: the 5th, 10th, ...: exactly that fraction, evenly
spread, the same on every run), answered as the service answers a failure inside it (HTTP 500, its
``x-coderl-isolation`` header, a ``ServiceError`` body), which the client does not retry: each
faulted request is one scoring attempt that failed on our side, so the samples it carried must come
out as sandbox errors, not as wrong answers. Every request on those routes is one JSON line in
LOG_JSONL (route, the items it carried, faulted). The tool's own /v1/run calls pass: a tool error
reaches the model as text, which is a different thing.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
from pathlib import Path
from typing import Any

import httpx
import uvicorn

HOP_HEADERS = {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "content-encoding"}
DEFAULT_ROUTES = ("/v1/judge", "/v1/swe/grade")


class FaultProxy:
    """The ASGI app: forward, or fail the scoring request the schedule picks (module docstring)."""

    def __init__(self, upstream: str, rate: float, log: Path, routes: tuple[str, ...] = DEFAULT_ROUTES) -> None:
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"the fault rate must be in [0, 1), got {rate}")
        self.upstream, self.rate, self.log, self.routes = upstream.rstrip("/"), rate, log, routes
        self.seen = 0  # scoring requests so far
        # idle upstream connections dropped before the service's keep-alive (5 s) ends them, as the client does
        self.client = httpx.AsyncClient(timeout=None, limits=httpx.Limits(keepalive_expiry=2.0))

    def decide(self) -> bool:
        """Whether the next scoring request is failed (the module docstring's schedule)."""
        self.seen += 1
        return math.floor(self.seen * self.rate) > math.floor((self.seen - 1) * self.rate)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await self.client.aclose()
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = bytearray()
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if scope["path"] in self.routes and scope["method"] == "POST":
            faulted = self.decide()
            self._log(scope["path"], bytes(body), faulted)
            if faulted:
                await _respond(send, 500, [(b"content-type", b"application/json"),
                                           (b"x-coderl-isolation", b"injected-fault")],
                               b'{"type": "ServiceError", "detail": "injected fault (SMOKE_FAULT_RATE)"}')
                return
        headers = [(k, v) for k, v in scope["headers"] if k.decode().lower() not in HOP_HEADERS]
        query = f"?{scope['query_string'].decode()}" if scope["query_string"] else ""
        try:
            response = await self.client.request(scope["method"], self.upstream + scope["path"] + query,
                                                 headers=[(k.decode(), v.decode()) for k, v in headers],
                                                 content=bytes(body))
        except httpx.HTTPError as exc:
            await _respond(send, 502, [], f"fault proxy: upstream: {exc}".encode())
            return
        out = [(k.encode(), v.encode()) for k, v in response.headers.items() if k.lower() not in HOP_HEADERS]
        await _respond(send, response.status_code, out, response.content)

    def _log(self, route: str, body: bytes, faulted: bool) -> None:
        try:
            parsed = json.loads(body)
            items = len(parsed.get("submissions") or parsed.get("items") or [])
        except (ValueError, AttributeError):
            items = 0
        with self.log.open("a") as f:
            f.write(json.dumps({"route": route, "items": items, "faulted": faulted}) + "\n")


async def _respond(send: Any, status: int, headers: list[tuple[bytes, bytes]], content: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [*headers, (b"content-length", str(len(content)).encode())]})
    await send({"type": "http.response.body", "body": content})


def main(argv: list[str]) -> int:
    if len(argv) < 4:
        print("usage: smoke_fault_proxy.py UPSTREAM_URL PORT RATE LOG_JSONL [ROUTE ...]", file=sys.stderr)
        return 2
    upstream, port, rate, log = argv[0], int(argv[1]), float(argv[2]), Path(argv[3])
    log.parent.mkdir(parents=True, exist_ok=True)
    app = FaultProxy(upstream, rate, log, tuple(argv[4:]) or DEFAULT_ROUTES)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", timeout_keep_alive=30)
    asyncio.run(uvicorn.Server(config).serve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
