"""A Ray cluster of several nodes on this machine (one raylet each, ``ray.cluster_utils.Cluster``):
a head node that stands for the trainer's (no sandbox capacity) and sandbox nodes that advertise
``coderl_sandbox``. A node is killed as a machine dies: its raylet and every process of it go at
once (SIGKILL), with no chance to hand anything over.

The cluster is the test's own (its own GCS on a free port), never a verl run's or another test's."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from coderl.server.ray_sessions import NAMESPACE, SANDBOX_RESOURCE
from tests.helpers.poll import wait_for


@dataclass
class LocalCluster:
    cluster: Any
    sandbox_nodes: list[Any] = field(default_factory=list)

    def add_sandbox_node(self, capacity: float, num_cpus: int = 0) -> Any:
        """A sandbox node as docs/deploy.md starts one: its capacity in ``coderl_sandbox`` and no
        CPUs for Ray to hand to anything else (the replicas ask for none)."""
        node = self.cluster.add_node(num_cpus=num_cpus, resources={SANDBOX_RESOURCE: capacity},
                                     include_dashboard=False)
        self.sandbox_nodes.append(node)
        self.cluster.wait_for_nodes()
        return node

    def kill_node(self, node: Any) -> list[int]:
        """SIGKILL the node's worker processes (its actors: the replicas and their sandboxes, which
        die with their parent), then its raylet and the rest: no graceful step anywhere. Returns the
        pids of the workers killed."""
        workers = _workers_of(node)
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.cluster.remove_node(node, allow_graceful=False)
        self.sandbox_nodes.remove(node)
        return workers

    def live_sandbox_capacity(self) -> float:
        import ray

        return sum(n["Resources"].get(SANDBOX_RESOURCE, 0.0) for n in ray.nodes() if n["Alive"])


@contextlib.contextmanager
def sandbox_cluster(nodes: int, capacity: float, *, head_cpus: int = 1) -> Iterator[LocalCluster]:
    """A head node (``head_cpus``, no sandbox capacity) and ``nodes`` sandbox nodes of
    ``capacity`` each, with the driver (this process) connected in namespace ``coderl``."""
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": head_cpus, "include_dashboard": False})
    local = LocalCluster(cluster)
    try:
        for _ in range(nodes):
            local.add_sandbox_node(capacity)
        ray.init(address=cluster.address, namespace=NAMESPACE)
        wait_for(local.live_sandbox_capacity, lambda c: c == nodes * capacity, timeout_s=120,
                 what=f"{nodes} sandbox nodes of {capacity:g} {SANDBOX_RESOURCE} alive")
        yield local
    finally:
        ray.shutdown()
        cluster.shutdown()


def _workers_of(node: Any) -> list[int]:
    """The processes the node's raylet started: its workers (the actors) and agents."""
    raylet = node.all_processes["raylet"][0].process.pid
    children = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError, IndexError, ValueError), open(f"/proc/{entry}/stat") as fh:
            if int(fh.read().rsplit(")", 1)[1].split()[1]) == raylet:
                children.append(int(entry))
    return children


def free_port_range(host: str, count: int) -> int:
    """The first of ``count`` consecutive ports free on ``host`` at the moment of asking (the
    replicas bind the first free one of their range themselves, so a port taken meanwhile only
    moves a replica up the range)."""
    import socket

    for _ in range(100):
        with socket.socket() as probe:
            probe.bind((host, 0))
            base = probe.getsockname()[1]
        if base + count > 65535:
            continue
        held: list[socket.socket] = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                held.append(sock)
                sock.bind((host, port))
            return base
        except OSError:
            continue
        finally:
            for sock in held:
                sock.close()
    raise AssertionError(f"no {count} consecutive free ports on {host} in 100 tries")
