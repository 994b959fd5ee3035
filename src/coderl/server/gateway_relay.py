"""One remote session's link to the gateway: a unix socket on the sandbox node, relayed to the
gateway's network address with the session's credential.

On one machine a session sandbox gets the gateway's own unix socket bound in. On a sandbox node
the gateway is elsewhere, so the session service gives each session a socket of its own (bound
into the sandbox at ``/run/coderl/gateway.sock`` and relayed inside to ``127.0.0.1:18001``, as
before) and answers it here, in the service process, as a small HTTP/1.1 proxy that:

- forwards only the model calls (``POST /v1/chat/completions``, ``POST /v1/messages``,
  ``GET /v1/models``, also under ``/s/<id>/``); anything else, the gateway's admin routes
  included, is 403 here and never reaches the network;
- carries the session's credential (the gateway session id, 128 random bits, which the gateway
  maps to exactly one session) to the gateway in ``Authorization``; a request that names any
  other credential or session (in its API key, ``X-Coderl-Session`` or path) is 403, so a
  sandbox can neither act as another episode nor learn whether another id exists;
- refuses bodies over ``MAX_BODY_BYTES`` (413) and streams the answer back as it comes (SSE).

The sandbox has no network of its own, so this socket is its only way out, and the service's own
port and the gateway's admin listener are unreachable from it. A relay is created before its
session is handed out (warm pool) and gets its target with `attach`; until then it answers 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import os
import re
from pathlib import Path

import h11
import httpx

MAX_BODY_BYTES = 16 << 20
_DISCARD_BYTES = 4 * MAX_BODY_BYTES  # of a body over the cap, read and dropped before the 413
MODEL_ROUTES = {("POST", "/v1/chat/completions"), ("POST", "/v1/messages"), ("GET", "/v1/models")}
_SESSION_PATH = re.compile(r"^/s/([^/]+)(/v1/.*)$")
_DROPPED = {b"host", b"authorization", b"x-api-key", b"x-coderl-session", b"connection", b"content-length",
            b"transfer-encoding", b"keep-alive", b"proxy-authorization", b"upgrade"}
_DROPPED_BACK = {b"content-length", b"transfer-encoding", b"connection", b"keep-alive"}


class GatewayRelay:
    """The unix socket at ``path`` and the proxy behind it; ``http`` is the service's shared
    client (one connection pool to the gateway for every session)."""

    def __init__(self, path: Path, http: httpx.AsyncClient) -> None:
        self.path = path
        self.http = http
        self.url: str | None = None
        self._credential = ""
        self._server: asyncio.AbstractServer | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(self._accept, path=str(self.path))
        os.chmod(self.path, 0o666)  # the sandbox's uid 65534 connects through the bind mount

    def attach(self, url: str, credential: str) -> None:
        """Point the relay at the gateway (``http://host:port``) with the session's credential."""
        self.url, self._credential = url.rstrip("/"), credential

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._connections):
            task.cancel()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request = await _read_request(conn, reader)
                if request is None:
                    break
                await self._answer(conn, writer, *request)
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    break
                conn.start_next_cycle()
        except (h11.ProtocolError, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._connections.discard(task)
            writer.close()

    async def _answer(self, conn: h11.Connection, writer: asyncio.StreamWriter, request: h11.Request,
                      body: bytes | None) -> None:
        method, target = request.method.decode(), request.target.decode("latin-1").split("?", 1)[0]
        presented = _credentials(request.headers)
        if match := _SESSION_PATH.match(target):
            presented.add(match.group(1))
            target = match.group(2)
        if body is None:
            return await _reply(conn, writer, 413, f"request body over {MAX_BODY_BYTES >> 20} MiB")
        if (method, target) not in MODEL_ROUTES:
            return await _reply(conn, writer, 403, f"{method} {target} is not a model call; a sandbox may make "
                                                   "model calls only")
        if self.url is None:
            return await _reply(conn, writer, 503, "this session has no gateway link")
        if any(not hmac.compare_digest(p, self._credential) for p in presented):
            return await _reply(conn, writer, 403, "the credential names another session: a sandbox may act "
                                                   "as its own session only")
        headers = [(k, v) for k, v in request.headers if k.lower() not in _DROPPED]
        headers.append((b"authorization", b"Bearer " + self._credential.encode()))
        try:
            upstream = self.http.build_request(method, self.url + target, headers=headers, content=body)
            response = await self.http.send(upstream, stream=True)
        except httpx.HTTPError as exc:
            return await _reply(conn, writer, 502, f"the gateway cannot be reached ({type(exc).__name__})")
        try:
            back = [(k, v) for k, v in response.headers.raw if k.lower() not in _DROPPED_BACK]
            writer.write(conn.send(h11.Response(status_code=response.status_code, headers=back)) or b"")
            async for chunk in response.aiter_raw():
                writer.write(conn.send(h11.Data(data=chunk)) or b"")
                await writer.drain()
            writer.write(conn.send(h11.EndOfMessage()) or b"")
            await writer.drain()
        finally:
            await response.aclose()


def _credentials(headers: list[tuple[bytes, bytes]]) -> set[str]:
    """Every session id or key the request names (``Bearer``, ``x-api-key``, ``X-Coderl-Session``)."""
    out = set()
    for name, value in headers:
        text = value.decode("latin-1").strip()
        if name == b"authorization" and text.lower().startswith("bearer "):
            text = text[7:].strip()
        elif name not in (b"x-api-key", b"x-coderl-session"):
            continue
        if text:
            out.add(text)
    return out


async def _read_request(conn: h11.Connection, reader: asyncio.StreamReader) -> tuple[h11.Request, bytes | None] | None:
    """The next request and its body (None when over the cap), or None at the end of the connection."""
    request: h11.Request | None = None
    chunks: list[bytes] = []
    size = 0
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            conn.receive_data(await reader.read(1 << 16))
        elif isinstance(event, h11.Request):
            request = event
        elif isinstance(event, h11.Data):
            size += len(event.data)
            if size > _DISCARD_BYTES:  # answered now; the connection then closes
                assert request is not None
                return request, None
            if size <= MAX_BODY_BYTES:
                chunks.append(event.data)
        elif isinstance(event, h11.EndOfMessage):
            # a body over the cap is read to its end (up to _DISCARD_BYTES) and dropped, so the
            # client, still sending, reads the 413 instead of a reset connection
            assert request is not None
            return request, b"".join(chunks) if size <= MAX_BODY_BYTES else None
        elif event is h11.PAUSED or isinstance(event, h11.ConnectionClosed):
            return None


async def _reply(conn: h11.Connection, writer: asyncio.StreamWriter, status: int, message: str) -> None:
    """An error in the OpenAI / Anthropic shape every harness's client reads."""
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error" if status < 500
                                 else "api_error", "code": "relay_refused"}}).encode()
    writer.write(conn.send(h11.Response(status_code=status, headers=[(b"content-type", b"application/json"),
                                                                      (b"content-length", str(len(body)).encode())]))
                 or b"")
    writer.write(conn.send(h11.Data(data=body)) or b"")
    writer.write(conn.send(h11.EndOfMessage()) or b"")
    await writer.drain()
