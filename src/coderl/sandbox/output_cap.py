"""A child's stdout and stderr kept up to their caps, the rest dropped and counted (stdlib only;
inside the sandbox ``/coderl/output_cap.py``, used by both PID 1s: the runner per test, the
session's init per command)."""

from __future__ import annotations

import os
import select


class CappedOutput:
    """Reads fds into per-fd buffers under their caps; ``status_fd`` (the runner's status pipe) is
    kept whole, uncapped. ``dropped``: bytes read past the caps, so a caller can kill a child that
    prints far more than is kept instead of draining it until its timeout."""

    def __init__(self, caps: dict[int, int], status_fd: int | None = None) -> None:
        self.caps = caps
        self.status_fd = status_fd
        self.chunks: dict[int, list[bytes]] = {fd: [] for fd in caps}
        self.sizes = dict.fromkeys(caps, 0)
        self.truncated = dict.fromkeys(caps, False)
        self.dropped = 0
        self.status = bytearray()

    def read(self, fd: int) -> bool:
        """One read; False once the fd is at its end (all writers closed it)."""
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return True
        self.take(fd, chunk)
        return bool(chunk)

    def take(self, fd: int, chunk: bytes) -> None:
        """Keep what fits under the fd's cap; the rest is dropped (and flagged)."""
        if fd == self.status_fd:
            self.status.extend(chunk)
            return
        room = self.caps[fd] - self.sizes[fd]
        if len(chunk) > room:
            self.truncated[fd] = True
            self.dropped += len(chunk) - max(room, 0)
            chunk = chunk[:room]
        if chunk:
            self.chunks[fd].append(chunk)
            self.sizes[fd] += len(chunk)

    def drain(self) -> None:
        """Everything still in the (non-blocking) pipes: every writer is dead, and the next child
        must find them empty. A read shorter than asked for emptied its pipe."""
        poller = select.poll()
        for fd in (*self.caps, *(() if self.status_fd is None else (self.status_fd,))):
            poller.register(fd, select.POLLIN)
        for fd, _ev in poller.poll(0):
            while True:
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    break
                self.take(fd, chunk)
                if len(chunk) < 1 << 16:
                    break

    def bytes(self, fd: int) -> bytes:
        return b"".join(self.chunks[fd])
