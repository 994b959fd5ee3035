"""Start a real `coderl serve` subprocess on a free loopback port and stop it afterwards: for the
demo, the benchmarks and the tests (one launcher, so all of them run the service as users do)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator

from coderl.client import wait_ready
from coderl.errors import SandboxError


def free_port() -> int:
    """A loopback port free at the moment of asking, for a program that binds its port itself from
    a setting where no socket can be handed over. Another process can take it before that program
    binds it: where the program takes a socket, hand it ``loopback_listener()`` instead."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def loopback_listener() -> socket.socket:
    """A listening socket on a free loopback port, for a child to serve on (``coderl serve --fd``).
    Picking a port and binding it later is a race: another process can take it in between, and a
    readiness probe would then talk to that process. A port bound from the moment it is picked
    cannot be taken."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


@contextlib.contextmanager
def running_service(*, slots: int = 2, timeout_s: float = 300.0, **flags: object) -> Iterator[str]:
    """Yields the base URL once /readyz answers; flags become ``--name value`` options (``--name``
    alone for True). ``timeout_s`` bounds a start that hangs (one that exits is seen at once): the
    first start on a machine builds the toolchains' precompiled headers and class archives, 85 s
    with a fresh CODERL_CACHE at load 13-18 on 2 vCPUs, so 120 s was too close."""
    with loopback_listener() as listener:
        argv = [sys.executable, "-m", "coderl.cli", "serve", "--fd", str(listener.fileno()), "--slots", str(slots)]
        for name, value in flags.items():
            argv += [f"--{name.replace('_', '-')}"] + ([] if value is True else [str(value)])
        log = tempfile.NamedTemporaryFile(prefix="coderl-serve-", suffix=".log", delete=False)  # noqa: SIM115
        # A file, not a pipe: an unread pipe fills up and blocks the service's logging.
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                pass_fds=(listener.fileno(),), env={**os.environ, "PYTHONUNBUFFERED": "1"})
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        if (why := wait_ready(url, timeout_s, alive=lambda: proc.poll() is None)) is not None:
            if proc.poll() is not None:
                raise SandboxError(f"coderl serve exited {proc.returncode}: {_tail(log.name)}")
            raise SandboxError(f"coderl serve: {why}")
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
        log.close()
        os.unlink(log.name)


def _tail(path: str) -> str:
    with open(path, "rb") as fh:
        return fh.read()[-2000:].decode("utf-8", "replace")
