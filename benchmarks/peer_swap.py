"""pytest plugin for benchmarks/peer_suites.sh: SandboxFusion's own tests with only the endpoint
swapped. Their tests build ``TestClient(app)`` over SandboxFusion's in-process FastAPI app; here
``sandbox.server.server.app`` is a placeholder (their server is never imported) and ``TestClient``
an HTTP client to CODERL_PEER_URL, a running `coderl serve`. Nothing else of their tests changes."""

from __future__ import annotations

import os
import sys
import types

import fastapi.testclient
import httpx

_server = types.ModuleType("sandbox.server.server")
_server.app = object()  # type: ignore[attr-defined]
sys.modules["sandbox.server.server"] = _server


class RemoteClient(httpx.Client):
    __test__ = False  # not a test class, whatever pytest's name rules say

    def __init__(self, app: object = None, *args: object, **kwargs: object) -> None:
        super().__init__(base_url=os.environ["CODERL_PEER_URL"], timeout=600)


fastapi.testclient.TestClient = RemoteClient  # type: ignore[misc]
