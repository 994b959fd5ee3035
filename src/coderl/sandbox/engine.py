"""The execution engine: a pool of isolated slots that runs one submission against many inputs.

A submission is compiled once in a slot, then its inputs run there one after another, each in a
fresh process with a fresh work dir. Slots are as many as CPUs by default; concurrent submissions
queue for a free slot (the service puts a bounded queue with backpressure in front of this).
A slot that fails is replaced and the step retried once; after that the affected inputs come back
as sandbox_error records: infrastructure faults are never turned into verdicts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from coderl.errors import IsolationUnavailable, SlotFailure
from coderl.sandbox import isolation, languages, seccomp
from coderl.sandbox.cgroups import CgroupManager
from coderl.sandbox.languages import Language, LanguageInfo
from coderl.sandbox.result import CompileResult, Execution, Limits, RunResult
from coderl.sandbox.slot import Slot, SlotConfig

ISOLATION_MODES = ("bwrap", "none")
COMPILE_LIMITS = Limits(cpu_s=30, wall_s=60, memory_mb=2048, max_processes=64, stdout_kb=64 * 1024,
                        stderr_kb=256, file_size_kb=256 * 1024)


@dataclass(frozen=True)
class Program:
    """What to run: source in a language, plus extra files placed next to it."""

    language: str
    source: str
    files: dict[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class RunInput:
    """One run's input: stdin, files written into the work dir first, files to fetch afterwards."""

    stdin: bytes = b""
    files: dict[str, bytes] = field(default_factory=dict)
    fetch: tuple[str, ...] = ()


StopRule = Callable[[int, RunResult], bool]


