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
    serve.start(http_options={"host": settings.host, "port": settings.port, "location": "EveryNode"})
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
