"""The warm runner: the one long-lived process inside an isolated slot (stdlib only).

Theory of operation
-------------------
The engine starts one runner per slot, inside bubblewrap's namespaces, as PID 1 of the slot's pid
namespace, uid 65534, no capabilities, under the seccomp filter. The runner never runs model code
itself: for every test it forks a child that becomes the program (a Python child runs the
pre-compiled code object, so there is no interpreter start per test; other languages ``execve``
the compiled binary or the interpreter). The child's stdin is a memfd holding the test input,
its stdout/stderr are pipes the runner drains under the output limits. When the child is done
(or killed for the wall-time or output limit) the runner sends SIGKILL to every other process in
the namespace (``kill(-1)`` from PID 1 reaches everything, daemons and setsid'd children included,
and other members of the namespace cannot signal PID 1), reaps them, and recreates the work dir
from the prepared files, so no state carries from one test to the next.

Protocol (fds 10/11, raw os.read/os.write; fds 0-2 belong to the children): a frame is
``>I`` header length, a JSON header, then the raw blobs the header's ``"blobs"`` lengths name.
Requests: ``prepare`` (language recipe + files; compiles; answers with the compile record) and
``run_batch`` (per input: stdin, extra files, fetch list; shared limits and an optional total
budget), answered by one result frame per input as each finishes, then ``done``; the engine may
send ``stop`` meanwhile (its stop rule saw a failure) and the rest come back skipped. Expected
outputs never come here: judging happens outside. The slot cgroup's OOM counter arrives as a
read-only fd, so the runner itself can tell an out-of-memory kill from other deaths.
"""

from __future__ import annotations

# Pre-imported so a forked Python child finds them warm (the LiveCodeBench prelude imports most).
import atexit
import bisect  # noqa: F401
import builtins
import collections  # noqa: F401
import contextlib
import copy  # noqa: F401
import datetime  # noqa: F401
import decimal  # noqa: F401
import errno
import fractions  # noqa: F401
import functools  # noqa: F401
import gc
import hashlib  # noqa: F401 - the judge's function/assert harness imports it in every child
import heapq  # noqa: F401
import io
import itertools  # noqa: F401
import json
import marshal
import math  # noqa: F401
import operator  # noqa: F401
import os
import random  # noqa: F401 - reseeds itself in every forked child, as a new interpreter would be seeded
import re  # noqa: F401
import resource
import select
import shutil
import signal
import statistics  # noqa: F401
import string  # noqa: F401
import struct
import sys
import time
import traceback
import types
import typing  # noqa: F401

PROTO_IN, PROTO_OUT = 10, 11
# LiveCodeBench's prelude: the star-imports its judge puts before every Python program. A recipe
# asks for it with ``"prelude": true``; the runner then runs it once per submission into the
# namespace every child starts from (never per test: it costs more than a trivial program). Only
# this constant is ever run in the runner: a request names no code of its own here.
LCB_PRELUDE = (
    "from string import *; from re import *; from datetime import *; from collections import *; "
    "from heapq import *; from bisect import *; from copy import *; from math import *; from random import *; "
    "from statistics import *; from itertools import *; from functools import *; from operator import *; "
    "from io import *; from sys import *; from json import *; from builtins import *; from typing import *; "
    "import string, re, datetime, collections, heapq, bisect, copy, math, random, statistics, itertools, "
    "functools, operator, io, sys, json; sys.setrecursionlimit(50000); sys.set_int_max_str_digits(0)\n"
)
DEFAULT_RECURSION_LIMIT = sys.getrecursionlimit()
DEFAULT_MAX_STR_DIGITS = sys.get_int_max_str_digits()
FULL_COLLECTION_EVERY = 64  # prepares between full collections (frozen cycles are never collected)
HEADER = struct.Struct(">I")
MAX_HEADER = 16 * 1024 * 1024
STATUS_MEMORY_ERROR = b"M"
IN_RUNNER_COMPILE_BYTES = 256 * 1024


