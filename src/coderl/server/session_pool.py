"""A warm pool of session sandboxes, so that opening a session hands out one already started.

A cold open spawns bubblewrap, mounts the episode's overlay, makes its cgroup and waits for PID 1
(tens of ms, far more under load). A pooled sandbox has done all of that before it is asked for:
the open takes one from a queue. Sandboxes differ by what is fixed at spawn: the snapshot (or an
image task's root filesystem, work dir and user), the environment and the limits, so the pool keeps
``size`` ready per such `PoolKey`, for at most ``max_keys`` keys (least recently asked-for first
out, its sandboxes closed): at most ``size * max_keys`` idle sandboxes, each a few MiB charged to
its cgroup (PID 1's interpreter and the tmpfs's pages: 5-7 MiB measured, docs/agent.md). A key is learned
from the opens themselves (the first open of a task is cold and asks the pool to keep that key
warm) or named ahead (``POST /v1/sessions/warm``). Each hand-out is refilled in the background,
one sandbox at a time per key, so refilling never competes with the episodes for more than one
start at a time. What is NOT fixed at spawn is given at hand-out: the gateway link (the relay
socket exists from the start and is pointed at the gateway then) and the episode's environment
variables and time budget (the session registry applies them on every command). A sandbox is
handed out once and closed with its session, never returned to the pool: each is a fresh upper
layer, a fresh PID namespace and cgroup, so nothing an earlier episode wrote or started is there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from coderl.errors import CoderlError
from coderl.sandbox.session import SessionLimits

log = logging.getLogger("coderl.server")
W = TypeVar("W")
_RETRY_S = 1.0  # after a failed start, before the next try
_MAX_FAILURES = 3  # in a row: the key stops filling until it is asked for again


@dataclass(frozen=True)
class PoolKey:
    """What a sandbox is started with and cannot change afterwards: a snapshot task's (or an empty
    work tree's) snapshot and environment, or an image task's unpacked root filesystem with
    ``image`` = (the image's id, the work dir, the user as the row names them: '' = the image's own);
    and the limits. Two task references that start the same sandbox share one key."""

    snapshot: Path
    env_dir: Path | None
    limits: SessionLimits
    image: tuple[str, str, str] | None = None
    binds: tuple[str, ...] = ()  # bound read-only besides the service's own (a task's test services' starter)


class WarmPool(Generic[W]):
    """``start(key)`` makes one ready sandbox, ``discard(w)`` closes one that is not handed out."""

    def __init__(self, start: Callable[[PoolKey], Awaitable[W]], discard: Callable[[W], Awaitable[None]], *,
                 size: int, max_keys: int = 8) -> None:
        self.size, self.max_keys = size, max_keys
        self._start, self._discard = start, discard
        self._ready: OrderedDict[PoolKey, deque[W]] = OrderedDict()
        self._fillers: dict[PoolKey, asyncio.Task[None]] = {}
        self.handed_out = 0
        self.misses = 0
        self.last_error = ""

    def take(self, key: PoolKey) -> W | None:
        """A ready sandbox for ``key`` (None: none ready, open one cold); either way the key is
        kept warm from now on."""
        ready = self._ready.get(key)
        warm = ready.popleft() if ready else None
        if warm is None:
            self.misses += 1
        else:
            self.handed_out += 1
        self.want(key)
        return warm

    def want(self, key: PoolKey) -> None:
        """Keep ``size`` sandboxes of ``key`` ready (refilled in the background)."""
        if self.size <= 0:
            return
        if key in self._ready:
            self._ready.move_to_end(key)
        else:
            self._ready[key] = deque()
            while len(self._ready) > self.max_keys:
                old, _ = next(iter(self._ready.items()))
                self._evict(old)
        filler = self._fillers.get(key)
        if filler is None or filler.done():
            self._fillers[key] = asyncio.ensure_future(self._fill(key))

    def ready(self, key: PoolKey | None = None) -> int:
        if key is not None:
            return len(self._ready.get(key, ()))
        return sum(len(q) for q in self._ready.values())

    def stats(self) -> dict[str, Any]:
        return {"size": self.size, "keys": len(self._ready), "ready": self.ready(), "handed_out": self.handed_out,
                "misses": self.misses, "filling": sum(not t.done() for t in self._fillers.values()),
                "last_error": self.last_error}

    async def close(self) -> None:
        for key in list(self._ready):
            self._evict(key)
        fillers = list(self._fillers.values())
        for task in fillers:
            task.cancel()
        await asyncio.gather(*fillers, return_exceptions=True)
        self._fillers.clear()

    def _evict(self, key: PoolKey) -> None:
        queue = self._ready.pop(key, deque())
        filler = self._fillers.pop(key, None)
        if filler is not None:
            filler.cancel()
        for warm in queue:
            asyncio.ensure_future(self._discard(warm))

    async def _fill(self, key: PoolKey) -> None:
        failures = 0
        while key in self._ready and len(self._ready[key]) < self.size:
            try:
                warm = await self._start(key)
            except CoderlError as exc:
                failures += 1
                self.last_error = f"{type(exc).__name__}: {exc}"[:300]
                log.warning("warm pool: a sandbox for %s did not start: %s", key.snapshot, exc)
                if failures >= _MAX_FAILURES:
                    return
                await asyncio.sleep(_RETRY_S)
                continue
            failures = 0
            queue = self._ready.get(key)
            if queue is None:  # evicted while this one started
                with contextlib.suppress(CoderlError):
                    await self._discard(warm)
                return
            queue.append(warm)
