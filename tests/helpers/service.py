"""The real service for tests (coderl.server.launch), and the loopback ports around it."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx

from coderl.server.launch import free_port, loopback_listener, running_service

__all__ = ["descendants", "exited", "free_port", "loopback_listener", "metric", "metric_async", "refused_url",
           "running_service", "service_pid"]


@contextlib.contextmanager
def refused_url() -> Iterator[str]:
    """A loopback URL that refuses every connection while the block runs: its port is bound, so no
    other process can start listening there meanwhile (as one could on a port merely found free),
    and not listening, so a connection is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def service_pid(url: str) -> int:
    """The pid of the `coderl serve` that listens on ``url``'s loopback port: found by the
    listening socket itself, not by a port number in a command line (an inherited socket's
    service has none, and a number can match another process's arguments)."""
    port = int(url.rsplit(":", 1)[1].rstrip("/"))
    inodes = {fields[9] for fields in _tcp_table() if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == port}
    holders = [pid for pid, inode in _socket_holders() if inode in inodes and b"serve" in _cmdline(pid)]
    if len(holders) != 1:
        raise AssertionError(f"expected one coderl serve listening on port {port}, found {holders}")
    return holders[0]


def _tcp_table() -> list[list[str]]:
    rows: list[list[str]] = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            rows += [line.split() for line in Path(table).read_text().splitlines()[1:]]
    return rows


def _socket_holders() -> Iterator[tuple[int, str]]:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if link.startswith("socket:["):
                        yield int(pid), link[8:-1]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def descendants(ancestor: int, marker: bytes) -> list[int]:
    """The live processes below ``ancestor`` whose command line contains ``marker`` (a service's
    runners, its sandboxes)."""
    return [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc")))
            if marker in _cmdline(pid) and _has_ancestor(pid, ancestor)]


def _has_ancestor(pid: int, ancestor: int) -> bool:
    while pid > 1:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
        if pid == ancestor:
            return True
    return False


def exited(pid: int) -> bool:
    """The process has ended: gone, or a zombie its parent has not reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def metric(url: str, name: str, labels: str = "") -> float:
    """The service's Prometheus metric ``name`` (summed over the series whose labels contain
    ``labels``): the live state a test polls for (queue depth, busy slots, restarts)."""
    return _metric_in(httpx.get(url + "/metrics", timeout=10).text, name, labels)


async def metric_async(client: httpx.AsyncClient, url: str, name: str, labels: str = "") -> float:
    """``metric`` from inside the event loop that runs the requests being measured."""
    return _metric_in((await client.get(url + "/metrics", timeout=10)).text, name, labels)


def _metric_in(text: str, name: str, labels: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name) and labels in line and not line.startswith("#"))
