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
it, kills and reaps everything the test left behind (orphans come back here, a child subreaper;
see ``reap``) and reports the wait status and usage (``X``).

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
import reap  # noqa: E402 - /coderl is on sys.path only for these imports
import wire  # noqa: E402

del sys.path[0]

import _signal  # noqa: E402 - not ``signal``, which loads enum, collections and functools: 1 MB more to fork
import atexit  # noqa: E402
import builtins  # noqa: E402
import ctypes  # noqa: E402
import gc  # noqa: E402
import io  # noqa: E402
import marshal  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402

# What the warm flavour imports so that a child finds it loaded: the LiveCodeBench prelude's
# modules and the judge harness's hashlib. The lean flavour holds none (each fork copies the page
# tables of everything held), for programs that import nothing and for compiled languages.
WARM_MODULES = ("bisect", "collections", "contextlib", "copy", "datetime", "decimal", "fractions", "functools",
                "hashlib", "heapq", "itertools", "json", "math", "operator", "random", "re", "statistics",
                "string", "traceback", "typing")
COMMANDS, EVENTS, DIAGNOSTICS = wire.ZYGOTE_COMMANDS, wire.ZYGOTE_EVENTS, wire.ZYGOTE_DIAGNOSTICS
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
PRELUDE_LIMITS = (50000, 0)  # what LCB_PRELUDE sets: the recursion limit, the int-to-str digit limit
DEFAULT_RECURSION_LIMIT = sys.getrecursionlimit()
DEFAULT_MAX_STR_DIGITS = sys.get_int_max_str_digits()
FULL_COLLECTION_EVERY = 64  # loads between full collections (frozen cycles are never collected)
MAX_FD = 65536
_FORKED, _FORKED_SIZE = wire.FORKED_PACKET, wire.FORKED.size
_EXITED_NOWAIT = os.WEXITED | os.WNOWAIT
_EXITED, _EXITED_SIZE = wire.EXITED_PACKET, wire.EXITED.size
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36


class Zygote:
    def __init__(self) -> None:
        self.streams = _child_streams()
        self.code: types.CodeType | None = None  # the submission's compiled code, for warm runs
        self.main: types.ModuleType | None = None  # the namespace each Python child runs in
        self.argv: list[str] = []
        self.job: dict = {"kind": "python", "rlimits": []}
        self.loads = 0

    def serve(self) -> None:
        read, run, run_packet = os.read, self.run, wire.RUN
        while True:
            head = read(COMMANDS, wire.PACKET.size)
            if head == run_packet:  # the per-test path: no parsing, no allocation
                run()
                continue
            if not head:
                return
            op, payload = wire.read_packet(COMMANDS, head)
            if op == b"J":
                self.job = wire.split_meta_packet(payload)[0]
            elif op == b"S":
                wire.write_packet(EVENTS, b"C", self.load(payload))
            else:
                raise ValueError(f"unknown command {op!r}")

    # -- per submission
    def load(self, payload: bytes) -> bytes:
        """Compile (or unmarshal, when a throw-away child compiled a big source) the submission's
        code and build the ``__main__`` its children start from."""
        meta, data = wire.split_meta_packet(payload)
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
                message = _format_exception_only(exc)
                return wire.meta_packet({"ok": False, "seconds": time.monotonic() - started, "message": message})
        self.code = code
        self._load_main(meta["filename"], meta["prelude"])
        if meta.get("prelude_limits"):  # a program that needs the prelude's limits but none of its names
            sys.setrecursionlimit(PRELUDE_LIMITS[0])
            sys.set_int_max_str_digits(PRELUDE_LIMITS[1])
        return wire.meta_packet({"ok": True, "seconds": time.monotonic() - started})

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
        """One test. Everything between the fork and the next one writes pages that the fork has
        write-protected (a fault each), so this does as little as it can."""
        pid = os.fork()
        if pid == 0:
            self._child()
        os.write(EVENTS, _FORKED.pack(b"F", _FORKED_SIZE, pid))
        # Wait without reaping, then reap: a program that killed us and exited is then still a
        # zombie when we die, left with its status for the runner to adopt. (A wait4 woken by our
        # own pending SIGKILL reaps a child that exited meanwhile, and the status dies with us.)
        os.waitid(os.P_PID, pid, _EXITED_NOWAIT)
        _, status, usage = os.wait4(pid, 0)
        reap.kill_children()
        os.write(EVENTS, _EXITED.pack(b"X", _EXITED_SIZE, status, usage.ru_utime, usage.ru_stime, usage.ru_maxrss))

    def _child(self) -> None:
        try:
            os.closerange(4, MAX_FD)  # our pipes: a program sees fds 0-3 only
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
        except MemoryError as exc:
            wire.write_all(wire.STATUS_FD, wire.STATUS_MEMORY_ERROR)
            _print_uncaught(exc)
            code = 1
        except BaseException as exc:  # noqa: BLE001
            _print_uncaught(exc)
            code = 1
        try:
            threading = sys.modules.get("threading")
            if threading is not None:
                threading._shutdown()  # type: ignore[attr-defined]
            atexit._run_exitfuncs()
        except SystemExit as exc:
            code = _exit_code(exc)
        except BaseException as exc:  # noqa: BLE001
            _print_uncaught(exc)
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
        wire.write_all(1, b"E" + _format_exception_only(exc).encode("utf-8", "replace"))


