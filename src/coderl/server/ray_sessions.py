"""Session replicas on the Ray cluster: `coderl serve` processes placed on the nodes meant for
sandboxes, by the free capacity those nodes advertise.

Why not Ray Serve (as the judging replicas are): an agent session is state that lives in one
process (its sandbox, its PID 1, its layer), so every request of a session must reach the replica
that opened it. Ray Serve's proxy routes each request to any replica; a replica here is therefore
a plain Ray actor that serves the whole FastAPI app on its own port of its node, and a session
stays with the URL that opened it.

Placement: a sandbox node advertises a custom resource, ``coderl_sandbox: N`` (N = the episodes it
can hold, the sizing rule of docs/deploy.md); each replica asks for ``episodes_per_replica`` units
of it and no CPU (the sandboxes' CPUs are the node's, not Ray's to count), so replicas land only
where that capacity is free and never on the trainer's nodes, which advertise none. ``SPREAD``
puts replicas on different nodes first.

Faults: a replica is restarted by Ray whenever its process or node dies (``max_restarts=-1``): at
once where capacity is free, or when a sandbox node comes back. Its sessions died with it (the
sandboxes die with their parent: bubblewrap's --die-with-parent), so their requests fail and the
agent loop counts those samples ``sandbox_error`` (masked). A restarted replica binds the first
free port of the same range on its node, so on the same node it takes the URL it had and a
trainer's fixed URL list keeps working; ``SessionFleet.urls`` reads the live list from Ray.

Caches: snapshots and environments go to ``CODERL_CACHE`` on the node's own disk, shared by the
node's replicas (built once per node: `coderl.swe.store.build_once` builds under an flock and
renames into place; flock is not reliable on network file systems, so the cache is node-local).
"""

from __future__ import annotations

import errno
import itertools
import os
import signal
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coderl.errors import BadRequest, ServiceUnavailable
from coderl.server.settings import Settings

SANDBOX_RESOURCE = "coderl_sandbox"
NAMESPACE = "coderl"
ACTOR_PREFIX = "coderl-sessions-"
_START_TIMEOUT_S = 120.0  # the app's lifespan starts the judging engine: seconds on a loaded node


@dataclass(frozen=True, kw_only=True)
class Placement:
    """How many replicas, how much sandbox capacity each takes, and the ports they bind."""

    replicas: int
    episodes_per_replica: float = 1.0
    port_base: int = 8090  # each replica binds the first free port of [port_base, port_base + ports)
    ports: int = 16
    env: dict[str, str] = field(default_factory=dict)  # for the replica processes (CODERL_SWE_REPOS, ...)

    def __post_init__(self) -> None:
        if self.replicas < 1 or self.episodes_per_replica <= 0 or self.ports < 1:
            raise BadRequest("replicas, episodes per replica and ports must be positive")
        if not 0 < self.port_base <= 65536 - self.ports:
            raise BadRequest(f"port range {self.port_base}..{self.port_base + self.ports - 1} is not valid")


def bind_first_free(host: str, port_base: int, ports: int) -> socket.socket:
    """A listening socket on the first free port of the range (SO_REUSEADDR, so a port left in
    TIME_WAIT by the replica's previous life is taken again)."""
    for port in range(port_base, port_base + ports):
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            sock.close()
            if exc.errno == errno.EADDRINUSE:
                continue
            raise
        sock.listen(1024)
        sock.set_inheritable(False)  # the sandboxes must not hold the replica's port
        return sock
    raise ServiceUnavailable(f"no free port in {port_base}..{port_base + ports - 1} on {host}")


