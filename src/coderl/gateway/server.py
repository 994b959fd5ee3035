"""The gateway's HTTP face: OpenAI ``/v1/chat/completions`` and Anthropic ``/v1/messages`` (plain and
streaming), ``/v1/models``; optionally the session admin routes for a trainer in another process.

The session is named by whatever the harness can carry: the ``X-Coderl-Session`` header, the API
key (``Authorization: Bearer <id>`` or ``x-api-key: <id>``), or a base URL of
``.../s/<id>/v1``. The agent-facing app (the one bound into a sandbox) never has admin routes, so
an agent cannot read or end any session, its own included.

Errors are answered from the exception's own attributes (`coderl.errors`): its ``http_status``
(a failure of ours, 5xx, is a 503, which every OpenAI/Anthropic client retries) and its
``api_code`` (OpenAI's error ``code``, e.g. ``context_length_exceeded``); the body's ``type`` is
``invalid_request_error`` for a 4xx and ``api_error`` for a 5xx, as both APIs have it.

`serve` runs the app on sockets it binds itself (TCP on loopback, or a unix socket for a
sandbox bind mount) inside the caller's event loop, so an in-process backend (verl's server
manager) is called from the loop it belongs to.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from collections.abc import Callable, Iterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from coderl.api_token import accepted, token_from
from coderl.errors import BadRequest, CoderlError, GatewaySessionError
from coderl.gateway import dialects
from coderl.gateway.core import Gateway, SessionConfig

SESSION_HEADER = "x-coderl-session"


def session_of(request: Request) -> str | None:
    sid = request.path_params.get("sid") or request.headers.get(SESSION_HEADER)
    if sid:
        return sid
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    return request.headers.get("x-api-key") or None


def create_app(gateway: Gateway, *, admin: bool = False) -> FastAPI:
    app = FastAPI(title="coderl gateway", docs_url=None, redoc_url=None, openapi_url=None)

    async def body_of(request: Request) -> dict[str, Any]:
        try:
            body = json.loads(await request.body())
        except ValueError:
            raise BadRequest("the request body is not JSON") from None
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object")
        return body

    async def handle(request: Request, parse: Callable[[dict[str, Any]], tuple[list, Any]],
                     whole: Callable, stream: Callable[..., Iterator[str]],
                     error: Callable[[CoderlError, str], dict]) -> Response:
        try:
            body = await body_of(request)
            try:
                messages, tools = parse(body)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise BadRequest(f"malformed request: {exc}") from None
            max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
            if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
                raise BadRequest("max_tokens must be a positive integer")
            try:
                turn = await gateway.turn(session_of(request), messages, tools, max_tokens)
            except ValueError as exc:
                raise BadRequest(f"malformed messages: {exc}") from None
        except CoderlError as exc:
            status = exc.http_status if exc.http_status < 500 else 503
            return JSONResponse(error(exc, "invalid_request_error" if status < 500 else "api_error"),
                                status_code=status)
        if body.get("stream"):  # the turn is complete: its events go out in one write, no thread hops
            return Response("".join(stream(turn, gateway.model_name)), media_type="text/event-stream",
                            headers={"Cache-Control": "no-cache"})
        return JSONResponse(whole(turn, gateway.model_name))

    def openai_parse(body: dict[str, Any]) -> tuple[list, Any]:
        return body["messages"], dialects.openai_tools(body.get("tools"))

    def anthropic_parse(body: dict[str, Any]) -> tuple[list, Any]:
        return dialects.anthropic_messages(body.get("system"), body["messages"]), dialects.anthropic_tools(body.get("tools"))

    def openai_err(exc: CoderlError, kind: str) -> dict:
        return dialects.openai_error(str(exc), kind, exc.api_code)

    def anthropic_err(exc: CoderlError, kind: str) -> dict:
        return dialects.anthropic_error(str(exc), kind)

    async def chat_completions(request: Request) -> Response:
        return await handle(request, openai_parse, dialects.openai_response, dialects.openai_stream, openai_err)

    async def messages(request: Request) -> Response:
        return await handle(request, anthropic_parse, dialects.anthropic_response, dialects.anthropic_stream,
                            anthropic_err)

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": gateway.model_name, "object": "model",
                                                         "owned_by": "coderl"}]})

    for prefix in ("", "/s/{sid}"):
        app.add_api_route(prefix + "/v1/chat/completions", chat_completions, methods=["POST"])
        app.add_api_route(prefix + "/v1/messages", messages, methods=["POST"])
        app.add_api_route(prefix + "/v1/models", models, methods=["GET"])

    if admin:
        add_admin_routes(app, gateway)
    return app


def add_admin_routes(app: FastAPI, gateway: Gateway, token: str | None = None) -> None:
    """``POST /sessions`` {id, max_context?, max_response?, timeout_s?, sampling?},
    ``GET /sessions/<id>`` (summary + token record), ``DELETE /sessions/<id>`` (close, record).
    With the operator's API token (``token``, default ``$CODERL_API_TOKEN``: `coderl.api_token`)
    each needs it (``Authorization: Bearer`` or ``X-Coderl-Token``), else 401."""
    token = token_from() if token is None else token

    def refused(request: Request) -> Response | None:
        if not token or accepted({k.lower(): v for k, v in request.headers.items()}, token):
            return None
        return JSONResponse({"error": "the gateway's admin routes take the operator's API token: send "
                                      "'Authorization: Bearer <token>' or 'X-Coderl-Token: <token>'"},
                            status_code=401, headers={"WWW-Authenticate": "Bearer"})

    @app.post("/sessions")
    async def open_session(request: Request) -> Response:
        if (answer := refused(request)) is not None:
            return answer
        try:
            body = json.loads(await request.body())
            keys = {"max_context", "max_response", "max_prompt", "timeout_s", "sampling"}
            config = SessionConfig(**{k: v for k, v in body.items() if k in keys})
            session = gateway.open(str(body["id"]), config)
        except (ValueError, KeyError, TypeError, BadRequest) as exc:
            return JSONResponse({"error": f"bad session request: {exc}"}, status_code=400)
        return JSONResponse(session.summary())

    @app.get("/sessions/{sid}")
    async def show_session(sid: str, request: Request) -> Response:
        if (answer := refused(request)) is not None:
            return answer
        session = gateway.sessions.get(sid)
        if session is None:
            return JSONResponse({"error": f"unknown session {sid!r}"}, status_code=404)
        return JSONResponse({**session.summary(), "trajectory": session.trajectory.to_dict()})

    @app.delete("/sessions/{sid}")
    async def close_session(sid: str, request: Request) -> Response:
        if (answer := refused(request)) is not None:
            return answer
        try:
            session = await gateway.close(sid)
        except GatewaySessionError as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.http_status)
        return JSONResponse({**session.summary(), "trajectory": session.trajectory.to_dict()})


def bind(address: str) -> socket.socket:
    """``unix:/path`` or ``host:port`` (port 0: any free one) -> a listening socket."""
    if address.startswith("unix:"):
        path = address[5:]
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(path)
        os.chmod(path, 0o666)  # the sandbox's unprivileged uid must be able to connect
    else:
        host, _, port = address.rpartition(":")
        # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted connections only then, and
        # without it every response waits out a delayed ACK (44 ms per call on loopback, measured)
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM,
                             socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host or "127.0.0.1", int(port)))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


class _QuietServer:
    """A uvicorn server that leaves the process's signal handlers alone (it runs inside a trainer)."""

    def __init__(self, app: FastAPI, log_level: str) -> None:
        import uvicorn

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                yield

        self.server = Server(uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="off"))