def _print_uncaught(exc: BaseException) -> None:
    """What the interpreter does with an uncaught exception: ``sys.excepthook`` (the program may
    have set its own; the default is the interpreter's C printer, so no traceback module is
    needed), the traceback starting at the program's frames, not ours."""
    tb = exc.__traceback__
    exc = exc.with_traceback(tb.tb_next if tb is not None else None)
    try:
        sys.excepthook(type(exc), exc, exc.__traceback__)
    except BaseException:  # noqa: BLE001 - a broken hook of the program's: the default one
        sys.__excepthook__(type(exc), exc, exc.__traceback__)


def _format_exception_only(exc: BaseException) -> str:
    """The interpreter's own text for an exception without traceback (a SyntaxError's shows the
    line and the caret), as ``python main.py`` prints it: the printer takes the traceback from the
    exception itself, which holds our frames, so it is dropped first."""
    saved, sys.stderr = sys.stderr, io.StringIO()
    try:
        sys.__excepthook__(type(exc), exc.with_traceback(None), None)
        return sys.stderr.getvalue()
    finally:
        sys.stderr = saved


def _prelude_names() -> list[str]:
    """The names LCB_PRELUDE binds to something other than the builtin of that name: a program
    that uses none of them (and looks no name up at run time) runs the same without the prelude.
    The runner decides that; this process, which holds the modules, tells it the names."""
    namespace = {"__builtins__": builtins}
    saved = sys.getrecursionlimit(), sys.get_int_max_str_digits()
    try:
        exec(_PRELUDE_CODE, namespace)  # noqa: S102 - our constant, see LCB_PRELUDE
    finally:
        sys.setrecursionlimit(saved[0])
        sys.set_int_max_str_digits(saved[1])
    return sorted(k for k, v in namespace.items() if not k.startswith("__") and getattr(builtins, k, namespace) is not v)


def _warm_up() -> None:
    """Run, here and once, what most programs do: read a line, split it, convert, compute and
    print. A child then finds the interpreter's method cache filled for those (type, name) pairs
    instead of filling it (each entry written is a page copied in every child)."""
    data = "3 4\n1 2 3\n" * 4
    out = io.StringIO()
    stdin = io.TextIOWrapper(io.BytesIO(data.encode()), encoding="utf-8", errors="surrogateescape")
    saved = sys.stdin, sys.stdout
    sys.stdin, sys.stdout = stdin, out
    try:
        for _ in range(2):
            a, b = map(int, input().split())
            values = list(map(int, input().strip().split()))
            print(a + b, sum(values), max(values), sorted(values), len(values), " ".join(map(str, values)))
            print(f"{a / b:.3f}", str(a) + str(b), [x * 2 for x in values], {a: b}, (a, b), end="\n")
        sys.stdin.readline()
        sys.stdin.read()
    finally:
        sys.stdin, sys.stdout = saved


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


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    try:
        print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - a broken stderr loses the message, not the exit code
        return 1
    return 1


def main() -> None:
    warm = sys.argv[1] == "warm"
    # fds 0-2 are the tests' own: our complaints go to the runner's stderr
    diagnostics = io.TextIOWrapper(io.FileIO(DIAGNOSTICS, "w", closefd=False), encoding="utf-8",
                                   errors="backslashreplace", line_buffering=True)
    sys.stdout = sys.stderr = sys.__stdout__ = sys.__stderr__ = diagnostics
    sys.stdin = sys.__stdin__ = None
    libc = ctypes.CDLL(None)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # a program cannot read or write us through /proc/<pid>/mem
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # orphans of a test come back here to be reaped
    try:  # inherited by every child: the OOM killer picks the program, not the runner
        with open("/proc/self/oom_score_adj", "w") as fh:
            fh.write("1000")
    except OSError:
        pass
    for sig in (_signal.SIGPIPE, _signal.SIGXFSZ, _signal.SIGINT):  # children inherit the defaults
        _signal.signal(sig, _signal.SIG_DFL)
    venv = os.path.dirname(os.path.dirname(sys.executable))
    if os.path.isfile(os.path.join(venv, "pyvenv.cfg")):  # the runtime environment (what site.py does without -S)
        sys.prefix = sys.exec_prefix = venv
    import site  # started with -S (a smaller heap forks faster); the packages stay importable

    sys.path.extend(p for p in site.getsitepackages() if p not in sys.path)
    if warm:
        for name in WARM_MODULES:
            __import__(name)
    zygote = Zygote()
    _warm_up()
    gc.collect()
    gc.freeze()
    libc.malloc_trim(0)  # what starting up freed goes back: every resident page is copied by each fork
    wire.write_packet(EVENTS, b"Y", marshal.dumps(_prelude_names() if warm else []))
    zygote.serve()


if __name__ == "__main__":
    main()
