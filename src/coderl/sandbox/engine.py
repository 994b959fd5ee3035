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

from coderl.errors import NOT_RECEIVED, BadRequest, DeadlineExceeded, IsolationUnavailable, SlotFailure
from coderl.sandbox import isolation, languages, probe, seccomp
from coderl.sandbox.cgroups import CgroupManager
from coderl.sandbox.compile_cache import CompileCache, Compiled
from coderl.sandbox.languages import Language, LanguageInfo
from coderl.sandbox.program import Program, RunInput
from coderl.sandbox.result import STOPPED, CompileResult, Execution, Limits, RunResult, RunStatus
from coderl.sandbox.slot import Slot, SlotConfig

ISOLATION_MODES = ("bwrap", "none")
COMPILE_LIMITS = Limits(cpu_s=30, wall_s=60, memory_mb=2048, max_processes=64, stdout_kb=64 * 1024,
                        stderr_kb=256, file_size_kb=256 * 1024)


StopRule = Callable[[int, RunResult], bool]


class Engine:
    """Async execution engine. Use as ``async with Engine() as engine: await engine.execute(...)``."""

    def __init__(self, slots: int | None = None, isolation: str = "bwrap", *, tmpfs_mb: int = 512,
                 compile_cache: CompileCache | bool = True) -> None:
        """``compile_cache``: True for the one the environment asks for (`CompileCache.from_env`:
        on unless ``CODERL_COMPILE_CACHE=0``), False for none, or a cache of the caller's."""
        if isolation not in ISOLATION_MODES:
            raise ValueError(f"isolation must be one of {ISOLATION_MODES}, got {isolation!r}")
        self.isolation = isolation
        self.size = slots or os.cpu_count() or 1
        if self.size < 1:
            raise ValueError("slots must be >= 1")
        self.tmpfs_mb = tmpfs_mb
        self.compile_cache = (CompileCache.from_env() if compile_cache is True else compile_cache) or None
        self.cgroups = CgroupManager()
        self._languages: dict[str, type[Language]] = {}
        self._infos: dict[str, LanguageInfo] = {}
        self._slots: list[Slot] = []
        self._idle: asyncio.Queue[Slot] | None = None
        self._config: SlotConfig | None = None
        self.busy = 0
        self.slot_restarts = 0
        self._replacing: set[asyncio.Task[None]] = set()

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
        self._languages = {lang.name: lang for lang in languages.SERVED if lang.available()}
        self._infos = {name: lang.info() for name, lang in self._languages.items()}  # versions: asked once
        # the first start on a machine builds the toolchains' precompiled headers and class archives
        # (languages.prebuilt, tens of seconds): in threads, side by side
        found = await asyncio.gather(*(asyncio.to_thread(lang.binds) for lang in self._languages.values()))
        binds = tuple(sorted({b for lang_binds in found for b in lang_binds}))
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
        await asyncio.gather(*self._replacing, return_exceptions=True)
        await asyncio.gather(*(s.remove() for s in self._slots), return_exceptions=True)
        self._slots = []
        self._idle = None
        self.cgroups.close()

    # ------------------------------------------------------------------ queries
    def languages(self) -> dict[str, LanguageInfo]:
        return dict(self._infos)

    def language(self, name: str) -> type[Language]:
        return languages.resolve(name, self._languages)

    # ------------------------------------------------------------------ work
    async def execute(self, program: Program, inputs: Sequence[bytes | RunInput], limits: Limits = Limits(),
                      *, compile_limits: Limits | None = None, stop: StopRule | None = None,
                      total_time_s: float | None = None, queue_timeout_s: float | None = None) -> Execution:
        """Compile once, run every input in order; one record per input (skipped after ``stop``
        says so or the total budget is spent). ``queue_timeout_s``: the longest wait for a free
        slot, past which DeadlineExceeded (nothing has run; the caller may retry)."""
        lang = self.language(program.language)
        if self._idle is None:
            raise SlotFailure("engine is not started")
        runs = [i if isinstance(i, RunInput) else RunInput(stdin=bytes(i)) for i in inputs]
        started = time.monotonic()
        try:  # a wait_for that times out as the slot arrives returns it, so no slot is lost
            slot = await asyncio.wait_for(self._idle.get(), queue_timeout_s)
        except TimeoutError:
            raise DeadlineExceeded(f"no sandbox slot came free within {queue_timeout_s:g} s "
                                   f"({self.size} slots, all busy); retry") from None
        self.busy += 1
        try:
            slot, execution = await self._execute_in(slot, lang, program, runs, limits,
                                                     compile_limits or COMPILE_LIMITS, stop, total_time_s, started)
            return execution
        finally:
            self.busy -= 1
            # the slot now in this place: a replacement mid-execution (even a cancelled one) put it there
            self._release(self._slots[slot.index] if self._slots else slot)

    def _release(self, slot: Slot) -> None:
        """Back to the idle queue; an unhealthy slot is replaced first, in a task of its own, so
        the caller does not wait for it and a cancelled caller cannot lose the slot."""
        if self._idle is None:  # closed meanwhile
            return
        if slot.healthy:
            self._idle.put_nowait(slot)
            return

        async def replace() -> None:
            fresh = await self._replace(slot)
            if self._idle is not None:
                self._idle.put_nowait(fresh)

        task = asyncio.ensure_future(replace())
        self._replacing.add(task)
        task.add_done_callback(self._replacing.discard)

    async def _execute_in(self, slot: Slot, lang: type[Language], program: Program, runs: list[RunInput],
                          limits: Limits, compile_limits: Limits, stop: StopRule | None,
                          total_time_s: float | None, started: float) -> tuple[Slot, Execution]:
        """Returns the slot it ended on (a failed one is replaced along the way) and the outcome."""
        source_name, source = lang.source_for(program.source)
        files = {**program.files, source_name: source.encode("utf-8", "surrogateescape")}
        recipe = lang.recipe(source_name, limits.memory_mb)
        if self.isolation == "none" and recipe["compile"]:  # no mount namespace: the binds' host paths
            assert self._config is not None
            recipe["compile"] = isolation.at_host_paths(recipe["compile"], self._config.extra_binds)
        if program.prelude:
            if not recipe["warm_python"]:
                raise BadRequest(f"a prelude is for Python programs, not {lang.name}")
            recipe["prelude"] = True
        overhead = lang.memory_overhead_mb
        cached, cache_key = await self._cached_compile(lang, recipe, files, compile_limits)
        if cached is not None:  # the runner gets the artifacts as files and compiles nothing
            recipe = {**recipe, "compile": None, "executables": list(cached.executables)}
            files = {**files, **cached.files}
        fresh: list[Compiled] = []

        def keep(result: CompileResult, artifacts: dict[str, bytes], executables: tuple[str, ...]) -> None:
            fresh.append(Compiled(result, artifacts, executables))

        done: list[RunResult] = []
        compiled: CompileResult | None = NOT_RECEIVED
        failure: SlotFailure | None = None
        retries = 1  # a slot that failed on its own is replaced and the rest resumed once
        while True:
            offset = len(done)
            budget = None if total_time_s is None else total_time_s - (time.monotonic() - started)

            def shifted(index: int, result: RunResult, offset: int = offset) -> bool:
                return stop(index + offset, result)  # type: ignore[misc]

            try:
                got, results = await slot.execute(recipe, files, compile_limits, runs[offset:], limits, overhead,
                                                  budget, shifted if stop is not None else None,
                                                  keep if cache_key is not None else None)
                failure = None
            except SlotFailure as exc:
                failure, got, results = exc, exc.compiled, exc.partial
            if compiled is NOT_RECEIVED:
                compiled = got
            done += results
            if failure is None:
                break
            slot = await self._replace(slot)
            if failure.stopped:  # the stop rule fired before the slot failed: nothing more is run
                done += [RunResult.skipped(STOPPED)] * (len(runs) - len(done))
                failure = None
                break
            if failure.oom_killed:  # the program exhausted its memory: its verdict
                mle = RunResult(status=RunStatus.MEMORY_LIMIT,
                                message=f"memory limit {limits.memory_mb} MiB exceeded (out-of-memory kill)")
                if compiled is NOT_RECEIVED:
                    compiled = CompileResult(ok=False, run=mle)
                    break
                done.append(mle)
                if len(done) == len(runs) or (stop is not None and stop(len(done) - 1, mle)):
                    done += [RunResult.skipped(STOPPED)] * (len(runs) - len(done))
                    failure = None
                    break
                continue
            if not retries:
                break
            retries -= 1
        if compiled is None and cached is not None:
            compiled = cached.result
        if fresh and self.compile_cache is not None and cache_key is not None:
            await asyncio.to_thread(self.compile_cache.put, cache_key, fresh[0])
        if compiled is NOT_RECEIVED:
            compiled = CompileResult(ok=False, run=RunResult.sandbox_error(str(failure)), sandbox_error=True)
        fill = RunResult.skipped("compile error") if isinstance(compiled, CompileResult) and not compiled.ok \
            and not compiled.sandbox_error else RunResult.sandbox_error(str(failure))
        done += [fill] * (len(runs) - len(done))
        return slot, Execution(language=lang.name, isolation=self.isolation, compile=compiled,  # type: ignore[arg-type]
                               results=done, wall_s=time.monotonic() - started)

    async def _cached_compile(self, lang: type[Language], recipe: dict, files: dict[str, bytes],
                              compile_limits: Limits) -> tuple[Compiled | None, str | None]:
        """(the compile cache's entry for this submission, None on a miss; the key to keep a fresh
        compile under, None when there is nothing to keep). Marks the recipe to bring its artifacts
        back on a miss."""
        cache = self.compile_cache
        if cache is None or not recipe["compile"] or not recipe["artifacts"]:
            return None, None
        key = cache.key(lang.name, self._infos[lang.name].version, recipe, files)
        hit = await asyncio.to_thread(cache.get, key, compile_limits)
        if hit is None:
            recipe["return_artifacts"] = True
            return None, key
        return hit, None

    async def _replace(self, slot: Slot) -> Slot:
        """A fresh slot in the same place (the same cgroup, made again if it is gone); if it cannot
        start it stays unhealthy and its next use fails as a sandbox error, to be replaced again.
        Never raises: an OSError here (the group's files gone, a failed fork) once ended the
        background replacement, and with it the slot, so every later request waited for a slot
        until its deadline."""
        self.slot_restarts += 1
        await slot.stop()
        fresh = Slot(slot.index, slot.config)
        self._slots[slot.index] = fresh
        with contextlib.suppress(SlotFailure, OSError):
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
    return probe.boundary_problem()
