"""The zygote: a slot's fork server, the one process that forks test processes (stdlib only).

Theory of operation
-------------------
The runner (PID 1 of the slot) starts this process with the test's file descriptors already in
place: fd 0 the stdin memfd, 1 and 2 the stdout and stderr pipes, 3 the status pipe (all owned
and drained by the runner), 10 commands, 11 events, 12 the runner's stderr for our own complaints.
Its cwd is the work dir. Per submission the runner says what every test process is to be: the
submission's Python code, compiled here once (``S``; the child then runs the warm code object, so
no interpreter starts per test), or a program to exec (``J``, which also carries the rlimits).
Per test the runner writes ``R``; this process forks one child, reports its pid (``F``), waits for
it, kills and reaps everything the test left behind (``kill(-1)`` spares only this process and
PID 1; orphans come back here, a child subreaper) and reports the wait status and usage (``X``).

Why a process of its own: fork write-protects every page of the forking process, so every page it
writes until the next fork costs a page fault (3-4 us each on a VM, more than a trivial test's own
work). The runner's bookkeeping writes hundreds of pages per test; this loop writes a few dozen,
and a child of this compact process copies less. The child inherits what it needs: fds 0-3, the
cwd, default signal dispositions, oom_score_adj 1000 (the OOM killer picks the program first);
it closes our fds and sets its rlimits, nothing else.

A program can signal this process (it is not PID 1). The runner notices, adopts the test process
(PID 1 inherits orphans), finishes the test itself and starts a fresh zygote for the next one: no
state of ours outlives a test, and nothing of a program's reaches the next test.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wire  # noqa: E402 - /coderl is on sys.path only for this import

del sys.path[0]

# Pre-imported so a child finds them warm (the LiveCodeBench prelude imports most).
import atexit  # noqa: E402
import bisect  # noqa: E402, F401
import builtins  # noqa: E402
import collections  # noqa: E402, F401
import contextlib  # noqa: E402
import copy  # noqa: E402, F401
import ctypes  # noqa: E402
import datetime  # noqa: E402, F401
import decimal  # noqa: E402, F401
import fractions  # noqa: E402, F401
import functools  # noqa: E402, F401
import gc  # noqa: E402
import hashlib  # noqa: E402, F401 - the judge's function/assert harness imports it in every child
import heapq  # noqa: E402, F401
import io  # noqa: E402
import itertools  # noqa: E402, F401
import json  # noqa: E402
import marshal  # noqa: E402
import math  # noqa: E402, F401
import operator  # noqa: E402, F401
import random  # noqa: E402, F401 - reseeds itself in every forked child, as a new interpreter would be seeded
import re  # noqa: E402, F401
import resource  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402, F401
import string  # noqa: E402, F401
import time  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402
import typing  # noqa: E402, F401

COMMANDS, EVENTS, DIAGNOSTICS = 10, 11, 12
STATUS_FD = 3
STATUS_MEMORY_ERROR = b"M"
# LiveCodeBench's prelude: the star-imports its judge puts before every Python program. A
# submission asks for it with ``"prelude": true``; it is then run once into the namespace every
# child starts from (never per test: it costs more than a trivial program). Only this constant is
# ever run here: a request names no code of its own.
LCB_PRELUDE = (
    "from string import *; from re import *; from datetime import *; from collections import *; "
    "from heapq import *; from bisect import *; from copy import *; from math import *; from random import *; "
    "from statistics import *; from itertools import *; from functools import *; from operator import *; "
    "from io import *; from sys import *; from json import *; from builtins import *; from typing import *; "
    "import string, re, datetime, collections, heapq, bisect, copy, math, random, statistics, itertools, "
    "functools, operator, io, sys, json; sys.setrecursionlimit(50000); sys.set_int_max_str_digits(0)\n"
)
_PRELUDE_CODE = compile(LCB_PRELUDE, "<prelude>", "exec", dont_inherit=True)
DEFAULT_RECURSION_LIMIT = sys.getrecursionlimit()
DEFAULT_MAX_STR_DIGITS = sys.get_int_max_str_digits()
FULL_COLLECTION_EVERY = 64  # loads between full collections (frozen cycles are never collected)
MAX_FD = 65536
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36


class Zygote:
    def __init__(self, pid_namespace: bool) -> None:
        self.pid_namespace = pid_namespace
        self.streams = _child_streams()
        self.code: types.CodeType | None = None  # the submission's compiled code, for warm runs
        self.main: types.ModuleType | None = None  # the namespace each Python child runs in
        self.argv: list[str] = []
        self.job: dict = {"kind": "python", "rlimits": []}
        self.loads = 0

    def serve(self) -> None:
        while True:
            try:
                op, payload = wire.read_packet(COMMANDS)
            except EOFError:
                return
            if op == b"R":
                self.run()
            elif op == b"J":
                self.job = json.loads(payload)
            elif op == b"S":
                wire.write_packet(EVENTS, b"C", self.load(payload))
            else:
                raise ValueError(f"unknown command {op!r}")

    # -- per submission
    def load(self, payload: bytes) -> bytes:
        """Compile (or unmarshal, when a throw-away child compiled a big source) the submission's
        code and build the ``__main__`` its children start from."""
        meta, data = wire.split_json_packet(payload)
        self.code = self.main = None
        self.loads += 1
        if self.loads % FULL_COLLECTION_EVERY == 0:
            gc.unfreeze()
            gc.collect()
        sys.setrecursionlimit(DEFAULT_RECURSION_LIMIT)  # a prelude raised them for the last submission
        sys.set_int_max_str_digits(DEFAULT_MAX_STR_DIGITS)
        started = time.monotonic()
        if meta["form"] == "marshal":
            code = marshal.loads(data)
        else:
            try:  # CPython's parser and compiler turn hostile nesting into SyntaxError or RecursionError
                code = compile(data, meta["filename"], "exec", dont_inherit=True)
            except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
                message = "".join(traceback.format_exception_only(type(exc), exc))
                return wire.json_packet({"ok": False, "seconds": time.monotonic() - started, "message": message})
        self.code = code
        self._load_main(meta["filename"], meta["prelude"])
        return wire.json_packet({"ok": True, "seconds": time.monotonic() - started})

    def _load_main(self, filename: str, prelude: bool) -> None:
        """The ``__main__`` module every child of this submission starts from, with the prelude
        already run when asked for. Its ``from sys import *`` binds ``stdin``, ``stdout``,
        ``stderr`` and ``argv``, so they are swapped for the very objects a child gets as
        ``sys.stdin`` etc. while it runs. Then everything is frozen, so that the children's
        collector does not touch (and so copy) these pages."""
        main = types.ModuleType("__main__")
        main.__dict__.update(__file__=filename, __builtins__=builtins)
        argv = [filename]
        if prelude:
            saved = sys.stdin, sys.stdout, sys.stderr, sys.argv
            sys.stdin, sys.stdout, sys.stderr = self.streams
            sys.argv = argv
            try:
                exec(_PRELUDE_CODE, main.__dict__)  # noqa: S102 - our constant, see LCB_PRELUDE
            finally:
                sys.stdin, sys.stdout, sys.stderr, sys.argv = saved
        self.main, self.argv = main, argv
        gc.freeze()

    # -- per test
    def run(self) -> None:
        pid = os.fork()
        if pid == 0:
            self._child()
        wire.write_packet(EVENTS, b"F", wire.FORKED.pack(pid))
        _, status, usage = os.wait4(pid, 0)
        self._kill_the_rest(pid)
        wire.write_packet(EVENTS, b"X", wire.EXITED.pack(status, usage.ru_utime, usage.ru_stime, usage.ru_maxrss))

    def _kill_the_rest(self, pid: int) -> None:
        """SIGKILL whatever the test left (daemons, setsid'd children) and reap it all."""
        while True:
            signalled = _kill(pid, self.pid_namespace)
            try:
                reaped, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if reaped == 0 and not signalled:
                time.sleep(0.0005)

    def _child(self) -> None:
        try:
            os.closerange(4, MAX_FD)  # our pipes: a program sees fds 0-3 only
            if not self.pid_namespace:
                os.setsid()  # lets the group be killed without a pid namespace
            job = self.job
            for which, soft, hard in job["rlimits"]:
                resource.setrlimit(which, (soft, hard))
            if job["kind"] == "python":
                self._run_python()
            elif job["kind"] == "compile_python":
                _compile_to_stdout(job["source"], job["filename"])
            else:
                os.execve(job["argv"][0], job["argv"], job["env"])
        except BaseException as exc:  # noqa: BLE001
            try:
                os.write(2, f"coderl: cannot start program: {exc}\n".encode())
            finally:
                os._exit(127)
        os._exit(0)

    def _run_python(self) -> None:
        """Run the warm code object as ``__main__``, then exit as the interpreter would."""
        main = self.main
        if main is None:
            raise RuntimeError("no Python code loaded")
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
            wire.write_all(STATUS_FD, STATUS_MEMORY_ERROR)
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


def _compile_to_stdout(source: str, filename: str) -> None:
    """A big source is compiled in a throw-away child, so a parser blow-up cannot take the zygote
    down; the code object goes to the runner marshalled (``C``), or the error (``E``)."""
    try:
        with open(source, "rb") as fh:
            code = compile(fh.read(), filename, "exec", dont_inherit=True)
        wire.write_all(1, b"C" + marshal.dumps(code))
    except BaseException as exc:  # noqa: BLE001 - any failure is the program's
        message = "".join(traceback.format_exception_only(type(exc), exc))
        wire.write_all(1, b"E" + message.encode("utf-8", "replace"))


def _child_streams() -> tuple[io.TextIOWrapper, io.TextIOWrapper, io.TextIOWrapper]:
    """sys.stdin/stdout/stderr for the Python children, made once (not per test) over fds 0-2,
    which are already what a child's are (a memfd, then pipes): the io objects cache whether their
    fd can seek. We never read or write through them, so every child inherits them empty."""
    streams = (
        io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),
                         encoding="utf-8", errors="surrogateescape"),
        io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)),
                         encoding="utf-8", errors="surrogateescape"),
        io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
                         encoding="utf-8", errors="backslashreplace", line_buffering=True),
    )
    for stream in streams:
        stream.buffer.raw.seekable()  # cached now
    return streams


def _kill(pid: int, pid_namespace: bool) -> bool:
    """SIGKILL every test process. Returns whether anything was signalled."""
    try:
        if pid_namespace:
            os.kill(-1, signal.SIGKILL)  # all processes of the namespace but us and PID 1
        else:
            os.killpg(pid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    with contextlib.suppress(BaseException):  # a broken stderr loses the message, not the exit code
        print(exc.code, file=sys.stderr)
    return 1


def main() -> None:
    pid_namespace = sys.argv[1] == "pidns"
    # fds 0-2 are the tests' own: our complaints go to the runner's stderr
    diagnostics = io.TextIOWrapper(io.FileIO(DIAGNOSTICS, "w", closefd=False), encoding="utf-8",
                                   errors="backslashreplace", line_buffering=True)
    sys.stdout = sys.stderr = sys.__stdout__ = sys.__stderr__ = diagnostics
    sys.stdin = sys.__stdin__ = None
    libc = ctypes.CDLL(None)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # a program cannot read or write us through /proc/<pid>/mem
    if pid_namespace:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans of a test come back here to be reaped
    try:  # inherited by every child: the OOM killer picks the program, not the runner
        with open("/proc/self/oom_score_adj", "w") as fh:
            fh.write("1000")
    except OSError:
        pass
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):  # children inherit the defaults
        signal.signal(sig, signal.SIG_DFL)
    import site  # started with -S (a smaller heap forks faster); the packages stay importable

    sys.path.extend(p for p in site.getsitepackages() if p not in sys.path)
    zygote = Zygote(pid_namespace)
    gc.collect()
    gc.freeze()
    wire.write_packet(EVENTS, b"Y")
    zygote.serve()


if __name__ == "__main__":
    main()
