"""What the routes share, apart from the FastAPI application that mounts them: the `Service` (one
engine + judge per process, admission, metrics, the readiness canary), the way a route finds it,
and the way a route's work is bounded by its deadline and its client. The routes (native, compat,
swe) import this module, and the application (app.py) imports them: no circle."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any

from fastapi import Request

from coderl.errors import BadRequest, ClientDisconnected, CoderlError, DeadlineExceeded
from coderl.judge import Judge, Submission
from coderl.sandbox import Engine
from coderl.sandbox.compile_cache import CompileCache
from coderl.server.admission import Admission
from coderl.server.metrics import Metrics
from coderl.server.settings import Settings

UNISOLATED_WARNING = "NO ISOLATION: programs run unsandboxed on the host (--isolation none)"


class Service:
    """What the routes share: the engine, the judge, admission, metrics."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        cache = CompileCache.from_env() if settings.compile_cache_mb is None \
            else CompileCache.sized(settings.compile_cache_mb)
        self.engine = Engine(slots=settings.slots, isolation=settings.isolation, compile_cache=cache or False)
        self.judge = Judge(self.engine)
        self.metrics = Metrics()
        self.admission = Admission(settings.queue, on_reject=self.metrics.rejected.inc)
        self.started = False
        self._canary: tuple[float, bool, str] = (0.0, False, "not checked yet")

    async def start(self) -> None:
        await self.engine.start()
        self.started = True
        self.metrics.slots_total.set(self.engine.size)

    async def stop(self) -> None:
        self.started = False
        await self.engine.close()

    def meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"isolation": self.engine.isolation}
        if self.engine.isolation == "none":
            meta["warning"] = UNISOLATED_WARNING
        return meta

    async def judge_many(self, subs: list[Submission | BadRequest]) -> list[Any]:
        """Judge submissions concurrently; a bad submission yields its error, not the batch's."""
        with self.admission.admit(len(subs)):
            return await asyncio.gather(*(self._judge_one(s) for s in subs))

    async def _judge_one(self, sub: Submission | BadRequest) -> Any:
        if isinstance(sub, BadRequest):  # the submission could not even be built
            return sub
        try:
            result = await self.judge.judge(sub)
        except BadRequest as exc:
            return exc
        self.metrics.verdicts.labels(result.verdict.value).inc()
        self.metrics.test_cases.inc(result.total)
        if result.sandbox_error:
            self.metrics.sandbox_errors.inc()
        return result

    async def canary(self) -> tuple[bool, str]:
        """Readiness: a known-correct program is accepted and a known-wrong one rejected."""
        checked_at, ok, why = self._canary
        if time.monotonic() - checked_at < 5.0:
            return ok, why
        spec = {"mode": "stdio", "cases": [{"input": "2 3\n", "output": "5\n"}]}
        good = Submission(code="a, b = map(int, input().split())\nprint(a + b)", spec=spec)
        bad = Submission(code="print(6)", spec=spec)
        try:
            right, wrong = await asyncio.gather(self.judge.judge(good), self.judge.judge(bad))
            ok = right.accepted and wrong.verdict.value == "wrong_answer"
            why = "canary passed" if ok else f"canary failed: good={right.verdict.value}, bad={wrong.verdict.value}"
        except CoderlError as exc:
            ok, why = False, f"canary failed: {exc}"
        self._canary = (time.monotonic(), ok, why)
        return ok, why

    def observe(self) -> None:
        """Gauges are read from the live state when /metrics is scraped, whatever route changed it."""
        self.metrics.queue_depth.set(self.admission.admitted)
        self.metrics.slots_busy.set(self.engine.busy)
        self.metrics.slot_restarts.set(self.engine.slot_restarts)


def service_of(request: Request) -> Service:
    return request.app.state.service  # type: ignore[no-any-return]


async def cancel_on_disconnect(request: Request, work: Awaitable[Any], timeout_s: float) -> Any:
    """Run ``work``; cancel it if the client goes away (ClientDisconnected: a 499 in the log and
    metrics, never a crash) or the deadline passes (504)."""
    task = asyncio.ensure_future(work)
    gone = False

    async def watch() -> None:
        nonlocal gone
        while not task.done():
            await asyncio.sleep(0.25)  # first: most requests end before the first check
            if await request.is_disconnected():
                gone = True
                task.cancel()
                return

    watcher = asyncio.ensure_future(watch())
    try:
        return await asyncio.wait_for(task, timeout_s)
    except TimeoutError:
        raise DeadlineExceeded(f"request took longer than its deadline of {timeout_s:g} s") from None
    except asyncio.CancelledError:
        if gone:
            raise ClientDisconnected("the client disconnected; its work was cancelled") from None
        raise
    finally:
        watcher.cancel()

