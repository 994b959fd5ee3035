"""The runner's handle on one zygote (stdlib only; runs inside the slot beside runner.py): start
it with a test's fds in place, send it requests, read its packets, notice it died or was stopped,
stop it. What a test's status is, and when the prelude is needed, are in status_rules.py and
prelude_scan.py; the runner itself keeps the protocol with the engine and the per-test watch."""

from __future__ import annotations

import contextlib
import marshal
import os
import select
import signal
import sys

import reap
import wire

ZYGOTE_START_S = 30.0

class ZygoteLost(Exception):
    """The zygote died or stopped answering (a program signalled it, or the OOM killer took it)."""


class ZygoteProcess:
    """The runner's handle on the slot's zygote: start it with the test fds in place, talk to it."""

    def __init__(self, test_fds: tuple[int, int, int, int], workdir: str, flavor: str) -> None:
        self.test_fds = test_fds  # stdin memfd, stdout, stderr and status pipe write ends
        self.workdir = workdir
        self.flavor = flavor  # "lean" or "warm"
        self.pid: int | None = None
        self.commands = self.events = -1
        self._pending = b""  # what was read of the next packet(s)
        self.prelude_names: frozenset[bytes] = frozenset()  # the warm one's answer, see _needs_prelude

    @property
    def alive(self) -> bool:
        return self.pid is not None

    def start(self) -> None:
        commands_r, commands_w = os.pipe()
        events_r, events_w = os.pipe()
        layout = [*self.test_fds, commands_r, events_w, 2]
        targets = [0, 1, 2, wire.STATUS_FD, wire.ZYGOTE_COMMANDS, wire.ZYGOTE_EVENTS, wire.ZYGOTE_DIAGNOSTICS]
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zygote.py")
        argv = [sys.executable, "-I", "-S", script, self.flavor]
        pid = os.fork()
        if pid == 0:  # two steps, so that no source fd is overwritten before it is copied
            try:
                high = [os.dup(fd) for fd in layout]
                for fd, target in zip(high, targets, strict=True):
                    os.dup2(fd, target)
                os.closerange(max(targets) + 1, 65536)
                os.chdir(self.workdir)
                os.execv(argv[0], argv)
            finally:
                os._exit(127)
        os.close(commands_r)
        os.close(events_w)
        self.pid, self.commands, self.events = pid, commands_w, events_r
        ready, _, _ = select.select([events_r], [], [], ZYGOTE_START_S)
        try:
            op, names = self.read() if ready else (b"", b"")
        except ZygoteLost:
            op = b""
        if op == b"Y" and names:
            self.prelude_names = frozenset(name.encode() for name in marshal.loads(names))
        if op != b"Y":
            self.stop()
            raise RuntimeError("the zygote did not start")

    def send(self, op: bytes, payload: bytes = b"") -> None:
        try:
            wire.write_packet(self.commands, op, payload)
        except BrokenPipeError as exc:
            raise ZygoteLost("gone") from exc

    def read(self) -> tuple[bytes, bytes]:
        """The next packet, in as few reads as it takes (one, for the per-test ones)."""
        while _whole_packet(self._pending) is None:
            chunk = os.read(self.events, 1 << 16)
            if not chunk:
                self._pending = b""
                raise ZygoteLost("gone")
            self._pending += chunk
        end = _whole_packet(self._pending)
        op, packet, self._pending = self._pending[:1], self._pending[wire.PACKET.size:end], self._pending[end:]
        return op, packet

    def read_ready(self) -> list[tuple[bytes, bytes]]:
        """The packets that have arrived (one read, and whatever else that read brought)."""
        packets = [self.read()]
        while _whole_packet(self._pending) is not None:
            packets.append(self.read())
        return packets

    def check(self) -> None:
        """Stop it if a program killed or stopped it (kill(-1) reaches both zygotes): between tests
        it writes nothing unasked, so an event pipe that reads now is its EOF."""
        if self.alive and (select.select([self.events], [], [], 0)[0] or _stopped(self.pid)):  # type: ignore[arg-type]
            self.stop()

    def answer(self, timeout_s: float) -> tuple[bytes, bytes]:
        """Its reply to a request, or ZygoteLost when none comes in time."""
        if not self._pending and not select.select([self.events], [], [], timeout_s)[0]:
            raise ZygoteLost("no answer")
        return self.read()

    def stop(self) -> None:
        """Kill and reap it (it may be dead or stopped already)."""
        if self.pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        for fd in (self.commands, self.events):
            os.close(fd)
        self.pid = None
        self.commands = self.events = -1
        self._pending = b""


def _whole_packet(data: bytes) -> int | None:
    """Where the first packet in ``data`` ends, if all of it is there."""
    if len(data) < wire.PACKET.size:
        return None
    end = wire.PACKET.size + wire.PACKET.unpack_from(data)[1]
    return end if len(data) >= end else None


def _stopped(pid: int) -> bool:
    try:
        return reap.proc_stat(pid)[0] in ("T", "t")
    except (OSError, IndexError):
        return False