class Served:
    """Running listeners of one gateway; ``address`` of each, ``stop()`` to end them."""

    def __init__(self) -> None:
        self.addresses: list[str] = []
        self._servers: list[Any] = []
        self._tasks: list[asyncio.Task] = []

    async def stop(self) -> None:
        for server in self._servers:
            server.should_exit = True
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def serve(gateway: Gateway, addresses: list[str], *, admin_addresses: tuple[str, ...] = (),
                log_level: str = "warning") -> Served:
    """Start listeners in the running loop. ``addresses`` get the agent-facing app; those also in
    ``admin_addresses`` get the admin routes too."""
    served = Served()
    for address in addresses:
        sock = bind(address)
        app = create_app(gateway, admin=address in admin_addresses)
        quiet = _QuietServer(app, log_level)
        served._servers.append(quiet.server)
        served._tasks.append(asyncio.create_task(quiet.server.serve(sockets=[sock])))
        name = sock.getsockname()
        served.addresses.append(address if address.startswith("unix:") else f"{name[0]}:{name[1]}")
    for server, task in zip(served._servers, served._tasks, strict=True):  # wait until each accepts connections
        while not server.started:
            if task.done():
                await served.stop()
                raise OSError(f"the gateway could not start: {task.exception()!r}")
            await asyncio.sleep(0.005)
    return served