class ReplicaServer:
    """One `coderl serve` app in a Ray actor: uvicorn in a thread of the actor's process, so the
    service (and, through --die-with-parent, every sandbox it started) dies with the actor. Ready
    when the constructor returns: Ray restarts an actor by calling it again."""

    def __init__(self, settings: Settings, port_base: int, ports: int, env: dict[str, str]) -> None:
        import uvicorn
        from ray.util import get_node_ip_address

        from coderl.server.app import create_app

        os.environ.update(env)
        self.node_ip = get_node_ip_address()
        bind_host = self.node_ip if settings.host in ("127.0.0.1", "localhost") else settings.host
        sock = bind_first_free(bind_host, port_base, ports)
        port = sock.getsockname()[1]
        self.address = f"http://[{self.node_ip}]:{port}" if ":" in self.node_ip else f"http://{self.node_ip}:{port}"
        # Its layers and relays under a directory named by its port: no two live replicas of a node
        # share it, and a replica restarted on its node (same port) unmounts what its killed
        # predecessor left (SessionHost.start removes the layers of dead processes).
        base = Path(os.environ.get("CODERL_SESSION_DIR") or tempfile.gettempdir())
        os.environ["CODERL_SESSION_DIR"] = str(base / f"coderl-replica-{port}")
        config = uvicorn.Config(create_app(settings), log_level=settings.log_level, access_log=False,
                                timeout_graceful_shutdown=5)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True,
                                        name="coderl-replica")
        self._thread.start()
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ServiceUnavailable(f"the replica at {self.address} did not start within {_START_TIMEOUT_S:g} s")
            time.sleep(0.05)

    def stop(self, timeout_s: float = 60.0) -> None:
        """Stop serving: uvicorn's shutdown runs the app's lifespan end, which closes every session
        (processes, overlays, cgroups), so a fleet stopped on purpose leaves nothing mounted."""
        self._server.should_exit = True
        self._thread.join(timeout_s)

    def where(self) -> dict[str, Any]:
        """The replica's URL, node and process (what a test or an operator checks placement with)."""
        import ray

        return {"url": self.address, "node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}


class SessionFleet:
    """The driver's handle on the replicas: places them, lists the live ones, stops them. Replicas
    are named actors (``coderl-sessions-<i>`` in namespace ``coderl``) owned by this driver: they
    end when it does, so a trainer or `coderl serve --ray` that exits leaves no sandbox behind."""

    def __init__(self, settings: Settings, placement: Placement) -> None:
        self.settings = settings
        self.placement = placement
        self.actors: list[Any] = []

    def start(self) -> None:
        import ray

        free = ray.cluster_resources().get(SANDBOX_RESOURCE, 0.0)
        if free <= 0:
            raise BadRequest(f"no node of this Ray cluster advertises the {SANDBOX_RESOURCE!r} resource: start the "
                             f"sandbox nodes with ray start --resources '{{\"{SANDBOX_RESOURCE}\": N}}'")
        p = self.placement
        options = {"resources": {SANDBOX_RESOURCE: p.episodes_per_replica}, "num_cpus": 0, "max_restarts": -1,
                   "max_task_retries": 0, "max_concurrency": 4, "scheduling_strategy": "SPREAD",
                   "namespace": NAMESPACE}
        # a replica holds as many sessions as the capacity it took (past it: 429, the next replica)
        env = {"CODERL_SESSIONS_MAX": str(max(1, int(p.episodes_per_replica))), **p.env}
        remote = ray.remote(ReplicaServer)
        self.actors = [remote.options(name=f"{ACTOR_PREFIX}{i}", **options).remote(self.settings, p.port_base,
                                                                                   p.ports, env)
                       for i in range(p.replicas)]

    def replicas(self, timeout_s: float = 5.0) -> list[dict[str, Any]]:
        """``where()`` of each replica that answers within ``timeout_s``; a replica being restarted,
        or waiting for capacity (its node gone), is left out."""
        import ray

        pending = {actor.where.remote(): i for i, actor in enumerate(self.actors)}
        ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=timeout_s)
        found = []
        for ref in ready:
            try:
                found.append({"replica": pending[ref], **ray.get(ref)})
            except ray.exceptions.RayError:  # died between answering and now: not live
                continue
        return sorted(found, key=lambda r: r["replica"])

    def urls(self, timeout_s: float = 5.0) -> list[str]:
        return [r["url"] for r in self.replicas(timeout_s)]

    def wait_ready(self, timeout_s: float = 300.0) -> list[str]:
        """Every replica's URL, once all answer (bounded: names how many did)."""
        deadline = time.monotonic() + timeout_s
        urls: list[str] = []
        while time.monotonic() < deadline:
            urls = self.urls()
            if len(urls) == len(self.actors):
                return urls
            time.sleep(0.5)
        raise ServiceUnavailable(f"{len(urls)} of {len(self.actors)} session replicas answered within "
                                 f"{timeout_s:g} s: is there {SANDBOX_RESOURCE} capacity for all of them?")

    def stop(self, timeout_s: float = 90.0) -> None:
        """Each replica stopped gracefully (its sessions closed), then its actor ended; a replica
        that cannot answer (its node gone) is only ended."""
        import ray

        if not self.actors:
            return
        stopping = [actor.stop.remote() for actor in self.actors]
        ray.wait(stopping, num_returns=len(stopping), timeout=timeout_s)
        for actor in self.actors:
            ray.kill(actor, no_restart=True)
        self.actors = []


