"""The container engine for the image tests: build with the project's own script, run containers
the way docs/deploy.md says, remove them by name afterwards."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
VERSION = re.search(r'^version = "(.+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)


def engine() -> str:
    """docker when its daemon answers, else podman; the test fails (not skips) without either:
    CI installs podman (scripts/install_podman.sh)."""
    if shutil.which("docker") and subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0:
        return "docker"
    if shutil.which("podman"):
        return "podman"
    pytest.fail("no container engine: run scripts/install_podman.sh (CI's .ci/run does)")


def engine_env() -> dict[str, str]:
    """The environment scripts/container_engine.sh sets for podman."""
    return {"CONTAINERS_CONF": str(ROOT / "docker" / "podman-containers.conf"), **os.environ}


def run(*argv: str, timeout: float = 120, check: bool = False) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, env=engine_env())
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} -> {done.returncode}: {done.stderr[-3000:]}")
    return done


def build(target: str) -> dict[str, str]:
    """scripts/build_images.sh --local-base TARGET; {tag: 'size  built in Ns'} from what it prints."""
    done = subprocess.run(["bash", str(ROOT / "scripts" / "build_images.sh"), "--local-base", target],
                          capture_output=True, text=True, timeout=3600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-4000:]
    return {line.split()[0]: line.split(None, 1)[1].strip() for line in done.stdout.splitlines() if line.strip()}


def deploy_options() -> list[str]:
    """SANDBOX_OPTS as docs/deploy.md gives it: the test runs what users are told to run."""
    found = re.search(r'^SANDBOX_OPTS="([^"]+)"', (ROOT / "docs" / "deploy.md").read_text(), re.M)
    assert found, "docs/deploy.md lost its SANDBOX_OPTS line"
    return found.group(1).split()


@contextmanager
def container(name: str, *argv: str) -> Iterator[str]:
    """`ENGINE run -d --name NAME ARGV...`; removed by name however the test ends."""
    tool = engine()
    run(tool, "rm", "-f", name)
    try:
        run(tool, "run", "-d", "--name", name, *argv, check=True)
        yield name
    finally:
        run(tool, "rm", "-f", name, timeout=120)


def wait_ready(url: str, name: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        state = run(engine(), "inspect", "--format", "{{.State.Running}}", name).stdout.strip()
        if state != "true":
            raise AssertionError(f"container {name} exited: {run(engine(), 'logs', name).stderr[-3000:]}")
        time.sleep(1)
    raise AssertionError(f"{url} not ready in {timeout}s: {run(engine(), 'logs', name).stderr[-3000:]}")
