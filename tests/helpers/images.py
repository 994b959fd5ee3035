"""Task images for the image-backed session, grading and Harbor tests, built here with podman FROM the
local bases scripts/build_images.sh makes (no registry), once: a tag names the hash of what built it."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEBIAN = "localhost/coderl-base/debian:bookworm"
PYTHON = "localhost/coderl-base/python:3.11-bookworm"


def engine_env() -> None:
    """podman as scripts/container_engine.sh sets it up (runc, the ulimits this host allows)."""
    os.environ.setdefault("CONTAINERS_CONF", str(ROOT / "docker" / "podman-containers.conf"))
    os.environ.setdefault("CODERL_IMAGE_PULL", "never")


def _exists(tag: str) -> bool:
    return subprocess.run(["podman", "image", "exists", tag], capture_output=True).returncode == 0


def local_bases() -> None:
    """The local Debian and Python bases (built by the project's script when missing: minutes once)."""
    if not shutil.which("podman"):
        pytest.fail("no podman: run scripts/install_podman.sh (CI's .ci/run does)")
    engine_env()
    if not (_exists(DEBIAN) and _exists(PYTHON)):
        done = subprocess.run(["bash", str(ROOT / "scripts" / "build_images.sh"), "--local-base", "bases"],
                              capture_output=True, text=True, timeout=3600, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-3000:]


def built_image(name: str, context: Path, dockerfile: str | None = None) -> str:
    """``localhost/coderl-test/NAME:<hash of the context>``, built from ``context`` (its Dockerfile,
    or ``dockerfile``'s text) unless an image of that tag is there already."""
    local_bases()
    if dockerfile is not None:
        (context / "Dockerfile").write_text(dockerfile)
    digest = hashlib.sha256()
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(context)).encode() + b"\0" + path.read_bytes())
    tag = f"localhost/coderl-test/{name}:{digest.hexdigest()[:12]}"
    if not _exists(tag):
        done = subprocess.run(["podman", "build", "--pull=never", "-q", "-t", tag, str(context)],
                              capture_output=True, text=True, timeout=3600)
        assert done.returncode == 0, done.stderr[-3000:]
    return tag
