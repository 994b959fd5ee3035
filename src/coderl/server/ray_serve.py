"""Scale-out on the Ray cluster verl already runs: the same FastAPI app as a Ray Serve
deployment, replicas spread over the nodes, Ray Serve's HTTP proxy on every node.

Each replica owns its own engine (its slots on its node); clients give the list of node URLs to
`SandboxClient`, which retries 429/503/504 and connection errors on the next one.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any

from coderl.server.settings import Settings

# How long a replica waits for the next part of a request's body before answering 504. Ray Serve's
# replica fetches the body from the proxy's per-request queue, which the first fetch empties: when
# the replica the proxy chose dies after fetching it but before its acceptance reached the proxy,
# the proxy sends the request to another replica, whose fetch then waits until the client goes
# away (seen: a kill-test request hung 180 s on the survivor, issue 49). The proxy holds the body
# it received, so a fetch answers in milliseconds; 15 s is slack for a starved node. A 504 is sent
# again by `SandboxClient` and by verl's SandboxFusion client (which retries only a 504).
BODY_WAIT_S = 15.0

# Ray Serve's controller restarts an HTTP proxy that misses 3 checks in a row: 5 s each for the
# readiness check while it starts, 10 s each for the health check (every 10 s) after. On a node
# whose CPUs verl's workers keep busy a live proxy misses them: a proxy starved of CPU for 50 s was
# restarted, and at load 6-10 on 2 cores `serve.start` itself failed when its proxy missed 3
# readiness checks. A restart resets every connection through that node and refuses new ones
# until the new proxy is up (seconds; longer on a loaded node, where the new one can miss its
# readiness checks too), which spends the clients' retries. 60 s per readiness check tolerates 3
# minutes to start (one took over 60 s at load 8-10, and 65 s frozen + load exceeded 3 x 30 s),
# 30 s per health check 2 minutes of starvation after; a proxy that died fails them without a wait.
PROXY_CHECK_ENV = {"RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S": "60", "RAY_SERVE_PROXY_HEALTH_CHECK_TIMEOUT_S": "30"}


def start_serve(http_options: dict[str, Any]) -> None:
    """``serve.start`` with proxy checks that a loaded node passes (`PROXY_CHECK_ENV`; they apply
    when this call creates the Serve controller, not to one already running in the cluster).

    ``serve.start`` waits a fixed 60 s for the proxy; at load 8-10 on 2 cores one took longer to
    start, and the controller keeps it (the checks above): the second call connects to that
    controller, and the proxy answers once it is up (callers wait for ``/readyz``)."""
    from ray import serve

    options = {"runtime_env": {"env_vars": PROXY_CHECK_ENV}}
    try:
        serve.start(http_options=http_options, controller_options=options)
    except TimeoutError:
        serve.start(http_options=http_options, controller_options=options)


Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
Asgi = Callable[[dict[str, Any], Receive, Send], Awaitable[None]]


class BodyDeadline:
    """ASGI middleware: a request's body is read before the app sees it, each part waited for at
    most ``wait_s``; a body that stops coming, or ends short of its Content-Length, is answered
    504 (the client sends it again) instead of holding the request until its client gives up. The
    app then reads the same messages, and later ones (a disconnect) from the server as before. A
    body past ``max_bytes`` is handed on unfinished, for the app's size cap to refuse."""

    def __init__(self, app: Asgi, *, wait_s: float = BODY_WAIT_S, max_bytes: int) -> None:
        self.app = app
        self.wait_s = wait_s
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        if scope["type"] != "http" or (b"content-length" not in headers and b"transfer-encoding" not in headers):
            await self.app(scope, receive, send)
            return
        messages: list[dict[str, Any]] = []
        size, complete = 0, False
        while not complete and size <= self.max_bytes:
            try:
                message = await asyncio.wait_for(receive(), self.wait_s)
            except TimeoutError:
                await _body_lost(send, f"the request's body stopped arriving for {self.wait_s:g} s "
                                       f"(a proxy lost it); send it again")
                return
            if message["type"] != "http.request":  # the client went away: nobody to answer
                return
            messages.append(message)
            size += len(message.get("body", b""))
            complete = not message.get("more_body", False)
        declared = headers.get(b"content-length", b"")
        if complete and declared.isdigit() and int(declared) != size:
            await _body_lost(send, f"the request's body arrived with {size} of its {int(declared)} bytes "
                                   f"(a proxy lost part of it); send it again")
            return

        async def replay() -> dict[str, Any]:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


async def _body_lost(send: Send, detail: str) -> None:
    payload = json.dumps({"detail": detail, "type": "DeadlineExceeded"}).encode()
    await send({"type": "http.response.start", "status": 504,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]})
    await send({"type": "http.response.body", "body": payload})


def replica_app(settings: Settings, *, body_wait_s: float = BODY_WAIT_S) -> Any:
    """The FastAPI app one replica serves: the service's, with the replica named in each answer
    (``X-Coderl-Replica``: host:pid) and a deadline on each request's body (`BodyDeadline`)."""
    from coderl.server.app import create_app

    app = create_app(settings)

    @app.middleware("http")
    async def replica_header(request, call_next):  # type: ignore[no-untyped-def]
        response = await call_next(request)
        response.headers["X-Coderl-Replica"] = f"{socket.gethostname()}:{os.getpid()}"
        return response

    app.add_middleware(BodyDeadline, wait_s=body_wait_s, max_bytes=int(settings.max_body_mb * 1024 * 1024))
    return app


def build_app(settings: Settings, *, replicas: int | None = None, cpus_per_replica: float = 1.0) -> Any:
    """The bound Ray Serve application (call ``serve.run`` on it)."""
    from ray import serve

    app = replica_app(settings)

    @serve.deployment(name="coderl-sandbox", num_replicas=replicas or "auto" if replicas is None else replicas,
                      ray_actor_options={"num_cpus": cpus_per_replica},
                      max_ongoing_requests=max(8, settings.queue), health_check_period_s=5)
    @serve.ingress(app)
    class SandboxReplica:
        """One service process per replica; the app's lifespan starts and stops its engine."""

    return SandboxReplica.bind()


def deploy(settings: Settings, *, replicas: int | None = None) -> int:
    """`coderl serve --ray`: join (or start) a Ray cluster and serve until interrupted."""
    import ray
    from ray import serve

    ray.init(address=os.environ.get("RAY_ADDRESS", "auto") if _cluster_running() else None)
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    start_serve({"host": settings.host, "port": settings.port, "location": "EveryNode"})
    serve.run(build_app(settings, replicas=replicas or len(nodes)), name="coderl", route_prefix="/")
    print(f"coderl sandbox on Ray Serve: {replicas or len(nodes)} replica(s), HTTP proxy on every node at "
          f"port {settings.port}")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        serve.shutdown()
    return 0


def _cluster_running() -> bool:
    return bool(os.environ.get("RAY_ADDRESS")) or os.path.exists("/tmp/ray/ray_current_cluster")
