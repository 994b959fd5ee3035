"""What both PID 1s share, the judging slot's ``runner.py`` and the session's ``session_init.py``
(stdlib only; inside the sandbox this is ``/coderl/pid1.py``): making the process private, the
rlimits a child sets on itself, and the serve loop that answers the host's frames one at a time.
"""

from __future__ import annotations

import os
import resource

TYPE_CHECKING = False  # not typing's: importing typing costs every PID 1 its start and ~1 MiB

if __package__:  # the host side (tests, tools) imports coderl.sandbox.pid1
    from coderl.sandbox.frames import encode_frame, read_frame
    from coderl.sandbox.wire import write_all
else:  # inside the sandbox, beside frames.py and wire.py
    from frames import encode_frame, read_frame  # type: ignore[no-redef]
    from wire import write_all  # type: ignore[no-redef]

if TYPE_CHECKING:  # collections.abc likewise
    from collections.abc import Callable, Iterable

    Reply = tuple[dict, list[bytes]]
    Handler = Callable[[dict, list[bytes]], Reply]

PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 4, 36


def make_private(*, subreaper: bool = False) -> None:
    """Non-dumpable: a program of the same uid cannot read or write PID 1 through /proc/1/mem or
    inject frames into its protocol pipes through /proc/1/fd (ptrace itself is denied by seccomp).
    ``subreaper``: orphans of our children's children come back to us, not to init.

    ``prctl`` is called through ``_ctypes``, the C half of ctypes, as frames.py uses ``_json``:
    the ``ctypes`` package defines its hundred types on import, 2.5-3 ms of every PID 1's start."""
    try:
        import _ctypes

        class _Int(_ctypes._SimpleCData):
            _type_ = "i"

        class _Function(_ctypes.CFuncPtr):
            _flags_, _restype_ = _ctypes.FUNCFLAG_CDECL, _Int

        class _Libc:
            _handle = _ctypes.dlopen(None, os.RTLD_NOW)

        prctl = _Function(("prctl", _Libc))
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        if subreaper:
            prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except OSError:
        pass


def set_rlimits(rlimits: Iterable[tuple[int, int, int]]) -> None:
    """Set (resource, soft, hard) triples on this process: called in a child before it execs."""
    for which, soft, hard in rlimits:
        resource.setrlimit(which, (soft, hard))


def serve(handlers: dict[str, Handler | None], on_error: Callable[[dict, Exception], Reply], *,
          fd_in: int, fd_out: int) -> None:
    """Say ready, then answer each request frame with its handler's reply frame until the host
    closes the pipe. A handler of None: the op is read and dropped (no reply). An unknown op is an
    ``error`` reply; an exception from a handler becomes ``on_error``'s reply (which may re-raise)."""
    write_all(fd_out, encode_frame({"ready": True, "pid": os.getpid()}))
    while True:
        try:
            header, blobs = read_frame(fd_in)
        except EOFError:
            return
        op = header.get("op")
        if op not in handlers:
            write_all(fd_out, encode_frame({"error": f"unknown op {op!r}"}))
            continue
        handler = handlers[op]
        if handler is None:
            continue
        try:
            reply, out = handler(header, blobs)
        except Exception as exc:  # noqa: BLE001 - the host decides: on_error shapes or re-raises
            reply, out = on_error(header, exc)
        write_all(fd_out, encode_frame(reply, out))
