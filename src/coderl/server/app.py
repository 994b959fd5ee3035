"""The FastAPI application: one engine + judge per process, admission control, metrics, errors.

Errors follow the one exception tree: a bad request is a 4xx with a one-line ``detail`` (422 with
field paths for schema errors, 413 for oversized bodies), a full queue is 429 + Retry-After, our
own failure is 503, and nothing ever answers with a traceback. Every response carries the
isolation mode in ``X-Coderl-Isolation``; with ``--isolation none`` every JSON body also says
``"isolation": "none"`` and a warning.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from coderl import __version__
from coderl.errors import CoderlError
from coderl.server import compat, native, sessions, swe
from coderl.server.auth import ALWAYS_OPEN, RequireToken
from coderl.server.service import UNISOLATED_WARNING, Service
from coderl.server.settings import Settings

log = logging.getLogger("coderl.server")


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings.from_env()
    service = Service(settings)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await service.start()
        log.info(json.dumps({"event": "started", "isolation": service.engine.isolation, "slots": service.engine.size,
                             "languages": sorted(service.engine.languages())}))
        if service.engine.isolation == "none":
            log.warning(UNISOLATED_WARNING)
        try:
            yield
        finally:
            await sessions.shutdown(_app)
            await service.stop()

    app = FastAPI(title="coderl sandbox", version=__version__, lifespan=lifespan,
                  description="Secure batch code execution and judging for code RL. "
                              "Native API under /v1; SandboxFusion and ScaleBox compatible routes.")
    app.state.service = service
    if settings.api_token:  # inside Observe: a 401 is counted and logged as every answer is
        app.add_middleware(RequireToken, token=settings.api_token, meta=service.meta,
                           open_paths=[*ALWAYS_OPEN, *(route.path for route in compat.router.routes)])
    app.add_middleware(Observe, service=service)
    _install_errors(app, service)
    app.include_router(native.router)
    app.include_router(compat.router)
    app.include_router(swe.router)
    app.include_router(sessions.router)
    return app


class Observe:
    """Pure ASGI middleware (Starlette's ``BaseHTTPMiddleware`` costs a task group and two streams
    per request): the body-size cap, declared or streamed (chunked bodies are counted too); the
    isolation header; metrics by matched route; one JSON log line; and a one-line 500 for a bug,
    never a traceback on the wire."""

    def __init__(self, app: ASGIApp, service: Service) -> None:
        self.app = app
        self.service = service
        self.max_bytes = int(service.settings.max_body_mb * 1024 * 1024)
        self.too_large = f"request body over {service.settings.max_body_mb:g} MiB"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        service = self.service
        started = time.monotonic()
        status = 500
        response_started = False
        received = 0
        isolation = (b"x-coderl-isolation", service.engine.isolation.encode())

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_bytes:
                raise StarletteHTTPException(413, self.too_large)
            return message

        async def tagged_send(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status, response_started = message["status"], True
                message["headers"] = [*message.get("headers", ()), isolation]
            await send(message)

        declared = dict(scope["headers"]).get(b"content-length", b"")
        try:
            if declared.isdigit() and int(declared) > self.max_bytes:
                await _error(413, self.too_large, service)(scope, receive, tagged_send)
            else:
                await self.app(scope, counted_receive, tagged_send)
        except Exception as exc:  # a bug of ours: one line in the log, one line to the client
            log.error(json.dumps({"event": "internal_error", "route": scope["path"],
                                  "error": f"{type(exc).__name__}: {exc}"}))
            if not response_started:
                await _error(500, f"internal error: {type(exc).__name__}", service)(scope, receive, tagged_send)
            else:
                status = 500  # the response was cut short: counted as what it was
        finally:  # every request is counted and logged, however it ended
            elapsed = time.monotonic() - started
            known = getattr(scope.get("route"), "path", "other")  # the matched route, never raw paths
            service.metrics.requests.labels(known, str(status)).inc()
            service.metrics.latency.labels(known).observe(elapsed)
            if scope["path"] not in ("/metrics", "/healthz"):
                log.info(json.dumps({"event": "request", "method": scope["method"], "route": scope["path"],
                                     "status": status, "ms": round(elapsed * 1000, 2)}))


def _install_errors(app: FastAPI, service: Service) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        content_type = request.headers.get("content-type", "")
        if request.method == "POST" and "json" not in content_type:
            # curl -d without -H sends a form; pydantic would only say "Field required"
            got = content_type.split(";")[0] or "none"
            return _error(415, f"send the body as JSON with 'Content-Type: application/json' (got {got})", service)
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", "")} for e in exc.errors()][:20]
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        where = ".".join(str(p) for p in first["loc"])
        return JSONResponse({"detail": f"{where}: {first['msg']}", "errors": errors, **service.meta()}, status_code=422)

    @app.exception_handler(CoderlError)
    async def coderl_error(_request: Request, exc: CoderlError) -> JSONResponse:
        return _error(exc.http_status, str(exc), service, kind=type(exc).__name__)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail), service)


def _error(status: int, detail: str, service: Service, kind: str | None = None) -> JSONResponse:
    """``kind``: the `coderl.errors` class, so a client raises the same one (errors.from_wire)."""
    headers = {"Retry-After": "1"} if status in (429, 503, 504) else None
    body = {"detail": detail, **({"type": kind} if kind else {}), **service.meta()}
    return JSONResponse(body, status_code=status, headers=headers)