class ReplicaSessions:
    """The trainer's side of a replica list: each session is opened on the next replica in turn,
    past any that refuses (its node lost, or full: `ServiceUnavailable` after ``open_retries``), and
    every later call of that session goes to the replica that opened it (`RemoteSession`: a
    session's state lives in one process). ``replica_of`` maps a session id to its replica's URL.
    With one URL it opens as that URL's `SessionService` does (its retries)."""

    def __init__(self, urls: list[str], *, open_retries: int = 1, timeout_s: float = 120.0) -> None:
        from coderl.client import SessionService

        if not urls:
            raise BadRequest("no session replica URLs given")
        self.services = [SessionService(url, timeout_s=timeout_s) for url in urls]
        if len(urls) > 1:  # a dead replica costs one retry, not the client's four (one URL: nowhere else to go)
            for service in self.services:
                service.client.retries = open_retries
        self.replica_of: dict[str, str] = {}
        self._next = itertools.count()

    async def open(self, task: dict[str, Any] | None = None, **options: Any) -> Any:
        """A `RemoteSession` (``options`` as `SessionService.open`: limits, env, gateway, lease_s)."""
        first = next(self._next)
        refused = []
        for k in range(len(self.services)):
            service = self.services[(first + k) % len(self.services)]
            try:
                session = await service.open(task, **options)
            except ServiceUnavailable as exc:
                refused.append(f"{service.url}: {exc}")
                continue
            self.replica_of[session.id] = service.url
            return session
        raise ServiceUnavailable(f"no session replica opened a session: {'; '.join(refused)}"[:2000])

    async def aclose(self) -> None:
        for service in self.services:
            await service.aclose()

    async def __aenter__(self) -> ReplicaSessions:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def deploy_sessions(settings: Settings, *, episodes_per_replica: float, replicas: int | None = None) -> int:
    """`coderl serve --ray --episodes-per-replica E`: join the Ray cluster, place the replicas
    (default: as many as the cluster's sandbox capacity holds), print their URLs (the trainer's
    comma-separated list), keep them until interrupted. Replicas bind ``settings.port`` upwards."""
    import ray

    try:
        ray.init(address=os.environ.get("RAY_ADDRESS", "auto"), namespace=NAMESPACE)
    except ConnectionError as exc:
        raise BadRequest(f"no Ray cluster to place session replicas on ({exc}); start one with ray start --head, "
                         "its sandbox nodes with ray start --resources (docs/deploy.md)") from None
    capacity = ray.cluster_resources().get(SANDBOX_RESOURCE, 0.0)
    env = {k: v for k, v in os.environ.items() if k.startswith("CODERL_")}
    placement = Placement(replicas=replicas or max(1, int(capacity // episodes_per_replica)),
                          episodes_per_replica=episodes_per_replica, port_base=settings.port, env=env)
    fleet = SessionFleet(settings, placement)
    # SIGTERM (a supervisor, `docker stop`) stops as Ctrl-C does: the replicas close their
    # sessions first; ended without that, they would leave their layers mounted on the nodes
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        fleet.start()
        urls = fleet.wait_ready()
        print(f"coderl session replicas on Ray: {len(urls)} ({placement.episodes_per_replica:g} "
              f"{SANDBOX_RESOURCE} each)\n{','.join(urls)}", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    finally:
        fleet.stop()


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt
