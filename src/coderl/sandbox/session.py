"""Agent sessions: one isolated, long-lived sandbox per episode over a copy-on-write repository.

An agent episode needs what a judged program does not: a work tree that persists from one command
to the next, a shell, file edits, and at the end the change it made, as a diff. Usage::

    async with SessionHost() as host:
        session = await host.open(Path("/data/repos/task-1"), env_dir=venv, gateway_socket=sock,
                                  limits=SessionLimits(episode_s=600))
        try:
            r = await session.exec("python -m pytest -q", timeout_s=60)   # ExecResult
            print(await session.view("src/mod.py"))                       # file-edit tool
            await session.str_replace("src/mod.py", "a - b", "a + b")
            diff = await session.finish()   # every process killed, then the diff, captured outside
        finally:
            await session.close()           # unmounts the episode's layer, removes its cgroup

The boundary is the one of a judging slot (``isolation.boundary_args``: user/pid/net/mount/ipc/
uts/cgroup namespaces, uid 65534, no capabilities, the seccomp filter, read-only system files, a
cleared environment), plus:

- ``/repo``: the task's pristine repository (``repo_dir``, a git work tree) under a private
  overlay (``overlay.EpisodeLayer``), writable, its size capped at ``disk_mb``; ``/tmp`` and
  ``/dev/shm`` private tmpfs. Episodes share the pristine tree read-only and nothing else, so one
  cannot see another's files.
- ``env_dir`` (a prepared virtualenv, ``coderl.swe.environment``) and ``ro_binds`` (e.g. a harness's
  own install) read-only at their host paths, with the install tree of the environment's interpreter
  when it is not the sandbox's (a pyenv or uv Python of the task's version); ``env_dir/bin`` leads PATH.
- no network but the namespace's own loopback. ``gateway_socket``: one host unix socket bound in
  at ``GATEWAY_SOCKET`` and, with ``gateway_port``, relayed from ``127.0.0.1:gateway_port`` inside
  (for HTTP clients that cannot speak to a unix socket): the episode's single way out.
- limits: ``SessionLimits``: the episode's wall budget (each command's timeout is cut to what is
  left), memory and processes for the whole episode (one cgroup), output per command, disk.

PID 1 is ``session_init.py``; it runs one request at a time and kills everything a command started
when it ends, so no process survives its command. ``finish`` kills the whole sandbox, then captures
the diff in a second, fresh sandbox that sees the episode's files read-only and the PRISTINE
``.git`` (never the agent's: its config, hooks or index cannot take part) and runs our own git
(``git add -A`` into a throw-away index, then ``git diff --cached --binary``). Nothing the agent
left can run while the diff is made, and the host only reads the diff's text.

Failures of the infrastructure raise ``SessionFailure`` (a ``SandboxError``: the sample is dropped,
never scored); the agent's mistakes come back as results (a non-zero exit, ``timed_out``) or as
``EditRejected`` from the file-edit tool.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import stat
import tempfile
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from coderl.cache import private_dir
from coderl.errors import BadRequest, EditRejected, IsolationUnavailable, SessionFailure
from coderl.sandbox import image_session, isolation, overlay, seccomp, session_diffs
from coderl.sandbox.cgroups import CgroupManager, SlotCgroup
from coderl.sandbox.frames import encode_frame, read_frame_async
from coderl.sandbox.image_rootfs import ImageRoot
from coderl.sandbox.inside_pyc import compiled_inside
from coderl.sandbox.pythonenv import venv_base_prefix
from coderl.sandbox.result import ExecResult
from coderl.sandbox.spawn import kill_process_group, spawn_in_cgroup, stderr_of
from coderl.sandbox.wire import oom_kills

REPO = "/repo"
GATEWAY_SOCKET = "/run/coderl/gateway.sock"
SESSION_FILES = ("session_init.py", "pid1.py", "frames.py", "output_cap.py", "wire.py", "reap.py")
# PID 1's command after the interpreter: session_init imported (from its byte code, inside_pyc), not
# run as a script, which Python compiles from source on every start
PID1 = ("-I", "-S", "-c", f"import sys; sys.path.insert(0, {isolation.INSIDE_DIR!r}); import session_init; "
        "session_init.serve()")
_START_TIMEOUT_S = 20.0
_GRACE_S = 10.0  # on top of a command's timeout before PID 1 counts as hung
# Episode numbers, unique in the process across hosts: an episode's layer directory (pid-n) and
# cgroup are named by it, and two hosts of one process counting from 0 each collided on both (the
# agent smoke run: two episodes entering EpisodeWorker.of at once each made a worker and a host).
_EPISODE_IDS = itertools.count()
_PATH = "/usr/local/bin:/usr/bin:/bin"
# The user a host-root episode runs as has a name, as in SWE-bench's images (root there): the
# sandbox's uid (65534) has no /etc/passwd entry in the sandbox, so ``getpass.getuser()`` raised,
# and a suite that asks for the user's name got none: Django's ``auth_tests.test_management``
# (createsuperuser's default username, "" then) prompted forever (django__django-16400's gate ran
# until its time limit; an agent running those tests waited out its command's timeout).
# ``getpass.getuser`` reads LOGNAME first. Episodes and grading runs both carry it.
USER_ENV = {"LOGNAME": "nobody", "USER": "nobody"}


@dataclass(frozen=True)
class SessionLimits:
    """Per-episode limits. ``episode_s`` bounds the whole episode; ``exec_s`` is the default timeout
    of one command; memory and processes are for everything the episode runs at once."""

    episode_s: float = 1800.0
    exec_s: float = 120.0
    memory_mb: int = 2048
    max_processes: int = 256
    output_kb: int = 256
    disk_mb: int = 1024
    tmp_mb: int = 256
    open_files: int = 1024
    file_size_mb: int = 256

    def __post_init__(self) -> None:
        for name, value in self.__dict__.items():
            if not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"session limit {name} must be a positive number, got {value!r}")


@dataclass
class EpisodeState:
    """A finished episode's filesystem change (``Session.keep_state``): ``upper``, its overlay's
    upper layer (whiteouts for what it deleted), on the episode's own tmpfs until ``remove``."""

    layer: overlay.EpisodeLayer
    upper: Path

    def remove(self) -> None:
        self.layer.remove()


@dataclass
class Session:
    """One episode's sandbox. Create with ``SessionHost.open``; methods are not safe to call
    concurrently from several tasks beyond what the internal lock serialises."""

    id: str
    repo_dir: Path
    limits: SessionLimits
    _host: SessionHost
    layer: overlay.EpisodeLayer | None  # the episode's files (the host's diff capture reads them; None: kept)
    cgroup: SlotCgroup | None  # the episode's limits (the diff capture runs under them too)
    _proc: asyncio.subprocess.Process | None = None
    _oom_fd: int | None = None
    _deadline: float = 0.0
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _env: dict[str, str] = field(default_factory=dict)
    _diff: str | None = None
    started_s: float = 0.0  # how long opening took
    workdir: str = REPO  # where commands start and relative paths lead: the work tree inside
    work_tree: Path | None = None  # the work tree on the host (image sessions: under the layer's root)
    pristine_git: Path | None = None  # what the diff is taken against (image sessions: a snapshot of workdir)

    # ------------------------------------------------------------------ the shell tool
    @property
    def remaining_s(self) -> float:
        return max(0.0, self._deadline - time.monotonic())

    async def exec(self, cmd: str, *, timeout_s: float | None = None, cwd: str | None = None, stdin: bytes = b"",
                   env: dict[str, str] | None = None) -> ExecResult:
        """Run ``bash -c cmd`` in the episode; what it started is killed when it returns."""
        return (await self._exec(cmd, timeout_s=timeout_s, cwd=cwd, stdin=stdin, env=env))[0]

    async def exec_counting_survivors(self, cmd: str, *, timeout_s: float | None = None,
                                      env: dict[str, str] | None = None) -> tuple[ExecResult, list[str]]:
        """``exec``, and the processes (``pid:name``) still there, running or ended, when the command
        ended (a verifier's run: anything that could have written after it; session_init's ``_poll``)."""
        return await self._exec(cmd, timeout_s=timeout_s, env=env, survivors=True)

    async def _exec(self, cmd: str, *, timeout_s: float | None = None, cwd: str | None = None, stdin: bytes = b"",
                    env: dict[str, str] | None = None, survivors: bool = False) -> tuple[ExecResult, list[str]]:
        budget = min(timeout_s or self.limits.exec_s, self.remaining_s)
        if budget <= 0:
            return ExecResult.of_command(exit_code=None, signal=None, timed_out=True,
                                         stderr="the episode's time budget is spent"), []
        lim = self.limits
        request = {"op": "exec", "cmd": cmd, "cwd": cwd or self.workdir, "env": {**self._env, **(env or {})}, "timeout_s": budget,
                   "output_bytes": lim.output_kb * 1024,
                   "rlimits": {"RLIMIT_NOFILE": lim.open_files, "RLIMIT_FSIZE": lim.file_size_mb << 20,
                               "RLIMIT_CORE": 0, "RLIMIT_NPROC": lim.max_processes}, "survivors": survivors}
        ooms = oom_kills(self._oom_fd)
        reply, blobs = await self._call(request, [stdin], budget + _GRACE_S)
        out, err = blobs
        return ExecResult.of_command(
            exit_code=reply["exit_code"], signal=reply["signal"], timed_out=reply["timed_out"],
            stdout=out.decode("utf-8", "replace"), stderr=err.decode("utf-8", "replace"),
            stdout_truncated=reply["stdout_truncated"], stderr_truncated=reply["stderr_truncated"],
            oom_killed=oom_kills(self._oom_fd) > ooms, output_limit=reply["output_limit"], wall_s=reply["wall_s"]), \
            list(reply.get("survivors") or [])

    async def keep(self, argv: list[str], *, timeout_s: float) -> ExecResult:
        """Start ``argv`` (an absolute path, then its arguments) as a process of the episode that
        outlives its commands, in the session's environment (session_init's ``keep``): the answer
        comes once it has closed its stdout and stderr (it is ready; ``exit_code`` None) or has
        exited (``exit_code``), its output in ``stdout``; ``timed_out`` (it is killed) after
        ``timeout_s``. ``finish`` and ``close`` end it with the rest."""
        budget = min(timeout_s, self.remaining_s)
        lim = self.limits
        request = {"op": "keep", "argv": list(argv), "env": dict(self._env), "timeout_s": budget,
                   "output_bytes": lim.output_kb * 1024,
                   "rlimits": {"RLIMIT_NOFILE": lim.open_files, "RLIMIT_FSIZE": lim.file_size_mb << 20,
                               "RLIMIT_CORE": 0, "RLIMIT_NPROC": lim.max_processes}}
        reply, blobs = await self._call(request, [], budget + _GRACE_S)
        return ExecResult.of_command(exit_code=reply["exit_code"], signal=None, timed_out=reply["timed_out"],
                                     stdout=blobs[0].decode("utf-8", "replace"))

    # ------------------------------------------------------------------ files
    async def read_file(self, path: str, max_bytes: int = 4 << 20) -> bytes:
        reply, blobs = await self._call({"op": "read", "path": self._abs(path), "max_bytes": max_bytes}, [], _GRACE_S)
        if "error_kind" in reply:
            raise EditRejected(reply["message"])
        return blobs[0]

    async def write_file(self, path: str, data: bytes) -> None:
        reply, _ = await self._call({"op": "write", "path": self._abs(path)}, [data], _GRACE_S)
        if "error_kind" in reply:
            raise EditRejected(reply["message"])

    async def listdir(self, path: str, max_entries: int = 1000) -> list[tuple[str, bool]]:
        """(name, is_dir) of a directory's entries, sorted."""
        reply, _ = await self._call({"op": "listdir", "path": self._abs(path), "max_entries": max_entries}, [],
                                    _GRACE_S)
        if "error_kind" in reply:
            raise EditRejected(reply["message"])
        return [(name, is_dir) for name, is_dir in reply["entries"]]

    # ------------------------------------------------------------------ the file-edit tool
    async def view(self, path: str, view_range: tuple[int, int] | None = None) -> str:
        """A file with line numbers (``cat -n``; ``view_range`` 1-based, inclusive, -1 = to the end),
        or a directory's entries (directories marked with a trailing ``/``)."""
        try:
            entries = await self.listdir(path)
        except EditRejected:
            entries = None
        if entries is not None:
            return "\n".join(name + ("/" if is_dir else "") for name, is_dir in entries)
        lines = (await self.read_file(path)).decode("utf-8", "replace").split("\n")
        start, end = 1, len(lines)
        if view_range is not None:
            start, end = view_range[0], len(lines) if view_range[1] == -1 else view_range[1]
            if not 1 <= start <= max(end, 1) or end > len(lines):
                raise EditRejected(f"view_range {list(view_range)} is outside the file's {len(lines)} lines")
        return "\n".join(f"{n:6}\t{lines[n - 1]}" for n in range(start, end + 1))

    async def create(self, path: str, text: str) -> None:
        await self.write_file(path, text.encode())

    async def str_replace(self, path: str, old: str, new: str) -> None:
        """Replace the one occurrence of ``old``; none or several are the agent's error."""
        text = (await self.read_file(path)).decode("utf-8", "replace")
        count = text.count(old) if old else 0
        if count != 1:
            raise EditRejected(f"{'no' if count == 0 else count} occurrences of the text to replace in {path}"
                               + ("" if count == 0 else "; make it unique"))
        await self.write_file(path, text.replace(old, new, 1).encode())

    async def insert(self, path: str, after_line: int, text: str) -> None:
        """Insert ``text`` after line ``after_line`` (0: at the top)."""
        lines = (await self.read_file(path)).decode("utf-8", "replace").split("\n")
        if not 0 <= after_line <= len(lines):
            raise EditRejected(f"line {after_line} is outside the file's {len(lines)} lines")
        lines[after_line:after_line] = text.split("\n")
        await self.write_file(path, "\n".join(lines).encode())

    # ------------------------------------------------------------------ the end of an episode
    async def finish(self) -> str:
        """Kill every process of the episode, then capture its change as a git diff (binary-safe,
        new files included, ``.gitignore`` honoured, renames as delete + add). Idempotent.
        Raises ``DiffUnavailable`` when the agent's files make a diff impossible."""
        if self._diff is None:
            async with self._lock:
                await self._kill()
                self._diff = await self._host.capture_diff(self)
        return self._diff

    async def keep_state(self) -> EpisodeState:
        """Every process killed, then the episode's whole filesystem change (its overlay's upper
        layer: system paths too, not /tmp, /dev/shm or the binds) handed to the caller, who grades
        on it (``SessionHost.open_image(below=...)``) and removes it; ``close`` then leaves it be."""
        async with self._lock:
            await self._kill()
            layer, self.layer = self.layer, None
        if layer is None:
            raise SessionFailure(f"session {self.id}: its state was handed out already")
        state = EpisodeState(layer, layer.freeze())
        weakref.finalize(state, layer.remove)  # a holder that drops it ungraded (an episode cut short) frees it too
        return state

    async def close(self) -> None:
        """Kill everything (a command in flight fails with SessionFailure), unmount the episode's
        layer (unless ``keep_state`` took it), remove its cgroup. Idempotent."""
        await self._kill()
        async with self._lock:
            if self.layer is not None:
                self.layer.remove()
            if self.cgroup is not None:
                self.cgroup.remove()
                self.cgroup = None
            if self._oom_fd is not None:
                os.close(self._oom_fd)
                self._oom_fd = None
            self._host.sessions.discard(self)

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __hash__(self) -> int:
        return hash(self.id)

    async def attach(self, proc: asyncio.subprocess.Process, oom_fd: int | None, *,
                     gateway_port: int | None = None) -> None:
        """Take over the episode's freshly spawned sandbox (``SessionHost.open`` does this): wait
        for PID 1's ready frame, start the budget, and relay ``gateway_port`` when asked. Raises
        ``SessionFailure`` with what bubblewrap or PID 1 said; the caller then closes the session."""
        self._proc, self._oom_fd = proc, oom_fd
        self._deadline = time.monotonic() + self.limits.episode_s
        try:
            assert proc.stdout is not None
            async with asyncio.timeout(_START_TIMEOUT_S):
                ready, _ = await read_frame_async(proc.stdout)
            if not ready.get("ready"):
                raise SessionFailure(f"session {self.id} sent {ready!r} instead of ready")
            if gateway_port is not None:
                await self._call({"op": "forward", "port": gateway_port, "socket": GATEWAY_SOCKET}, [], _GRACE_S)
        except (TimeoutError, asyncio.IncompleteReadError, ValueError, SessionFailure) as exc:
            why = await stderr_of(proc)
            raise SessionFailure(f"session {self.id} did not start: {why or exc}") from exc

    # ------------------------------------------------------------------ internals
    def _abs(self, path: str) -> str:
        return os.path.normpath(path if path.startswith("/") else os.path.join(self.workdir, path))

    async def _kill(self) -> None:
        proc, self._proc = self._proc, None
        await kill_process_group(proc)
        if self.cgroup is not None:
            self.cgroup.kill_all()

    async def _call(self, header: dict, blobs: list[bytes], timeout_s: float) -> tuple[dict, list[bytes]]:
        async with self._lock:
            proc = self._proc
            if proc is None or proc.stdin is None or proc.stdout is None:
                raise SessionFailure(f"session {self.id} is closed")
            try:
                proc.stdin.write(encode_frame(header, blobs))
                await proc.stdin.drain()
                async with asyncio.timeout(timeout_s):
                    reply, out = await read_frame_async(proc.stdout)
            except (OSError, RuntimeError, TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
                await self._kill()
                raise SessionFailure(f"session {self.id}: its sandbox failed ({type(exc).__name__}: {exc})") from exc
            if "error" in reply:
                raise SessionFailure(f"session {self.id}: {reply['error']}")
            return reply, out


def _check_gateway(gateway_socket: str | None, gateway_port: int | None) -> None:
    if gateway_port is not None and gateway_socket is None:
        raise BadRequest("gateway_port needs gateway_socket")
    if gateway_socket is not None and not stat.S_ISSOCK(_mode(gateway_socket)):
        raise BadRequest(f"gateway socket {gateway_socket} is not a listening unix socket (is the gateway up?)")


def _env_binds(env_dir: Path | None) -> list[str]:
    """The task environment and the install tree of its interpreter (read-only at their host
    paths): an environment of another Python than the sandbox's links to one outside it."""
    if env_dir is None:
        return []
    base = venv_base_prefix(str(env_dir))
    return [str(env_dir), *([base] if base else [])]


def _mode(path: str) -> int:
    try:
        return os.stat(path).st_mode
    except OSError:
        return 0


class SessionHost:
    """Opens agent sessions on this machine: owns their cgroups, the seccomp program and the
    directory their layers are mounted under. One per process is enough."""

    def __init__(self, base_dir: Path | None = None) -> None:
        self.base_dir = base_dir or Path(tempfile.gettempdir()) / "coderl-sessions"
        self.cgroups = CgroupManager()
        self.sessions: set[Session] = set()
        self._seccomp: bytes | None = None
        self._inside: list[str] = []  # the bwrap arguments that bind SESSION_FILES in
        self._started = False

    async def __aenter__(self) -> SessionHost:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def start(self) -> None:
        if self._started:
            return
        if isolation.bwrap_path() is None:
            raise IsolationUnavailable("bubblewrap (bwrap) is not installed: apt-get install -y bubblewrap")
        if not seccomp.supported_machine():
            raise IsolationUnavailable("no seccomp syscall table for this machine")
        self._seccomp = seccomp.build_filter()
        inside = compiled_inside(SESSION_FILES)  # one mount with their byte code, else one mount per file
        self._inside = ["--ro-bind", inside, isolation.INSIDE_DIR] if inside is not None else [
            a for name in SESSION_FILES
            for a in ("--ro-bind", isolation.inside_path(name), f"{isolation.INSIDE_DIR}/{name}")]
        private_dir(self.base_dir)  # layers are mounted here: never in a directory another user made
        overlay.remove_stale(self.base_dir)
        self.cgroups.start()
        self._started = True

    async def close(self) -> None:
        for session in list(self.sessions):
            await session.close()
        self.cgroups.close()
        self._started = False

    async def open(self, repo_dir: Path, *, limits: SessionLimits | None = None, env_dir: Path | None = None,
                   ro_binds: Sequence[str] = (), gateway_socket: str | None = None, gateway_port: int | None = None,
                   env: dict[str, str] | None = None) -> Session:
        """A fresh episode over ``repo_dir`` (a git work tree with its ``.git`` directory)."""
        self.start()
        limits = limits or SessionLimits()
        t0 = time.monotonic()
        if not (repo_dir / ".git").is_dir():
            raise BadRequest(f"{repo_dir} is not a git work tree with a .git directory")
        _check_gateway(gateway_socket, gateway_port)
        n = next(_EPISODE_IDS)
        sid = f"{os.getpid()}-{n}"
        layer = overlay.EpisodeLayer(self.base_dir / sid, repo_dir.resolve(), limits.disk_mb)
        path = f"{env_dir}/bin:{_PATH}" if env_dir else _PATH
        session_env = {"PATH": path, "HOME": "/tmp", "LANG": "C.UTF-8", "TMPDIR": "/tmp", **USER_ENV, **(env or {})}
        if env_dir:
            session_env["VIRTUAL_ENV"] = str(env_dir)
        session = Session(id=sid, repo_dir=repo_dir, limits=limits, _host=self, layer=layer, cgroup=None,
                          _env=session_env)
        argv = self._argv(layer.merged, limits, _env_binds(env_dir), ro_binds,
                          [("--bind", gateway_socket, GATEWAY_SOCKET)] if gateway_socket else [])
        await self._start(session, argv, n, gateway_port)
        session.started_s = time.monotonic() - t0
        return session

    async def open_image(self, image: ImageRoot, *, workdir: str | None = None, user: str | None = None,
                         limits: SessionLimits | None = None, ro_binds: Sequence[str] = (),
                         ro_mounts: Sequence[tuple[str, str]] = (), gateway_socket: str | None = None,
                         gateway_port: int | None = None, env: dict[str, str] | None = None,
                         below: EpisodeState | None = None, tmpfs: Sequence[str] = ()) -> Session:
        """A fresh episode whose root filesystem is ``image`` (``coderl.sandbox.image_session``): its
        work dir and user are the image's unless given; ``ro_mounts`` are (host path, path inside)
        bound read-only (a Harbor task's tests, in a grading run); ``below``: a finished episode's
        state laid over the image (the container that episode left, under a fresh layer of its own);
        ``tmpfs``: directories mounted fresh and empty (a verifier's /logs/verifier). The diff is
        taken of ``workdir`` against the image's own (``ImageRoot.pristine_git``)."""
        self.start()
        limits = limits or SessionLimits()
        t0 = time.monotonic()
        workdir = os.path.normpath(workdir or image.workdir)
        pristine = await asyncio.to_thread(image.pristine_git, workdir)
        uid, gid, home = image.identity(user)
        pid1 = [*image_session.host_python()[0], *PID1]
        _check_gateway(gateway_socket, gateway_port)
        n = next(_EPISODE_IDS)
        sid = f"{os.getpid()}-{n}"
        layer = overlay.EpisodeLayer(self.base_dir / sid, image.rootfs, limits.disk_mb, flags=overlay.NOSUID_NODEV,
                                     below=(below.upper,) if below is not None else ())
        session_env = {"PATH": _PATH, "HOME": home, "LANG": "C.UTF-8", "TMPDIR": "/tmp", **image.env, **(env or {})}
        session = Session(id=sid, repo_dir=image.rootfs, limits=limits, _host=self, layer=layer, cgroup=None,
                          _env=session_env, workdir=workdir, work_tree=layer.merged / workdir.lstrip("/"),
                          pristine_git=pristine)
        binds = [("--ro-bind", src, dst) for src, dst in ro_mounts]
        if gateway_socket:
            binds.append(("--bind", gateway_socket, GATEWAY_SOCKET))
        argv = image_session.image_argv(layer.merged, workdir=workdir, uid=uid, gid=gid, tmp_mb=limits.tmp_mb,
                                        inside_binds=self._inside, ro_binds=list(ro_binds), binds=binds,
                                        setenv={"HOME": home}, tmpfs=list(tmpfs))
        argv += ["--seccomp", "SECCOMP_FD", "--", *pid1]
        await self._start(session, argv, n, gateway_port)
        session.started_s = time.monotonic() - t0
        return session

    async def _start(self, session: Session, argv: list[str], n: int, gateway_port: int | None) -> None:
        """Spawn ``argv`` as the episode's sandbox under a fresh cgroup and wait for PID 1; on any
        failure everything made for the episode is removed."""
        try:
            if self.cgroups.available:
                session.cgroup = self.cgroups.slot(100000 + n)  # beside any engine's slotN groups of this process
                session.cgroup.set_limits(session.limits.memory_mb << 20, session.limits.max_processes)
            proc, oom_fd = await self._spawn(argv, session.cgroup)
            self.sessions.add(session)
        except BaseException:
            session.layer.remove()
            if session.cgroup is not None:
                session.cgroup.remove()
            raise
        try:
            await session.attach(proc, oom_fd, gateway_port=gateway_port)
        except BaseException:
            await session.close()
            raise

    async def apply_diff(self, session: Session, diff: str) -> str:
        """Apply ``diff`` to the session's work tree: '' or why not (``session_diffs.apply``: the one
        diff-application policy of every task kind)."""
        return await session_diffs.apply(self, session, diff)

    async def beside(self, session: Session, command: Sequence[str], *, setenv: dict[str, str],
                     repo_ro: bool = False, pristine_git: Path | None = None) -> asyncio.subprocess.Process:
        """A fresh, short-lived sandbox running ``command`` over the session's work tree, under the
        session's boundary and cgroup (the diffs in and out: ``session_diffs``)."""
        argv = self._argv(session.work_tree or session.layer.merged, session.limits, [], [], [], command=command,
                          repo_ro=repo_ro, setenv=setenv, pristine_git=pristine_git)
        proc, oom_fd = await self._spawn(argv, session.cgroup)
        if oom_fd is not None:
            os.close(oom_fd)
        return proc

    def _argv(self, merged: Path, limits: SessionLimits, env_binds: list[str], ro_binds: Sequence[str],
              binds: list[tuple[str, str, str]], *, command: Sequence[str] | None = None,
              repo_ro: bool = False, pristine_git: Path | None = None,
              setenv: dict[str, str] | None = None) -> list[str]:
        assert self._seccomp is not None
        args = isolation.boundary_args([])
        args += self._inside
        args += ["--proc", "/proc", "--dev", "/dev",
                 "--ro-bind" if repo_ro else "--bind", str(merged), REPO,
                 "--size", str(limits.tmp_mb << 20), "--tmpfs", "/tmp",
                 "--size", str(min(limits.tmp_mb, 256) << 20), "--tmpfs", "/dev/shm"]
        for path in dict.fromkeys([*env_binds, *ro_binds]):  # after the tmpfs mounts, which would hide them
            args += ["--ro-bind", path, path]
        if pristine_git is not None:
            args += ["--ro-bind", str(pristine_git), "/git"]
        for kind, src, dst in binds:
            args += ["--dir", os.path.dirname(dst), kind, src, dst]
        for name, value in (setenv or {}).items():
            args += ["--setenv", name, value]
        args += ["--remount-ro", "/", "--chdir", REPO, "--seccomp", "SECCOMP_FD", "--"]
        args += list(command or [isolation.sandbox_python(), *PID1])
        return args

    async def _spawn(self, argv: list[str], cgroup: SlotCgroup | None,
                     ) -> tuple[asyncio.subprocess.Process, int | None]:
        assert self._seccomp is not None
        fd = seccomp.filter_fd(self._seccomp)
        argv = [str(fd) if a == "SECCOMP_FD" else a for a in argv]
        oom_fd = None if cgroup is None else os.open(cgroup.oom_counter_file, os.O_RDONLY)
        try:
            proc = await spawn_in_cgroup(argv, cgroup, pass_fds=(fd,), label="coderl-session")
        except OSError as exc:
            if oom_fd is not None:
                os.close(oom_fd)
            raise SessionFailure(f"cannot start a session sandbox: {exc}") from exc
        finally:
            os.close(fd)
        return proc, oom_fd

    async def capture_diff(self, session: Session) -> str:
        """The episode's change against the pristine commit, made by our git in a fresh sandbox
        (``session_diffs.capture``; the module docstring). The episode's processes must be dead already."""
        return await session_diffs.capture(self, session, REPO)
