"""What one verl `AgentLoopWorker`'s agent episodes share, owned by one object and closed with it.

verl builds a fresh agent loop per sample, passing each the worker's server manager; what must
outlive a sample (the gateway and its listeners, the session host with its cgroups and seccomp
program, the repository graders with their concurrency) belongs to the worker. `EpisodeWorker.of`
finds the one for a server manager (kept on it), made on first use in the worker's event loop; `aclose` ends
the listeners, closes the sessions and cgroups and removes the socket directory. verl never closes
agent loops and Ray kills its actors, so what a dead worker process left behind is removed by the
next one's start: socket directories named with a pid that no longer runs, and (the session
host's own start) stale cgroups and overlay mounts.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any

from coderl.errors import BadRequest
from coderl.gateway.backends import VerlBackend
from coderl.gateway.chat import ChatFormat
from coderl.gateway.core import Gateway
from coderl.gateway.server import Served, serve
from coderl.sandbox.session import SessionHost
from coderl.sandbox.stale import left_by_dead_process
from coderl.swe.episodes import Episodes, LocalEpisodes, RemoteEpisodes, grading_warm_setting

# Kept on the server manager itself: a registry keyed by it would keep it alive (the worker's
# backend holds it), so neither would ever be collected.
_ATTRIBUTE = "coderl_episode_worker"
_PREFIX = "coderl-gateway-"


class EpisodeWorker:
    """One agent-loop worker's gateway (served on a unix socket for sandboxed harnesses and on
    127.0.0.1 for host ones), session host and the episodes it runs and grades (`coderl.swe.episodes`):
    on this host, or on a session service (one per URL list, made once)."""

    def __init__(self, gateway: Gateway, served: Served, socket_dir: Path) -> None:
        self.gateway, self.served, self.socket_dir = gateway, served, socket_dir
        self.socket_path = str(socket_dir / "gateway.sock")
        self.loop = asyncio.get_running_loop()
        self.host = SessionHost()
        try:  # every task kind, on this host; grading runs started ahead per task as CODERL_GRADING_WARM says
            # (scripts/run_agent_rl.sh sets 1: a GRPO group grades each task several times). Off unless set: a
            # worker verl never closes would leave them to its event loop's end
            warm = grading_warm_setting(os.environ, 0)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        self.local = LocalEpisodes(self.host, gateway_socket=self.socket_path, grading_warm=warm)
        self._remote: dict[tuple[str, str], RemoteEpisodes] = {}
        self.closed = False

    @classmethod
    async def of(cls, server_manager: Any, tokenizer: Any, chat_template_kwargs: dict[str, Any],
                 model_name: str, listen: str = "127.0.0.1:0") -> EpisodeWorker:
        """The worker of this server manager in the running loop, started on first use. ``listen``
        is its TCP listener (host harnesses; sandbox nodes of a remote session service, which need
        a routable address such as ``0.0.0.0:18100``): agent-facing routes only, never admin ones."""
        worker = getattr(server_manager, _ATTRIBUTE, None)
        if worker is None or worker.closed or worker.loop is not asyncio.get_running_loop():
            fmt = ChatFormat(tokenizer, chat_template_kwargs)
            worker = await cls.start(Gateway(fmt, VerlBackend(server_manager, fmt.stop_ids), model_name=model_name),
                                     listen)
            # verl starts a batch's episodes at once: another one may have stored its worker while
            # this one started; keep that one, so the worker has one gateway and one session host
            stored = getattr(server_manager, _ATTRIBUTE, None)
            if stored is not None and not stored.closed and stored.loop is worker.loop:
                await worker.aclose()
                return stored
            setattr(server_manager, _ATTRIBUTE, worker)
        return worker

    @classmethod
    async def start(cls, gateway: Gateway, listen: str = "127.0.0.1:0") -> EpisodeWorker:
        _remove_stale_socket_dirs()
        socket_dir = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-"))
        socket_dir.chmod(0o755)  # the sandbox's unprivileged uid connects to the socket inside
        try:
            served = await serve(gateway, [f"unix:{socket_dir / 'gateway.sock'}", listen])
        except BaseException:
            shutil.rmtree(socket_dir, ignore_errors=True)
            raise
        return cls(gateway, served, socket_dir)

    @property
    def http_url(self) -> str:
        """The TCP listener's URL; a wildcard bind is named by this node's address."""
        host, port = self.served.addresses[1].rsplit(":", 1)
        if host in ("0.0.0.0", "::", "[::]"):
            host = node_address()
        return f"http://{host}:{port}"

    def episodes(self, sessions_url: str = "", gateway_url: str = "") -> Episodes:
        """Where this worker's episodes run and are graded: here, or on the session service at
        ``sessions_url`` (one URL or a replica list, comma-separated) that reaches the gateway at
        ``gateway_url`` (default: this worker's TCP listener)."""
        if not sessions_url:
            return self.local
        key = (sessions_url, gateway_url or self.http_url)
        if key not in self._remote:
            from coderl.client import SandboxClient
            from coderl.server.ray_sessions import ReplicaSessions

            urls = sessions_url.split(",")
            self._remote[key] = RemoteEpisodes(ReplicaSessions(urls), SandboxClient(urls, timeout_s=3600.0),
                                               gateway_url=key[1])
        return self._remote[key]

    @property
    def last_weights_version(self) -> int | None:
        """The newest policy version the worker's rollout servers reported (verl's global_steps)."""
        backend = self.gateway.backend
        return backend.last_version if isinstance(backend, VerlBackend) else None

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        await self.served.stop()
        for remote in self._remote.values():
            await remote.aclose()
        await self.local.aclose()  # its grading runs started ahead, before their host closes
        await self.host.close()
        shutil.rmtree(self.socket_dir, ignore_errors=True)


def node_address() -> str:
    """This node's address as the other nodes of the Ray cluster know it (the host's own name
    resolved, outside Ray)."""
    try:
        import ray

        return str(ray.util.get_node_ip_address())
    except Exception:  # Ray absent or unable to tell: the host's name resolved
        return socket.gethostbyname(socket.gethostname())


def _remove_stale_socket_dirs() -> None:
    for path in Path(tempfile.gettempdir()).glob(f"{_PREFIX}*"):
        if left_by_dead_process(path.name, _PREFIX):
            shutil.rmtree(path, ignore_errors=True)
