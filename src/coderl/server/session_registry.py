"""What the session service holds: every open remote session with its credential and lease, the
warm pool, the snapshots and environments of this node, the reaper.

- A session is opened on a task row (its snapshot and environment come from this node's own store
  and cache, built once per node; a request never names a host path), on an image-backed task (a
  row with its image, or a Harbor task of this node: `coderl.server.image_tasks`, unpacked from
  this node's cache, never pulled at request time) or on an empty work tree.
- Each session has a random credential (``token``) that the per-session routes require; one
  session's token used for another is refused (403), an unknown id is 404, a closed or reaped one
  410.
- A lease: every request renews it; a session no request has touched for ``lease_s`` (its client
  crashed or forgot it) or past its episode budget is reaped: its processes killed, its overlay
  unmounted, its cgroup removed, its relay socket deleted, so the memory returns to the node.
- At most ``capacity`` sessions are open (opens in progress included); one more is 429.

Configuration (environment of `coderl serve`): ``CODERL_SESSIONS_MAX`` (512),
``CODERL_SESSION_LEASE_S`` (120), ``CODERL_SESSION_POOL`` (warm sandboxes per task, 0 = off: snapshot,
empty and image tasks; a Harbor task's sandbox is never pooled), ``CODERL_SESSION_POOL_KEYS`` (8: the
tasks kept warm at once, least recently asked-for out first; idle sandboxes at most POOL x POOL_KEYS),
``CODERL_SESSION_DIR`` (layers and relay sockets; a fresh temporary directory by default),
``CODERL_SESSION_BINDS`` (``:``-separated host paths bound read-only into every session: the
harness's own install on this node, e.g. ``/opt/mini-swe-agent``), the
repository grader's ``CODERL_SWE_REPOS``, ``CODERL_CACHE``, ``CODERL_WHEELHOUSE``,
``CODERL_SWE_CONCURRENCY``, ``CODERL_GRADING_WARM`` (grading runs started ahead per repository task
graded, 0 = off: ``RepoGrader(warm=...)``), and ``CODERL_HARBOR_TASKS`` (the Harbor task directories it serves):
read once per process (`RegistryConfig`), shared with ``/v1/swe/grade`` (`coderl.server.node`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hmac
import logging
import os
import secrets
import shutil
import tempfile
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from coderl.cache import default_cache_dir
from coderl.errors import (
    BadRequest,
    CoderlError,
    CredentialRejected,
    NoCredential,
    Overloaded,
    SessionExpired,
    UnknownSession,
)
from coderl.sandbox.image_rootfs import ImageRoot
from coderl.sandbox.result import ExecResult
from coderl.sandbox.session import Session, SessionHost, SessionLimits
from coderl.server.gateway_relay import GatewayRelay
from coderl.server.image_tasks import HarborIn, ImageIn
from coderl.server.session_pool import PoolKey, WarmPool
from coderl.swe.episodes import LocalEpisodes, grading_warm_setting
from coderl.swe.grade_status import GradeResult
from coderl.swe.grading_run import service_env, services_binds, start_in_session
from coderl.swe.harness import SANDBOX_PORT
from coderl.swe.task_ref import EMPTY, HARBOR, IMAGE, TaskRef

log = logging.getLogger("coderl.server")
HORIZON_S = 7 * 86400.0  # a sandbox's own budget: the registry enforces each episode's (pooled ones start early)
_GONE_KEPT = 10000  # closed ids remembered, to answer 410 rather than 404
_REAP_EVERY_S = 0.5

Warm = tuple[Session, GatewayRelay]


@dataclass(frozen=True)
class RegistryConfig:
    root: Path
    cache: Path
    repos: Path | None = None
    find_links: Path | None = None
    capacity: int = 512
    lease_s: float = 120.0
    pool_size: int = 0
    pool_keys: int = 8
    grade_concurrency: int = 2
    grading_warm: int = 0  # grading runs started ahead per repository task (RepoGrader(warm=...))
    ro_binds: tuple[str, ...] = ()  # host paths bound read-only into every session (the harness's install)
    harbor_dir: Path | None = None  # the Harbor task directories a request may name

    @classmethod
    def from_env(cls) -> RegistryConfig:
        env = os.environ
        root = Path(env["CODERL_SESSION_DIR"]) if env.get("CODERL_SESSION_DIR") else \
            Path(tempfile.mkdtemp(prefix="coderl-serve-sessions-"))
        try:
            return cls(root=root, cache=default_cache_dir(),
                       repos=Path(env["CODERL_SWE_REPOS"]) if env.get("CODERL_SWE_REPOS") else None,
                       find_links=Path(env["CODERL_WHEELHOUSE"]) if env.get("CODERL_WHEELHOUSE") else None,
                       capacity=int(env.get("CODERL_SESSIONS_MAX", "512")),
                       lease_s=float(env.get("CODERL_SESSION_LEASE_S", "120")),
                       pool_size=int(env.get("CODERL_SESSION_POOL", "0")),
                       pool_keys=int(env.get("CODERL_SESSION_POOL_KEYS", "8")),
                       grade_concurrency=int(env.get("CODERL_SWE_CONCURRENCY", "2")),
                       grading_warm=grading_warm_setting(env, 0),
                       ro_binds=tuple(p for p in env.get("CODERL_SESSION_BINDS", "").split(":") if p),
                       harbor_dir=Path(env["CODERL_HARBOR_TASKS"]) if env.get("CODERL_HARBOR_TASKS") else None)
        except ValueError as exc:
            raise BadRequest(f"session service settings: {exc}") from None

    def episodes(self) -> LocalEpisodes:
        """The node's episodes and grading (every task kind, one grading bound) on a session host of
        its own, not started; never pulling or building an image while a request waits."""
        return LocalEpisodes(SessionHost(base_dir=self.root / "layers"), repos=self.repos, cache=self.cache,
                             find_links=self.find_links, concurrency=self.grade_concurrency, fetch=False,
                             harbor_dir=self.harbor_dir, grading_warm=self.grading_warm)


@dataclass
class Lease:
    """One open remote session. ``limits`` are the episode's as asked; ``deadline`` its budget's end."""

    id: str
    token: str
    session: Session
    relay: GatewayRelay
    ref: TaskRef
    limits: SessionLimits
    env: dict[str, str]
    deadline: float
    lease_s: float
    expires: float
    warm: bool
    started_s: float
    busy: int = 0
    graded: Any = None  # a Harbor task's grade, made once on the container the session left (its state is spent)

    @property
    def remaining_s(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def renew(self) -> None:
        self.expires = time.monotonic() + self.lease_s

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "warm": self.warm, "started_ms": round(1000 * self.started_s, 2),
                "remaining_s": round(self.remaining_s, 3), "lease_s": self.lease_s,
                "limits": dataclasses.asdict(self.limits), "workdir": self.session.workdir}


class SessionRegistry:
    def __init__(self, config: RegistryConfig, episodes: LocalEpisodes | None = None) -> None:
        """``episodes``: the node's (`coderl.server.node`: one host and grading bound with
        ``/v1/swe/grade``), else its own on a host it owns."""
        self.config = config
        self._owns_host = episodes is None
        self.episodes = episodes or config.episodes()
        self.host = self.episodes.host
        self.relays_dir = config.root / "relays"
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(3600.0, connect=10.0),
                                      limits=httpx.Limits(max_connections=None, max_keepalive_connections=64))
        self.pool: WarmPool[Warm] = WarmPool(self._start, self._discard, size=config.pool_size,
                                               max_keys=config.pool_keys)
        self.leases: dict[str, Lease] = {}
        self.gone: OrderedDict[str, str] = OrderedDict()
        self.reaped = 0
        self._opening = 0
        self._images: dict[str, ImageRoot] = {}  # an image key's root, by the image's id
        self._reaper: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ life
    async def start(self) -> None:
        self.host.start()
        for d in (self.config.root, self.relays_dir):
            d.mkdir(parents=True, exist_ok=True)
            d.chmod(0o755)  # the sandbox's uid reaches its relay socket through these
        self._reaper = asyncio.ensure_future(self._reap_forever())

    async def shutdown(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            await asyncio.gather(self._reaper, return_exceptions=True)
        for lease in list(self.leases.values()):
            await self.close(lease, "the service stopped")
        await self.pool.close()
        if self._owns_host:
            await self.episodes.aclose()
            await self.host.close()
        await self.http.aclose()
        shutil.rmtree(self.relays_dir, ignore_errors=True)

    # ------------------------------------------------------------------ sessions
    async def open(self, task_row: dict[str, Any] | None, limits: SessionLimits, *, env: dict[str, str],
                   gateway: tuple[str, str] | None, lease_s: float | None, image: ImageIn | None = None,
                   harbor: HarborIn | None = None) -> Lease:
        """A session on the task's snapshot (or an empty work tree) or in its image, warm from the
        pool when one is ready; a Harbor task's (``harbor``) is never pooled (its limits and
        environment are the task directory's). ``gateway``: (the gateway's URL, this session's
        credential there)."""
        if len(self.leases) + self._opening >= self.config.capacity:
            raise Overloaded(f"session capacity full ({len(self.leases)} open, {self._opening} opening, of "
                             f"{self.config.capacity}); close sessions or retry")
        self._opening += 1
        try:
            t0 = time.monotonic()
            ref = TaskRef.from_request(task_row, image.model_dump() if image else None,
                                       harbor.model_dump() if harbor else None, harbor_dir=self.config.harbor_dir)
            warm: Warm | None = None
            if ref.kind == HARBOR:
                session, relay = await self._start_harbor(ref, limits)
            else:
                key = await self._pool_key(ref, limits)
                warm = self.pool.take(key)
                session, relay = warm or await self._start(key)
                if key.binds:  # the task's test services, started as its grading starts them
                    env = await self._services(ref, key, session, relay, env)
            if gateway is not None:
                relay.attach(*gateway)
            now = time.monotonic()
            lease = Lease(id="s-" + secrets.token_hex(12), token=secrets.token_urlsafe(24), session=session,
                          relay=relay, ref=ref, limits=limits, env=env, deadline=now + limits.episode_s,
                          lease_s=lease_s or self.config.lease_s, expires=0.0, warm=warm is not None,
                          started_s=now - t0)
            lease.renew()
            self.leases[lease.id] = lease
            return lease
        finally:
            self._opening -= 1

    def warm(self, task_row: dict[str, Any] | None, limits: SessionLimits,
             image: ImageIn | None = None) -> asyncio.Future[None]:
        """Ask the pool to keep sandboxes of this task ready (the snapshot and environment are
        built, or the image unpacked from this node's cache, first, in the background)."""
        async def prepare_then_want() -> None:
            ref = TaskRef.from_request(task_row, image.model_dump() if image else None, None, harbor_dir=None)
            self.pool.want(await self._pool_key(ref, limits))

        return asyncio.ensure_future(prepare_then_want())

    def get(self, sid: str, token: str | None) -> Lease:
        lease = self.leases.get(sid)
        if lease is None:
            if sid in self.gone:
                raise SessionExpired(f"session {sid} is gone: {self.gone[sid]}")
            raise UnknownSession(f"no session {sid} on this service")
        if not token:
            raise NoCredential(f"session {sid}: send its token as 'Authorization: Bearer <token>'")
        if not hmac.compare_digest(token.encode(), lease.token.encode()):
            raise CredentialRejected(f"session {sid}: the token is not this session's")
        return lease

    @contextlib.asynccontextmanager
    async def use(self, sid: str, token: str | None) -> AsyncIterator[Lease]:
        """The lease, held busy (never reaped) while the request runs and renewed at both ends."""
        lease = self.get(sid, token)
        lease.busy += 1
        lease.renew()
        try:
            yield lease
        finally:
            lease.busy -= 1
            lease.renew()

    async def exec(self, lease: Lease, cmd: str, *, timeout_s: float | None, cwd: str | None, stdin: bytes,
                   env: dict[str, str]) -> ExecResult:
        """The command under the episode's budget (the sandbox's own may be longer: pooled ones
        were started before the episode)."""
        remaining = lease.remaining_s
        if remaining <= 0:
            return ExecResult.of_command(exit_code=None, signal=None, timed_out=True,
                                         stderr="the episode's time budget is spent")
        return await lease.session.exec(cmd, timeout_s=min(timeout_s or lease.limits.exec_s, remaining), cwd=cwd,
                                        stdin=stdin, env={**lease.env, **env})

    async def grade(self, lease: Lease) -> tuple[str, GradeResult]:
        """The session's diff (``finish``), graded against its task in a fresh sandbox (from the
        pristine image for an image-backed task; a Harbor task's verifier on the container the
        session left, unless the task grades its work dir only: once, the same answer after)."""
        if lease.ref.kind == EMPTY:
            raise BadRequest(f"session {lease.id} was opened without a task: there is nothing to grade against")
        self.episodes.expect(lease.ref)  # a grader's run started while the diff is captured
        diff = await lease.session.finish()
        if lease.ref.kind == HARBOR and not lease.ref.harbor_task().workdir_only:
            if lease.graded is None:
                lease.graded = await self.episodes.grade(lease.ref, diff, await lease.session.keep_state())
            return diff, lease.graded
        return diff, await self.episodes.grade(lease.ref, diff)

    async def close(self, lease: Lease, reason: str = "closed by its client") -> None:
        if self.leases.pop(lease.id, None) is None:
            return
        self.gone[lease.id] = reason
        while len(self.gone) > _GONE_KEPT:
            self.gone.popitem(last=False)
        await self._discard((lease.session, lease.relay))

    def stats(self) -> dict[str, Any]:
        return {"open": len(self.leases), "opening": self._opening, "capacity": self.config.capacity,
                "lease_s": self.config.lease_s, "reaped": self.reaped, "pool": self.pool.stats(),
                "grades_tasks": self.config.repos is not None, "harbor_tasks": self.config.harbor_dir is not None}

    # ------------------------------------------------------------------ internals
    async def _pool_key(self, ref: TaskRef, limits: SessionLimits) -> PoolKey:
        """What a sandbox of this snapshot, empty or image task is spawned with (the episode's own
        budget is the registry's: a pooled sandbox's is the horizon)."""
        limits = dataclasses.replace(limits, episode_s=HORIZON_S)
        if ref.kind == IMAGE:
            assert ref.image is not None
            root = await self.episodes.image_of(ref)
            self._images[root.image_id] = root
            return PoolKey(root.rootfs, None, limits, image=(root.image_id, ref.image.workdir, ref.image.user))
        snapshot, env_dir = await self.episodes.prepare(ref)
        return PoolKey(snapshot, env_dir, limits, binds=services_binds(ref.task) if env_dir is not None else ())

    async def _services(self, ref: TaskRef, key: PoolKey, session: Session, relay: GatewayRelay,
                        env: dict[str, str]) -> dict[str, str]:
        """Start the task's test services in the session (closed when they do not start); the
        lease's environment with their variables (the request's own win)."""
        assert ref.task is not None and key.env_dir is not None
        try:
            await start_in_session(session, ref.task.env.services, key.env_dir)
        except BaseException:
            await self._discard((session, relay))
            raise
        return {**service_env(ref.task.env.services, key.env_dir), **env}

    async def _start(self, key: PoolKey) -> Warm:
        if key.image is not None:
            root, (_, workdir, user) = self._images[key.image[0]], key.image
            return await self._relayed(lambda relay: self.host.open_image(
                root, workdir=workdir or None, user=user or None, limits=key.limits, ro_binds=self.config.ro_binds,
                gateway_socket=str(relay.path), gateway_port=SANDBOX_PORT, env={}))
        return await self._relayed(lambda relay: self.host.open(
            key.snapshot, limits=key.limits, env_dir=key.env_dir, ro_binds=(*self.config.ro_binds, *key.binds),
            gateway_socket=str(relay.path), gateway_port=SANDBOX_PORT))

    async def _start_harbor(self, ref: TaskRef, limits: SessionLimits) -> Warm:
        return await self._relayed(lambda relay: self.episodes.open(
            ref, env={}, limits=limits, ro_binds=self.config.ro_binds, gateway_socket=str(relay.path),
            gateway_port=SANDBOX_PORT))

    async def _relayed(self, open_session: Callable[[GatewayRelay], Awaitable[Session]]) -> Warm:
        """A session opened with its own gateway relay (closed again when the open fails)."""
        relay = GatewayRelay(self.relays_dir / f"{secrets.token_hex(8)}.sock", self.http)
        await relay.start()
        try:
            session = await open_session(relay)
        except BaseException:
            await relay.close()
            raise
        return session, relay

    async def _discard(self, warm: Warm) -> None:
        session, relay = warm
        try:
            await session.close()
        finally:
            await relay.close()

    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(_REAP_EVERY_S)
            now = time.monotonic()
            for lease in list(self.leases.values()):
                if lease.busy:
                    continue
                why = (f"its lease expired (no request for {lease.lease_s:g} s)" if now > lease.expires
                       else "its episode budget is spent" if now > lease.deadline + lease.lease_s else None)
                if why is not None:
                    try:
                        await self.close(lease, f"reaped: {why}")
                        self.reaped += 1
                    except CoderlError as exc:  # keep reaping the others
                        log.warning("reaping session %s: %s", lease.id, exc)
