"""Who may call the service: the operator's API token (`coderl.api_token`) on its own routes.

With a token set (``CODERL_API_TOKEN``, `coderl serve --api-token-file`), every request needs it
(``Authorization: Bearer <token>`` or ``X-Coderl-Token: <token>``), else 401 `TokenRequired`,
except:

- ``/healthz``, ``/readyz`` and ``/metrics``: the kubelet's probes and Prometheus carry no token;
- the SandboxFusion and ScaleBox drop-in routes (`coderl.server.compat`): verl's and the peers'
  unmodified clients cannot send a header, so these stay open and the NetworkPolicy is what
  admits their callers (docs/deploy.md, "Who may call");
- a session's own routes (``/v1/sessions/<id>/...``): the session's token is their credential
  (`coderl.server.sessions`), issued only to a caller the API token admitted to open it.

Without a token nothing changes: a service on loopback or behind its NetworkPolicy, as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from coderl.api_token import accepted

ALWAYS_OPEN = ("/healthz", "/readyz", "/metrics")
_SESSION_OWN = re.compile(r"^/v1/sessions/(?!warm$)[^/]+(/[^/]+(/[^/]+)?)?$")


class RequireToken:
    """Pure ASGI middleware: 401 for a request to a guarded route without the token."""

    def __init__(self, app: ASGIApp, token: str, open_paths: Iterable[str],
                 meta: Callable[[], dict]) -> None:
        self.app = app
        self.token = token
        self.open_paths = frozenset(open_paths)
        self.meta = meta

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._open(scope["path"]):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if accepted(headers, self.token):
            await self.app(scope, receive, send)
            return
        body = {"detail": "this service takes its operator's API token: send 'Authorization: Bearer <token>' "
                          "or 'X-Coderl-Token: <token>' (CODERL_API_TOKEN for coderl's client)",
                "type": "TokenRequired", **self.meta()}
        await JSONResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer"})(scope, receive, send)

    def _open(self, path: str) -> bool:
        return path in self.open_paths or bool(_SESSION_OWN.match(path))
