"""One isolated slot: a runner process inside its own namespaces and cgroup, driven over a pipe.

The engine owns the slot's lifecycle (start, prepare a submission, run inputs, stop) and kills it
whenever it misbehaves; a replacement starts fresh. Every failure here is ours, so it surfaces as
`SlotFailure`, which callers turn into sandbox_error records, never into a verdict.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from coderl.errors import NOT_RECEIVED, SlotFailure
from coderl.sandbox import isolation, seccomp
from coderl.sandbox.cgroups import CgroupManager, SlotCgroup
from coderl.sandbox.frames import encode_frame, read_frame_async
from coderl.sandbox.program import RunInput
from coderl.sandbox.result import STOPPED, CompileResult, Limits, RunResult
from coderl.sandbox.spawn import kill_process_group, spawn_in_cgroup
from coderl.sandbox.wire import oom_kills

_START_TIMEOUT_S = 20.0
_PROTOCOL_GRACE_S = 10.0  # on top of a run's own wall limit before we call the runner hung
_RUNNER_OVERHEAD_MB = 64  # the runner itself + the work dir's files, on top of the program's limit


@dataclass(frozen=True)
class SlotConfig:
    isolation: str  # "bwrap" | "none"
    cgroups: CgroupManager
    seccomp_program: bytes
    extra_binds: tuple[tuple[str, str], ...]  # (host path, path inside), read-only
    tmpfs_mb: int = 512


class Slot:
    def __init__(self, index: int, config: SlotConfig) -> None:
        self.index = index
        self.config = config
        self.cgroup: SlotCgroup | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr_tail: collections.deque[bytes] = collections.deque(maxlen=20)
        self._stderr_task: asyncio.Task[None] | None = None
        self._tmp: str | None = None
        self.healthy = False
        self.uses_cgroup_memory = False
        self._oom_fd: int | None = None  # our own fd on the cgroup's OOM counter

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        cfg = self.config
        if cfg.cgroups.available and self.cgroup is None:
            self.cgroup = cfg.cgroups.slot(self.index)
        self.uses_cgroup_memory = self.cgroup is not None
        pass_fds: tuple[int, ...] = ()
        if self.cgroup is not None and self._oom_fd is None:
            self._oom_fd = os.open(self.cgroup.oom_counter_file, os.O_RDONLY)
        oom_fd = self._oom_fd  # one fd for the runner and for us: both pread it, no offset shared
        if oom_fd is not None:
            pass_fds += (oom_fd,)
        if cfg.isolation == "bwrap":
            fd = seccomp.filter_fd(cfg.seccomp_program)
            pass_fds += (fd,)
            argv = isolation.bwrap_argv(seccomp_fd=fd, oom_fd=oom_fd, extra_binds=cfg.extra_binds,
                                        tmpfs_mb=cfg.tmpfs_mb)
        else:
            self._tmp = tempfile.mkdtemp(prefix=f"coderl-slot{self.index}-")
            box, scratch = os.path.join(self._tmp, "box"), os.path.join(self._tmp, "tmp")
            os.makedirs(box)
            os.makedirs(scratch)
            argv = isolation.unisolated_argv(box, scratch, oom_fd)
        try:
            self._proc = await spawn_in_cgroup(argv, self.cgroup, pass_fds=pass_fds, label="coderl-slot")
        finally:
            for fd in pass_fds:
                if fd != oom_fd:  # ours stays open (closed in stop)
                    os.close(fd)
        self._stderr_task = asyncio.create_task(self._drain_stderr())
        try:
            header, _ = await asyncio.wait_for(self._read_frame(), _START_TIMEOUT_S)
        except (TimeoutError, SlotFailure) as exc:
            await self.stop()
            raise SlotFailure(f"slot {self.index} did not start: {exc} {self.stderr_tail()}") from exc
        if not header.get("ready"):
            await self.stop()
            raise SlotFailure(f"slot {self.index} sent {header!r} instead of ready")
        self.healthy = True

    async def stop(self) -> None:
        self.healthy = False
        proc, self._proc = self._proc, None
        await kill_process_group(proc)  # the slot leads its own session: this reaches all it started
        if proc is not None and proc.stdin is not None:
            proc.stdin.close()
        if self.cgroup is not None:
            self.cgroup.kill_all()
        if self._stderr_task is not None:
            self._stderr_task.cancel()
            with contextlib.suppress(BaseException):
                await self._stderr_task
            self._stderr_task = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        if self._oom_fd is not None:
            os.close(self._oom_fd)
            self._oom_fd = None

    async def remove(self) -> None:
        await self.stop()
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None

    def stderr_tail(self) -> str:
        return b"".join(self._stderr_tail).decode("utf-8", "replace")[-2000:]

    # ------------------------------------------------------------------ requests
    async def execute(self, recipe: dict, files: dict[str, bytes], compile_limits: Limits, runs: list[RunInput],
                      limits: Limits, memory_overhead_mb: int, budget_s: float | None,
                      stop: Callable[[int, RunResult], bool] | None,
                      artifacts: Callable[[CompileResult, dict[str, bytes], tuple[str, ...]], None] | None = None,
                      ) -> tuple[CompileResult | None, list[RunResult]]:
        """Prepare the program and run the inputs in order, pipelined (both requests go out at
        once). Returns the compile record (None when nothing was compiled) and one record per
        input. ``artifacts`` (with a recipe that asks for ``return_artifacts``) is called with a
        successful compile, the artifacts' bytes by work-dir name and which are executable, before
        the runs. On a slot failure, whatever did arrive travels on the `SlotFailure`'s fields, so
        the engine can resume after it on a fresh slot."""
        # A compiler gets the compile limits in the cgroup, so its batch can only be sent (with the
        # run limits) once it is done; anything else is sent in one go.
        pipelined = recipe["compile"] is None
        compiled: CompileResult | None = NOT_RECEIVED
        results: list[RunResult] = []
        stop_sent = False
        oom_at_start = self._oom_kills()
        try:
            prepare = {"op": "prepare", "recipe": recipe, "files": list(files), "cgroup_memory": self.uses_cgroup_memory,
                       "limits": self._wire_limits(compile_limits if not pipelined else limits, memory_overhead_mb)}
            batch = {"op": "run_batch", "budget_s": budget_s, "cgroup_memory": self.uses_cgroup_memory,
                     "runs": [{"files": list(r.files), "fetch": list(r.fetch)} for r in runs]}
            batch_blobs = [b for r in runs for b in (r.stdin, *r.files.values())]
            if pipelined:  # one write, one wake-up of the runner
                await self._send(prepare, list(files.values()),
                                 ({**batch, "limits": self._wire_limits(limits, memory_overhead_mb)}, batch_blobs))
            else:
                await self._send(prepare, list(files.values()))
            # pipelined, the prepare step (a Python compile) runs under the run limits: a hung runner
            # is noticed after those, not after a compiler's
            reply, blobs = await self._receive((limits if pipelined else compile_limits).wall_s + _PROTOCOL_GRACE_S)
            compiled = CompileResult(ok=bool(reply["ok"]), run=RunResult.from_frame(reply["run"], *blobs[:2])) \
                if "run" in reply else None
            if artifacts is not None and compiled is not None and "artifacts" in reply:
                artifacts(compiled, dict(zip(reply["artifacts"], blobs[2:], strict=True)), tuple(reply["executables"]))
            if not pipelined:
                await self._send({**batch, "limits": self._wire_limits(limits, memory_overhead_mb)}, batch_blobs)
            while True:
                reply, out = await self._receive(limits.wall_s + _PROTOCOL_GRACE_S)
                if reply.get("done"):
                    break
                result = RunResult.from_frame(reply, *out) if out else RunResult.skipped(reply.get("message", ""))
                if stop_sent:  # run before the runner read the stop (a fast test): skipped all the same
                    result = RunResult.skipped(STOPPED)
                results.append(result)
                if stop is not None and not stop_sent and stop(reply["index"], result):
                    stop_sent = True
                    await self._send({"op": "stop"}, [])
        except asyncio.CancelledError:  # the caller gave up mid-protocol: the runner's state is unknown
            self.healthy = False
            raise
        except SlotFailure as exc:
            exc.compiled, exc.partial, exc.stopped = compiled, results, stop_sent
            # The slot's cgroup holds this one submission: an OOM kill there is the program's doing
            # (it can take the runner down by filling tmpfs), so it is a verdict, not our fault.
            exc.oom_killed = self._oom_kills() > oom_at_start
            raise
        if len(results) != len(runs):
            self.healthy = False
            raise SlotFailure(f"slot {self.index} returned {len(results)} results for {len(runs)} inputs")
        return compiled, results

    def _oom_kills(self) -> int:
        return oom_kills(self._oom_fd)

    def _wire_limits(self, limits: Limits, memory_overhead_mb: int) -> dict:
        effective_mb = limits.memory_mb + memory_overhead_mb
        if self.cgroup is not None:
            try:
                self.cgroup.set_limits((effective_mb + _RUNNER_OVERHEAD_MB) << 20, limits.max_processes + 4)
            except OSError as exc:
                self.healthy = False
                raise SlotFailure(f"slot {self.index}: cannot set cgroup limits: {exc}") from exc
        return limits.replace(memory_mb=effective_mb).to_dict()

    async def _send(self, header: dict, blobs: list[bytes], then: tuple[dict, list[bytes]] | None = None) -> None:
        """Write a frame (and the frame ``then``, in the same write)."""
        proc = self._proc
        if proc is None or proc.stdin is None or not self.healthy:
            raise SlotFailure(f"slot {self.index} is not running")
        data = encode_frame(header, blobs)
        if then is not None:
            data += encode_frame(*then)
        try:
            proc.stdin.write(data)
            await proc.stdin.drain()
        except (OSError, RuntimeError) as exc:  # uvloop raises RuntimeError on a closed pipe
            self.healthy = False
            raise SlotFailure(f"slot {self.index} runner died ({exc}) {self.stderr_tail()}".strip()) from exc

    async def _receive(self, timeout_s: float) -> tuple[dict, list[bytes]]:
        try:
            async with asyncio.timeout(timeout_s):  # no task per frame, unlike wait_for
                reply, out = await self._read_frame()
        except (TimeoutError, SlotFailure) as exc:
            self.healthy = False
            reason = "hung" if isinstance(exc, TimeoutError) else f"died ({exc})"
            raise SlotFailure(f"slot {self.index} runner {reason} {self.stderr_tail()}".strip()) from exc
        if "error" in reply:
            self.healthy = False
            raise SlotFailure(f"slot {self.index} runner error: {reply['error']}")
        return reply, out

    async def _read_frame(self) -> tuple[dict, list[bytes]]:
        assert self._proc is not None and self._proc.stdout is not None
        try:
            return await read_frame_async(self._proc.stdout)
        except asyncio.IncompleteReadError as exc:
            raise SlotFailure("runner closed its pipe") from exc
        except ValueError as exc:
            raise SlotFailure(str(exc)) from exc

    async def _drain_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        while chunk := await self._proc.stderr.read(4096):
            self._stderr_tail.append(chunk)