# ---------------------------------------------------------------- framing (shared with the engine)
def encode_frame(header: dict, blobs: list[bytes] = ()) -> bytes:  # type: ignore[assignment]
    header = dict(header, blobs=[len(b) for b in blobs])
    raw = json.dumps(header, separators=(",", ":")).encode()
    return b"".join([HEADER.pack(len(raw)), raw, *blobs])


def _read_exact(fd: int, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError("engine closed the protocol pipe")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> tuple[dict, list[bytes]]:
    (size,) = HEADER.unpack(_read_exact(fd, HEADER.size))
    if size > MAX_HEADER:
        raise ValueError(f"frame header too large: {size}")
    header = json.loads(_read_exact(fd, size))
    return header, [_read_exact(fd, n) for n in header.get("blobs", [])]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# ---------------------------------------------------------------- work dir
class WorkDir:
    """The program's private writable directory, rebuilt from the prepared files for every run."""

    def __init__(self, root: str, scratch: list[str]) -> None:
        self.root = root
        self.scratch = scratch  # other writable dirs (/tmp) wiped with it
        self.files: dict[str, bytes] = {}
        self.executables: set[str] = set()

    def wipe(self) -> None:
        for d in [self.root, *self.scratch]:
            try:
                names = os.listdir(d)
            except FileNotFoundError:  # only without isolation can a program remove it
                os.makedirs(d)
                continue
            for name in names:
                path = os.path.join(d, name)
                try:
                    if os.path.isdir(path) and not os.path.islink(path):
                        shutil.rmtree(path, onerror=_make_writable_and_retry)
                    else:
                        os.unlink(path)
                except FileNotFoundError:
                    pass

    def materialise(self, extra: dict[str, bytes]) -> None:
        self.wipe()
        for rel, data in [*self.files.items(), *extra.items()]:
            path = self.path(rel)
            if "/" in rel:
                os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o755 if rel in self.executables else 0o644)
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)

    def path(self, rel: str) -> str:
        norm = os.path.normpath(os.path.join(self.root, rel))
        if not norm.startswith(self.root + os.sep):
            raise ValueError(f"file path escapes the work dir: {rel!r}")
        return norm

    def fetch(self, names: list[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for rel in names:
            try:
                path = self.path(rel)
                if os.path.isfile(path) and not os.path.islink(path):
                    with open(path, "rb") as fh:
                        out[rel] = fh.read(64 << 20)
            except (OSError, ValueError):
                continue
        return out


def _make_writable_and_retry(func, path, _exc) -> None:  # type: ignore[no-untyped-def]
    try:
        os.chmod(os.path.dirname(path), 0o700)
        os.chmod(path, 0o700)
        func(path)
    except OSError:
        pass


# ---------------------------------------------------------------- one child process
class Runner:
    def __init__(self, box: str, scratch: list[str], pid_namespace: bool, oom_fd: int | None = None) -> None:
        self.oom_fd = oom_fd
        self.oom_kills = oom_kills(oom_fd)  # the slot cgroup's count after the last run
        self.work = WorkDir(box, scratch)
        self.pid_namespace = pid_namespace
        self.recipe: dict = {}
        self.code = None  # compiled Python code object, for warm runs
        self.main: types.ModuleType | None = None  # the namespace each Python child runs in
        self.argv: list[str] = []
        self.streams = _child_streams()
        self.prepares = 0
        self.prepared = False

    # -- requests
    def prepare(self, header: dict, blobs: list[bytes]) -> tuple[dict, list[bytes]]:
        self.recipe = header["recipe"]
        names = header["files"]
        self.work.files = dict(zip(names, blobs, strict=True))
        self.work.executables = set()
        self.code = self.main = None
        self.prepared = False
        self.prepares += 1
        if self.prepares % FULL_COLLECTION_EVERY == 0:
            gc.unfreeze()
            gc.collect()
        sys.setrecursionlimit(DEFAULT_RECURSION_LIMIT)  # a prelude raised them for the last submission
        sys.set_int_max_str_digits(DEFAULT_MAX_STR_DIGITS)
        limits = header["limits"]
        if self.recipe.get("warm_python"):
            reply, blobs = self._compile_python(limits)
            self.prepared = reply["ok"]
            return reply, blobs
        if not self.recipe.get("compile"):
            self.prepared = True
            return {"ok": True}, []
        record, out, err = self._spawn(self.recipe["compile"], b"", {}, limits)
        ok = record["status"] == "ok" and record["exit_code"] == 0
        if ok:
            for rel in self.recipe.get("artifacts", []):
                path = self.work.path(rel)
                if os.path.isdir(path):
                    for dirpath, _, files in os.walk(path):
                        for f in files:
                            full = os.path.join(dirpath, f)
                            with open(full, "rb") as fh:
                                self.work.files[os.path.relpath(full, self.work.root)] = fh.read()
                elif os.path.isfile(path):
                    with open(path, "rb") as fh:
                        self.work.files[rel] = fh.read()
                    self.work.executables.add(rel)
                else:
                    ok = False
                    err += f"\ncompiler produced no {rel}".encode()
        self.work.wipe()
        self.prepared = ok
        return {"ok": ok, "run": record}, [out, err]

    def _compile_python(self, limits: dict) -> tuple[dict, list[bytes]]:
        """Compile once; every test forks from a runner that holds the code object. Small sources
        compile right here (CPython's parser and compiler turn hostile nesting into SyntaxError or
        RecursionError); big ones in a throw-away child, so a parser blow-up cannot take the runner
        down, and the code object comes back marshalled."""
        source = self.work.files[self.recipe["source"]]
        filename = "/box/" + self.recipe["source"]
        if len(source) <= IN_RUNNER_COMPILE_BYTES:
            started = time.monotonic()
            try:
                self.code = compile(source, filename, "exec", dont_inherit=True)
            except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
                msg = "".join(traceback.format_exception_only(type(exc), exc)).encode("utf-8", "replace")
                return {"ok": False, "run": _compile_record("runtime_error", time.monotonic() - started)}, [b"", msg]
            self._load_main(filename)
            return {"ok": True, "run": _compile_record("ok", time.monotonic() - started)}, [b"", b""]

        def compile_child(_status_fd: int) -> None:
            try:
                code = compile(source, filename, "exec", dont_inherit=True)
                _write_all(1, b"C" + marshal.dumps(code))
            except BaseException as exc:  # noqa: BLE001 - any failure is the program's
                msg = "".join(traceback.format_exception_only(type(exc), exc))
                _write_all(1, b"E" + msg.encode("utf-8", "replace"))

        record, out, err = self._spawn(None, b"", {}, limits, target=compile_child)
        if record["status"] == "ok" and out.startswith(b"C"):
            self.code = marshal.loads(out[1:])
            self._load_main(filename)
            self.work.wipe()
            return {"ok": True, "run": record}, [b"", b""]
        self.work.wipe()
        message = out[1:] if out.startswith(b"E") else err
        return {"ok": False, "run": record}, [b"", message]

    def _load_main(self, filename: str) -> None:
        """The ``__main__`` module every child of this submission starts from, with the prelude
        already run when the recipe asks for it. Its ``from sys import *`` binds ``stdin``,
        ``stdout``, ``stderr`` and ``argv``, so they are swapped for the very objects a child
        gets as ``sys.stdin`` etc. while it runs. Then everything is frozen, so that the children's
        collector does not touch (and so copy) these pages."""
        main = types.ModuleType("__main__")
        main.__dict__.update(__file__=filename, __builtins__=builtins)
        argv = [filename]
        if self.recipe.get("prelude"):
            saved = sys.stdin, sys.stdout, sys.stderr, sys.argv
            sys.stdin, sys.stdout, sys.stderr = self.streams
            sys.argv = argv
            try:
                exec(_PRELUDE_CODE, main.__dict__)  # noqa: S102 - our constant, see LCB_PRELUDE
            finally:
                sys.stdin, sys.stdout, sys.stderr, sys.argv = saved
        self.main, self.argv = main, argv
        gc.freeze()

    def run_batch(self, header: dict, blobs: list[bytes]) -> tuple[dict, list[bytes]]:
        """Run every input in order, streaming one result frame each; a ``stop`` frame from the
        engine (or the spent budget) turns the rest into skipped records. Ends with ``done``."""
        limits = header["limits"]
        budget = header.get("budget_s")
        started = time.monotonic()
        stopped = ""
        pos = 0
        if not self.prepared:
            stopped = "compile error"
        for index, run in enumerate(header["runs"]):
            stdin = blobs[pos]
            files = dict(zip(run["files"], blobs[pos + 1:pos + 1 + len(run["files"])], strict=True))
            pos += 1 + len(run["files"])
            if not stopped and _stop_requested():
                stopped = "stopped after an earlier failure"
            run_limits = limits
            if not stopped and budget is not None:
                left = budget - (time.monotonic() - started)
                if left <= 0:
                    stopped = f"total time budget {budget} s spent"
                else:
                    run_limits = dict(limits, wall_s=min(limits["wall_s"], max(left, 0.05)))
            if stopped:
                _write_all(PROTO_OUT, encode_frame({"index": index, "status": "skipped", "message": stopped}))
                continue
            target = self._python_child if self.code is not None else None
            record, out, err = self._spawn(self.recipe.get("run"), stdin, files, run_limits,
                                           target=target, fetch=run.get("fetch", []))
            fetched = record.pop("fetched", {})
            record.update(index=index, fetch_names=list(fetched))
            _write_all(PROTO_OUT, encode_frame(record, [out, err, *fetched.values()]))
        return {"done": True}, []

    # -- the Python child: run the warm code object as __main__
    def _python_child(self, status_fd: int) -> None:
        main = self.main
        assert main is not None
        sys.modules["__main__"] = main
        sys.argv = self.argv
        sys.stdin, sys.stdout, sys.stderr = self.streams
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = self.streams
        code = 0
        try:
            exec(self.code, main.__dict__)  # noqa: S102 - this is the sandboxed program
        except SystemExit as exc:
            code = _exit_code(exc)
        except MemoryError:
            _write_all(status_fd, STATUS_MEMORY_ERROR)
            traceback.print_exc()
            code = 1
        except BaseException:  # noqa: BLE001
            traceback.print_exc()
            code = 1
        try:
            threading = sys.modules.get("threading")
            if threading is not None:
                threading._shutdown()  # type: ignore[attr-defined]
            atexit._run_exitfuncs()
        except SystemExit as exc:
            code = _exit_code(exc)
        except BaseException:  # noqa: BLE001
            traceback.print_exc()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001 - closed or broken stdout
                code = code or 120
        os._exit(code)

    # -- fork, feed, watch, reap
    def _spawn(self, argv, stdin: bytes, files: dict, limits: dict, *, target=None,
               fetch=()) -> tuple[dict, bytes, bytes]:  # type: ignore[no-untyped-def]
        self.work.materialise(files)
        rlimits = _child_rlimits(limits, self.pid_namespace)
        in_fd = os.memfd_create("stdin", 0)
        _write_all(in_fd, stdin)
        os.lseek(in_fd, 0, os.SEEK_SET)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        st_r, st_w = os.pipe()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:  # child
            try:
                self._become_child(in_fd, out_w, err_w, st_w, rlimits)
                if target is not None:
                    target(3)
                    os._exit(0)
                env = dict(self.recipe.get("env", {}))
                os.execve(argv[0], argv, env)
            except BaseException as exc:  # noqa: BLE001
                try:
                    os.write(2, f"coderl runner: cannot start program: {exc}\n".encode())
                finally:
                    os._exit(127)
        for fd in (in_fd, out_w, err_w, st_w):
            os.close(fd)
        record, out, err = self._watch(pid, out_r, err_r, st_r, limits, start)
        markers = self.recipe.get("memory_error_markers", [])
        if record["status"] == "runtime_error" and any(m.encode() in err for m in markers):
            record["status"] = "memory_limit"
            record["message"] = f"memory limit {limits['memory_mb']} MiB exceeded (runtime out of heap)"
        kills = oom_kills(self.oom_fd)
        if kills > self.oom_kills and record["status"] != "ok":
            record["status"] = "memory_limit"
            record["message"] = f"memory limit {limits['memory_mb']} MiB exceeded (out-of-memory kill)"
        self.oom_kills = kills
        if fetch:
            record["fetched"] = self.work.fetch(list(fetch))
        self._kill_everything(pid)
        return record, out, err

    def _become_child(self, in_fd: int, out_w: int, err_w: int, st_w: int,
                      rlimits: list[tuple[int, tuple[int, int]]]) -> None:
        try:  # the OOM killer must pick the program, never the runner (raising it needs no privilege)
            fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
            os.write(fd, b"1000")
            os.close(fd)
        except OSError:
            pass
        if not self.pid_namespace:
            os.setsid()  # lets the runner kill the whole group without a pid namespace
        os.dup2(in_fd, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.dup2(st_w, 3)
        os.closerange(4, 65536)
        for sig in _DEFAULT_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        os.chdir(self.work.root)
        for which, limit in rlimits:
            resource.setrlimit(which, limit)

    def _watch(self, pid: int, out_r: int, err_r: int, st_r: int, limits: dict,
               start: float) -> tuple[dict, bytes, bytes]:
        pidfd = os.pidfd_open(pid)
        caps = {out_r: limits["stdout_kb"] * 1024, err_r: limits["stderr_kb"] * 1024}
        bufs: dict[int, list[bytes]] = {out_r: [], err_r: []}
        sizes = {out_r: 0, err_r: 0}
        truncated = {out_r: False, err_r: False}
        status = bytearray()
        open_fds = {out_r, err_r, st_r}

        def take(fd: int, chunk: bytes) -> bool:
            """Keep what fits under the fd's limit; False once it is full (the rest is dropped)."""
            if fd == st_r:
                status.extend(chunk)
                return True
            room = caps[fd] - sizes[fd]
            if len(chunk) > room:
                truncated[fd] = True
                chunk = chunk[:room]
            if chunk:
                bufs[fd].append(chunk)
                sizes[fd] += len(chunk)
            return room > 0

        poller = select.poll()
        for fd in open_fds:
            poller.register(fd, select.POLLIN | select.POLLHUP)
        poller.register(pidfd, select.POLLIN)
        deadline = start + limits["wall_s"]
        rss_limit_kb = None if limits.get("cgroup_memory") else limits["memory_mb"] * 1024
        killed_for = None
        peak_poll_kb = 0
        exited = False
        while not exited:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                killed_for = "wall"
                break
            wait_ms = int(min(timeout, 0.01 if rss_limit_kb else timeout) * 1000) + 1
            for fd, _ev in poller.poll(wait_ms):
                if fd == pidfd:
                    exited = True
                    continue
                chunk = _read_some(fd)
                if chunk is None:
                    continue
                if not chunk:
                    poller.unregister(fd)
                    open_fds.discard(fd)
                    continue
                take(fd, chunk)
            if truncated[out_r]:
                killed_for = "output"
                break
            if rss_limit_kb:
                rss = _namespace_rss_kb(pid, self.pid_namespace)
                peak_poll_kb = max(peak_poll_kb, rss)
                if rss > rss_limit_kb:
                    killed_for = "memory"
                    break
        if killed_for:
            _kill(pid, self.pid_namespace)
        # Drain what is already buffered in the pipes, without waiting for lingering holders.
        for fd in (out_r, err_r, st_r):
            if fd in open_fds:
                os.set_blocking(fd, False)
                while True:
                    try:
                        chunk = os.read(fd, 1 << 16)
                    except BlockingIOError:
                        break
                    if not chunk or not take(fd, chunk):
                        break
        _, wait_status, usage = os.wait4(pid, 0)
        wall = time.monotonic() - start
        for fd in (out_r, err_r, st_r, pidfd):
            os.close(fd)
        cpu = usage.ru_utime + usage.ru_stime
        record = {
            "cpu_s": round(cpu, 6),
            "wall_s": round(wall, 6),
            "memory_kb": max(int(usage.ru_maxrss), peak_poll_kb),
            "stdout_truncated": truncated[out_r],
            "stderr_truncated": truncated[err_r],
            "exit_code": None,
            "signal": None,
            "time_limit_kind": None,
            "memory_error": STATUS_MEMORY_ERROR in status,
            "message": "",
        }
        if os.WIFEXITED(wait_status):
            record["exit_code"] = os.WEXITSTATUS(wait_status)
        elif os.WIFSIGNALED(wait_status):
            record["signal"] = os.WTERMSIG(wait_status)
        record["status"] = _status(record, killed_for, limits)
        return record, b"".join(bufs[out_r]), b"".join(bufs[err_r])

    def _kill_everything(self, pid: int) -> None:
        _kill(pid, self.pid_namespace)
        while True:  # reap every zombie, including orphans re-parented to us (PID 1)
            try:
                reaped, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if reaped == 0 and not _kill(pid, self.pid_namespace):
                time.sleep(0.0005)
        if self.pid_namespace:
            _kill(pid, True)


_DEFAULT_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM, signal.SIGCHLD)


def _child_rlimits(limits: dict, pid_namespace: bool) -> list[tuple[int, tuple[int, int]]]:
    """The rlimits a child sets on itself (worked out in the runner, so the child does less)."""
    cpu = max(1, int(limits["cpu_s"] + 0.999))
    fsize = limits["file_size_kb"] * 1024
    stack = min(limits["memory_mb"], 1024) * 1024 * 1024
    rlimits = [(resource.RLIMIT_CPU, (cpu, cpu + 1)), (resource.RLIMIT_FSIZE, (fsize, fsize)),
               (resource.RLIMIT_NOFILE, (limits["open_files"], limits["open_files"])),
               (resource.RLIMIT_CORE, (0, 0)), (resource.RLIMIT_STACK, (stack, stack))]
    if pid_namespace:  # one uid per namespace: NPROC counts only this slot's processes
        rlimits.append((resource.RLIMIT_NPROC, (limits["max_processes"],) * 2))
    return rlimits


_PRELUDE_CODE = compile(LCB_PRELUDE, "<prelude>", "exec", dont_inherit=True)


def _child_streams() -> tuple[io.TextIOWrapper, io.TextIOWrapper, io.TextIOWrapper]:
    """sys.stdin/stdout/stderr for the Python children, made once (not per test). They are made
    while fds 0-2 are what a child's are (a memfd, then pipes), because the io objects cache
    whether their fd can seek; the runner never reads or writes through them, so every child
    inherits them empty, and in the child they reach its own fds 0-2."""
    saved = [os.dup(fd) for fd in (0, 1, 2)]
    stdin_fd = os.memfd_create("stdin", 0)
    pipe_r, pipe_w = os.pipe()
    try:
        os.dup2(stdin_fd, 0)
        os.dup2(pipe_w, 1)
        os.dup2(pipe_w, 2)
        streams = (
            io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),
                             encoding="utf-8", errors="surrogateescape"),
            io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)),
                             encoding="utf-8", errors="surrogateescape"),
            io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
                             encoding="utf-8", errors="backslashreplace", line_buffering=True),
        )
        for stream in streams:
            stream.buffer.raw.seekable()  # cached now, for the fd kinds above
    finally:
        for fd, old in zip((0, 1, 2), saved, strict=True):
            os.dup2(old, fd)
            os.close(old)
        for fd in (stdin_fd, pipe_r, pipe_w):
            os.close(fd)
    return streams


def _status(record: dict, killed_for: str | None, limits: dict) -> str:
    """Turn the raw facts into one status, in isolate's order: limits first, then the exit."""
    sig = record["signal"]
    if killed_for == "wall":
        record["time_limit_kind"] = "wall"
        record["message"] = f"wall time limit {limits['wall_s']} s exceeded"
        return "time_limit"
    if killed_for == "output":
        record["message"] = f"stdout exceeded {limits['stdout_kb']} KiB"
        return "output_limit"
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and record["cpu_s"] >= limits["cpu_s"]) or (
        record["cpu_s"] > limits["cpu_s"]
    ):
        record["time_limit_kind"] = "cpu"
        record["message"] = f"cpu time limit {limits['cpu_s']} s exceeded"
        return "time_limit"
    if killed_for == "memory" or record["memory_error"] or record["memory_kb"] > limits["memory_mb"] * 1024:
        record["message"] = f"memory limit {limits['memory_mb']} MiB exceeded"
        return "memory_limit"
    if sig == signal.SIGXFSZ:
        record["message"] = f"file size limit {limits['file_size_kb']} KiB exceeded"
        return "output_limit"
    if sig is not None:
        record["message"] = f"killed by signal {sig} ({signal.Signals(sig).name})"
        return "runtime_error"
    if record["exit_code"] != 0:
        record["message"] = f"exit code {record['exit_code']}"
        return "runtime_error"
    return "ok"


def _compile_record(status: str, seconds: float) -> dict:
    return {"status": status, "exit_code": 0 if status == "ok" else 1, "signal": None, "cpu_s": round(seconds, 6),
            "wall_s": round(seconds, 6), "memory_kb": 0, "message": ""}


def _stop_requested() -> bool:
    """Has the engine sent a ``stop`` frame? (Checked between runs, never blocks.)"""
    ready, _, _ = select.select([PROTO_IN], [], [], 0)
    if not ready:
        return False
    header, _ = read_frame(PROTO_IN)
    return header.get("op") == "stop"


def oom_kills(fd: int | None) -> int:
    """A cgroup's OOM-kill counter (``oom_kill N`` in memory.events or memory.oom_control), read
    through an open fd: the runner's is passed in by the engine, the engine keeps its own."""
    if fd is None:
        return 0
    try:
        data = os.pread(fd, 8192, 0)
    except OSError:
        return 0
    for line in data.splitlines():
        if line.startswith(b"oom_kill "):
            return int(line.split()[1])
    return 0


def _read_some(fd: int) -> bytes | None:
    """Bytes available now, b"" at end of file, None when nothing is ready after all."""
    try:
        return os.read(fd, 1 << 16)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EINTR):
            return None
        raise


def _kill(pid: int, pid_namespace: bool) -> bool:
    """SIGKILL the program and everything it started. Returns whether anything was signalled."""
    try:
        if pid_namespace:
            os.kill(-1, signal.SIGKILL)  # all processes of the namespace except ourselves
        else:
            os.killpg(pid, signal.SIGKILL)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return False


def _namespace_rss_kb(pid: int, pid_namespace: bool) -> int:
    """Sum of resident memory of the program's processes (fallback when no cgroup is available)."""
    pids = [p for p in os.listdir("/proc") if p.isdigit() and p != "1"] if pid_namespace else [str(pid)]
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/statm") as fh:
                total += int(fh.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
        except (OSError, ValueError, IndexError):
            continue
    return total


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    with contextlib.suppress(BaseException):
        print(exc.code, file=sys.stderr)
    return 1


def main() -> None:
    box, *scratch = sys.argv[1].split(":")
    pid_namespace = sys.argv[2] == "pidns"
    oom_fd = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] != "-" else None
    os.dup2(0, PROTO_IN)
    os.dup2(1, PROTO_OUT)
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    try:  # a non-dumpable runner cannot be read or written through /proc/1/mem by its children
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except OSError:
        pass
    import site  # started with -S (a smaller heap forks faster); the packages stay importable

    sys.path.extend(p for p in site.getsitepackages() if p not in sys.path)
    runner = Runner(box, scratch, pid_namespace, oom_fd)
    gc.collect()
    gc.freeze()
    _write_all(PROTO_OUT, encode_frame({"ready": True, "pid": os.getpid()}))
    while True:
        try:
            header, blobs = read_frame(PROTO_IN)
        except EOFError:
            return
        op = header.get("op")
        try:
            if op == "prepare":
                reply, out_blobs = runner.prepare(header, blobs)
            elif op == "run_batch":
                reply, out_blobs = runner.run_batch(header, blobs)
            elif op == "stop":  # arrived after its batch had already finished
                continue
            else:
                reply, out_blobs = {"error": f"unknown op {op!r}"}, []
        except Exception as exc:  # noqa: BLE001 - reported as a sandbox error by the engine
            reply, out_blobs = {"error": f"{type(exc).__name__}: {exc}"}, []
        _write_all(PROTO_OUT, encode_frame(reply, out_blobs))


if __name__ == "__main__":
    main()
