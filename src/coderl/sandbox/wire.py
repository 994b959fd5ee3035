"""What the engine, the runner and the zygote share on their pipes (stdlib only).

Inside the sandbox this file is ``/coderl/wire.py``, imported by the runner and the zygote as a
top-level module; the engine imports it as ``coderl.sandbox.wire``.

Host <-> PID 1 traffic, a few messages per submission or command, is ``frames`` (JSON headers
and blobs). Runner <-> zygote traffic, two messages per test, is *packets* here: one op byte, a
``>I`` payload length and the payload. The per-test packets carry fixed structs, so the zygote,
which forks between them, parses nothing and allocates almost nothing (every page it writes after
a fork costs a fault); the per-submission ones carry marshalled data. No json here: the lean
zygote imports this module, and every module it holds makes each fork dearer.
"""

from __future__ import annotations

import marshal
import os
import struct

# The zygote's fds: a test process gets 0-3 (stdin memfd, stdout, stderr, the status pipe); the
# zygote also holds its command and event pipes and the runner's stderr for its own complaints.
STATUS_FD = 3
ZYGOTE_COMMANDS, ZYGOTE_EVENTS, ZYGOTE_DIAGNOSTICS = 10, 11, 12
STATUS_MEMORY_ERROR = b"M"  # what a Python test process writes on the status pipe when out of memory

PACKET = struct.Struct(">cI")
FORKED = struct.Struct(">i")  # the test process's pid
EXITED = struct.Struct(">iddq")  # wait status, user s, system s, peak RSS KiB
# The per-test packets whole, so the zygote makes each with one call and sends it with one write.
RUN = PACKET.pack(b"R", 0)
FORKED_PACKET = struct.Struct(PACKET.format + FORKED.format[1:])
EXITED_PACKET = struct.Struct(PACKET.format + EXITED.format[1:])


def read_exact(fd: int, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError("the other end closed the pipe")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_packet(fd: int, op: bytes, payload: bytes = b"") -> None:
    """One write: packets up to PIPE_BUF arrive whole, so a reader woken by poll never blocks."""
    write_all(fd, PACKET.pack(op, len(payload)) + payload)


def read_packet(fd: int, head: bytes = b"") -> tuple[bytes, bytes]:
    """The next packet; ``head``: its first bytes, already read."""
    if len(head) < PACKET.size:
        head += read_exact(fd, PACKET.size - len(head))
    op, size = PACKET.unpack(head)
    return op, read_exact(fd, size) if size else b""


def meta_packet(meta: dict, data: bytes = b"") -> bytes:
    """A per-submission packet payload: plain data and optional raw bytes (a source, a
    marshalled code object). Both ends are ours, so marshal is safe here and needs no import."""
    return marshal.dumps((meta, data))


def split_meta_packet(payload: bytes) -> tuple[dict, bytes]:
    return marshal.loads(payload)


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
