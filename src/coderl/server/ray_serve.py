"""Scale-out on the Ray cluster verl already runs: the same FastAPI app as a Ray Serve
deployment, replicas spread over the nodes, Ray Serve's HTTP proxy on every node.

Each replica owns its own engine (its slots on its node); clients give the list of node URLs to
`SandboxClient`, which retries 429/503/504 and connection errors on the next one.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from coderl.server.settings import Settings

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


def build_app(settings: Settings, *, replicas: int | None = None, cpus_per_replica: float = 1.0) -> Any:
    """The bound Ray Serve application (call ``serve.run`` on it)."""
    from ray import serve

    from coderl.server.app import create_app

    app = create_app(settings)

    @app.middleware("http")
    async def replica_header(request, call_next):  # type: ignore[no-untyped-def]
        response = await call_next(request)
        response.headers["X-Coderl-Replica"] = f"{socket.gethostname()}:{os.getpid()}"
        return response

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
