"""One isolated slot: a runner process inside its own namespaces and cgroup, driven over a pipe.

The engine owns the slot's lifecycle (start, prepare a submission, run inputs, stop) and kills it
whenever it misbehaves; a replacement starts fresh. Every failure here is ours, so it surfaces as
`SlotFailure`, which callers turn into sandbox_error records, never into a verdict.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass

from coderl.errors import SlotFailure
from coderl.sandbox import isolation, seccomp
from coderl.sandbox.cgroups import CgroupManager, SlotCgroup
from coderl.sandbox.result import CompileResult, Limits, RunResult, RunStatus
from coderl.sandbox.runner import HEADER, MAX_HEADER, encode_frame

_START_TIMEOUT_S = 20.0
_PROTOCOL_GRACE_S = 10.0  # on top of a run's own wall limit before we call the runner hung
_RUNNER_OVERHEAD_MB = 64  # the runner itself + the work dir's files, on top of the program's limit


@dataclass(frozen=True)
class SlotConfig:
    isolation: str  # "bwrap" | "none"
    cgroups: CgroupManager
    seccomp_program: bytes
    extra_binds: tuple[str, ...]
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

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        cfg = self.config
        if cfg.cgroups.available and self.cgroup is None:
            self.cgroup = cfg.cgroups.slot(self.index)
        self.uses_cgroup_memory = self.cgroup is not None
        pass_fds: tuple[int, ...] = ()
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        if cfg.isolation == "bwrap":
            fd = seccomp.filter_fd(cfg.seccomp_program)
            pass_fds = (fd,)
            argv = isolation.bwrap_argv(seccomp_fd=fd, extra_binds=cfg.extra_binds, tmpfs_mb=cfg.tmpfs_mb)
        else:
            self._tmp = tempfile.mkdtemp(prefix=f"coderl-slot{self.index}-")
            box, scratch = os.path.join(self._tmp, "box"), os.path.join(self._tmp, "tmp")
            os.makedirs(box)
            os.makedirs(scratch)
            argv = isolation.unisolated_argv(box, scratch)
        if self.cgroup is not None:  # join the cgroup before exec, so every descendant is inside
            env["CODERL_CGROUP_PROCS"] = " ".join(self.cgroup.procs_files)
            argv = ["/bin/sh", "-c", 'for p in $CODERL_CGROUP_PROCS; do echo $$ > "$p"; done; exec "$@"',
                    "coderl-slot", *argv]
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, pass_fds=pass_fds, env=env, limit=1 << 24,
                start_new_session=True)
        finally:
            for fd in pass_fds:
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
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), 5)
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

    async def remove(self) -> None:
        await self.stop()
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None

    def stderr_tail(self) -> str:
        return b"".join(self._stderr_tail).decode("utf-8", "replace")[-2000:]

    # ------------------------------------------------------------------ requests
    async def prepare(self, recipe: dict, files: dict[str, bytes], limits: Limits,
                      memory_overhead_mb: int) -> CompileResult | None:
        """Send the program; returns the compile record (None when nothing had to be compiled)."""
        wire = self._wire_limits(limits, memory_overhead_mb)
        header = {"op": "prepare", "recipe": recipe, "files": list(files), "limits": wire}
        reply, blobs = await self._request(header, list(files.values()), limits.wall_s + _PROTOCOL_GRACE_S)
        if "run" not in reply:
            return None
        run = self._run_result(reply["run"], blobs[0], blobs[1], {})
        return CompileResult(ok=bool(reply["ok"]), run=run)

    async def run(self, stdin: bytes, files: dict[str, bytes], fetch: tuple[str, ...], limits: Limits,
                  memory_overhead_mb: int) -> RunResult:
        wire = self._wire_limits(limits, memory_overhead_mb)
        oom_before = self.cgroup.oom_kills() if self.cgroup else 0
        header = {"op": "run", "files": list(files), "fetch": list(fetch), "limits": wire}
        reply, blobs = await self._request(header, [stdin, *files.values()], limits.wall_s + _PROTOCOL_GRACE_S)
        fetched = dict(zip(reply.pop("fetch_names", []), blobs[2:], strict=True))
        if self.cgroup is not None and self.cgroup.oom_kills() > oom_before:
            reply["status"] = RunStatus.MEMORY_LIMIT.value
            reply["message"] = f"memory limit {limits.memory_mb} MiB exceeded (out-of-memory kill)"
        return self._run_result(reply, blobs[0], blobs[1], fetched)

    def _wire_limits(self, limits: Limits, memory_overhead_mb: int) -> dict:
        effective_mb = limits.memory_mb + memory_overhead_mb
        if self.cgroup is not None:
            try:
                self.cgroup.set_limits((effective_mb + _RUNNER_OVERHEAD_MB) << 20, limits.max_processes + 4)
            except OSError as exc:
                self.healthy = False
                raise SlotFailure(f"slot {self.index}: cannot set cgroup limits: {exc}") from exc
        return {**limits.to_dict(), "memory_mb": effective_mb, "cgroup_memory": self.uses_cgroup_memory}

    @staticmethod
    def _run_result(reply: dict, stdout: bytes, stderr: bytes, files: dict[str, bytes]) -> RunResult:
        return RunResult(
            status=RunStatus(reply["status"]), exit_code=reply.get("exit_code"), signal=reply.get("signal"),
            time_limit_kind=reply.get("time_limit_kind"), cpu_s=reply.get("cpu_s", 0.0),
            wall_s=reply.get("wall_s", 0.0), memory_kb=reply.get("memory_kb", 0), stdout=stdout,
            stderr=stderr, stdout_truncated=reply.get("stdout_truncated", False),
            stderr_truncated=reply.get("stderr_truncated", False), message=reply.get("message", ""),
            files=files)

    async def _request(self, header: dict, blobs: list[bytes], timeout_s: float) -> tuple[dict, list[bytes]]:
        proc = self._proc
        if proc is None or proc.stdin is None or not self.healthy:
            raise SlotFailure(f"slot {self.index} is not running")
        try:
            proc.stdin.write(encode_frame(header, blobs))
            await proc.stdin.drain()
            reply, out = await asyncio.wait_for(self._read_frame(), timeout_s)
        except (TimeoutError, ConnectionError, BrokenPipeError, SlotFailure) as exc:
            self.healthy = False
            reason = "hung" if isinstance(exc, TimeoutError) else f"died ({exc})"
            raise SlotFailure(f"slot {self.index} runner {reason} {self.stderr_tail()}".strip()) from exc
        if "error" in reply:
            self.healthy = False
            raise SlotFailure(f"slot {self.index} runner error: {reply['error']}")
        return reply, out

    async def _read_frame(self) -> tuple[dict, list[bytes]]:
        assert self._proc is not None and self._proc.stdout is not None
        stream = self._proc.stdout
        try:
            (size,) = HEADER.unpack(await stream.readexactly(HEADER.size))
            if size > MAX_HEADER:
                raise SlotFailure(f"oversized frame header {size}")
            header = json.loads(await stream.readexactly(size))
            blobs = [await stream.readexactly(n) for n in header.get("blobs", [])]
        except asyncio.IncompleteReadError as exc:
            raise SlotFailure("runner closed its pipe") from exc
        return header, blobs

    async def _drain_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        while chunk := await self._proc.stderr.read(4096):
            self._stderr_tail.append(chunk)
