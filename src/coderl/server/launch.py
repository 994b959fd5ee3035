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
import time
from collections.abc import Iterator

import httpx

from coderl.errors import SandboxError


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_service(*, slots: int = 2, timeout_s: float = 120.0, **flags: object) -> Iterator[str]:
    """Yields the base URL once /readyz answers; flags become ``--name value`` options."""
    port = free_port()
    argv = [sys.executable, "-m", "coderl.cli", "serve", "--port", str(port), "--slots", str(slots)]
    for name, value in flags.items():
        argv += [f"--{name.replace('_', '-')}", str(value)]
    log = tempfile.NamedTemporaryFile(prefix="coderl-serve-", suffix=".log", delete=False)  # noqa: SIM115
    # A file, not a pipe: an unread pipe fills up and blocks the service's logging.
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise SandboxError(f"coderl serve exited {proc.returncode}: {_tail(log.name)}")
            try:
                if httpx.get(url + "/readyz", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SandboxError(f"coderl serve did not become ready in {timeout_s:g} s")
            time.sleep(0.2)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
        os.unlink(log.name)


def _tail(path: str) -> str:
    with open(path, "rb") as fh:
        return fh.read()[-2000:].decode("utf-8", "replace")