class Engine:
    """Async execution engine. Use as ``async with Engine() as engine: await engine.execute(...)``."""

    def __init__(self, slots: int | None = None, isolation: str = "bwrap", *, tmpfs_mb: int = 512) -> None:
        if isolation not in ISOLATION_MODES:
            raise ValueError(f"isolation must be one of {ISOLATION_MODES}, got {isolation!r}")
        self.isolation = isolation
        self.size = slots or os.cpu_count() or 1
        if self.size < 1:
            raise ValueError("slots must be >= 1")
        self.tmpfs_mb = tmpfs_mb
        self.cgroups = CgroupManager()
        self._languages: dict[str, type[Language]] = {}
        self._slots: list[Slot] = []
        self._idle: asyncio.Queue[Slot] | None = None
        self._config: SlotConfig | None = None
        self.busy = 0
        self.slot_restarts = 0

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> Engine:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        if self.isolation == "bwrap":
            problem = isolation_problem()
            if problem:
                raise IsolationUnavailable(f"{problem}; see `coderl sandbox doctor` "
                                           "(or run with isolation 'none', which has no security boundary)")
        self._languages = {lang.name: lang for lang in languages.ALL if lang.available()}
        binds = tuple(sorted({b for lang in self._languages.values() for b in lang.extra_binds()}))
        self.cgroups.start()
        self._config = SlotConfig(isolation=self.isolation, cgroups=self.cgroups,
                                  seccomp_program=seccomp.build_filter() if self.isolation == "bwrap" else b"",
                                  extra_binds=binds, tmpfs_mb=self.tmpfs_mb)
        self._slots = [Slot(i, self._config) for i in range(self.size)]
        try:
            await asyncio.gather(*(s.start() for s in self._slots))
        except SlotFailure as exc:
            await self.close()
            raise IsolationUnavailable(f"sandbox slots failed to start: {exc}") from exc
        self._idle = asyncio.Queue()
        for s in self._slots:
            self._idle.put_nowait(s)

    async def close(self) -> None:
        await asyncio.gather(*(s.remove() for s in self._slots), return_exceptions=True)
        self._slots = []
        self._idle = None
        self.cgroups.close()

    # ------------------------------------------------------------------ queries
    def languages(self) -> dict[str, LanguageInfo]:
        return {name: lang.info() for name, lang in self._languages.items()}

    def language(self, name: str) -> type[Language]:
        return languages.resolve(name, self._languages)

    @property
    def idle(self) -> int:
        return self._idle.qsize() if self._idle else 0

    # ------------------------------------------------------------------ work
    async def execute(self, program: Program, inputs: Sequence[bytes | RunInput], limits: Limits = Limits(),
                      *, compile_limits: Limits | None = None, stop: StopRule | None = None,
                      total_time_s: float | None = None) -> Execution:
        """Compile once, run every input in order; one record per input (skipped after ``stop``
        says so or the total budget is spent)."""
        lang = self.language(program.language)
        if self._idle is None:
            raise SlotFailure("engine is not started")
        runs = [i if isinstance(i, RunInput) else RunInput(stdin=bytes(i)) for i in inputs]
        started = time.monotonic()
        slot = await self._idle.get()
        self.busy += 1
        try:
            return await self._execute_in(slot, lang, program, runs, limits,
                                          compile_limits or COMPILE_LIMITS, stop, total_time_s, started)
        finally:
            self.busy -= 1
            if not slot.healthy:
                slot = await self._replace(slot)
            self._idle.put_nowait(slot)

    async def _execute_in(self, slot: Slot, lang: type[Language], program: Program, runs: list[RunInput],
                          limits: Limits, compile_limits: Limits, stop: StopRule | None,
                          total_time_s: float | None, started: float) -> Execution:
        source_name, source = lang.source_for(program.source)
        files = {**program.files, source_name: source.encode("utf-8", "surrogateescape")}
        recipe = lang.recipe(source_name, limits.memory_mb)
        overhead = lang.memory_overhead_mb

        async def prepare(s: Slot) -> CompileResult | None:
            return await s.prepare(recipe, files, compile_limits, overhead)

        slot, compiled = await self._with_retry(slot, prepare)
        if isinstance(compiled, SlotFailure):
            error = RunResult.sandbox_error(str(compiled))
            return Execution(language=lang.name, isolation=self.isolation,
                             compile=CompileResult(ok=False, run=error, sandbox_error=True),
                             results=[error] * len(runs), wall_s=time.monotonic() - started)
        results: list[RunResult] = []
        if compiled is not None and not compiled.ok:
            results = [RunResult.skipped("compile error")] * len(runs)
        stopped = ""
        for index, item in enumerate(runs):
            if compiled is not None and not compiled.ok:
                break
            if stopped:
                results.append(RunResult.skipped(stopped))
                continue
            run_limits = limits
            if total_time_s is not None:
                left = total_time_s - (time.monotonic() - started)
                if left <= 0:
                    stopped = f"total time budget {total_time_s} s spent"
                    results.append(RunResult.skipped(stopped))
                    continue
                run_limits = limits.replace(wall_s=min(limits.wall_s, max(left, 0.05)))

            async def run(s: Slot, item: RunInput = item, run_limits: Limits = run_limits) -> RunResult:
                return await s.run(item.stdin, item.files, item.fetch, run_limits, overhead)

            slot, outcome = await self._with_retry(slot, run, prepare)
            result = RunResult.sandbox_error(str(outcome)) if isinstance(outcome, SlotFailure) else outcome
            results.append(result)
            if stop is not None and stop(index, result):
                stopped = "stopped after an earlier failure"
        return Execution(language=lang.name, isolation=self.isolation, compile=compiled, results=results,
                         wall_s=time.monotonic() - started)

    async def _with_retry(self, slot: Slot, step, reprepare=None):  # type: ignore[no-untyped-def]
        """Run ``step`` on the slot; on a slot failure replace the slot (re-preparing the program)
        and try once more. Returns (slot now in use, result or the SlotFailure)."""
        try:
            return slot, await step(slot)
        except SlotFailure:
            pass
        try:
            slot = await self._replace(slot)
            if reprepare is not None:
                await reprepare(slot)
            return slot, await step(slot)
        except SlotFailure as exc:
            return slot, exc

    async def _replace(self, slot: Slot) -> Slot:
        """A fresh slot in the same place (same cgroup); raises SlotFailure if it cannot start."""
        self.slot_restarts += 1
        await slot.stop()
        fresh = Slot(slot.index, slot.config)
        fresh.cgroup = slot.cgroup
        self._slots[slot.index] = fresh
        with contextlib.suppress(SlotFailure):
            await fresh.start()
        return fresh


def isolation_problem() -> str | None:
    """Why full isolation cannot work on this host, or None when it can."""
    if isolation.bwrap_path() is None:
        return "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)"
    if not seccomp.supported_machine():
        return f"no seccomp syscall table for this machine ({os.uname().machine})"
    try:
        with open("/proc/sys/user/max_user_namespaces") as fh:
            if int(fh.read().strip() or 0) == 0:
                return "user namespaces are disabled (user.max_user_namespaces = 0)"
    except OSError:
        pass
    return None
