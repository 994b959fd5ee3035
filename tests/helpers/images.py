"""Task images for the image-backed session, grading and Harbor tests, built here with podman FROM the
local bases scripts/build_images.sh makes (no registry), once: a tag names the hash of what built it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from coderl.swe.task import RepoTask

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


SWE_LITE = Path("/work/shared/data/swe-bench-lite")
FLASK_WHEELS = ("asgiref==3.6.0", "attrs==22.2.0", "blinker==1.5", "exceptiongroup==1.1.0", "iniconfig==2.0.0",
                "packaging==23.0", "pluggy==1.0.0", "pytest==7.2.1", "python-dotenv==0.21.1", "tomli==2.0.1",
                "click==8.1.3", "itsdangerous==2.1.2", "Jinja2==3.1.2", "MarkupSafe==2.1.2", "Werkzeug==2.3.7")


def swe_dockerfile(importable: str = "/testbed/src") -> str:
    """The Dockerfile of a SWE-bench-shaped image whose repository is importable from ``importable``."""
    return f"""FROM {PYTHON}
# the task's environment inside the image, as SWE-bench's sweb.eval images have it: its pinned test
# requirements installed, the repository importable from /testbed (an editable install's .pth)
COPY wheels /tmp/wheels
RUN pip install -q --no-index --find-links /tmp/wheels /tmp/wheels/*.whl && rm -rf /tmp/wheels \\
 && echo {importable} > "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/testbed.pth"
COPY testbed /testbed
WORKDIR /testbed
"""


def flask_wheels() -> Path:
    """flask 2.3's pinned test requirements (pytest 7.2.1 among them) as wheels from PyPI, downloaded
    once into ~/.cache/coderl-test-wheels."""
    wheels = Path.home() / ".cache" / "coderl-test-wheels" / "flask-2.3"
    if len(list(wheels.glob("*.whl"))) < len(FLASK_WHEELS):
        wheels.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "--python-version", "3.11", "--platform", "manylinux2014_x86_64", "--implementation", "cp",
                        "-d", str(wheels), *FLASK_WHEELS], check=True, timeout=900)
    return wheels


def swe_lite_task(instance_id: str) -> RepoTask:
    """The task of one SWE-bench Lite instance from the offline copy (the row its image is built for)."""
    rows = json.loads((SWE_LITE / "rows.json").read_text())
    return RepoTask.from_row(next(r for r in rows if r["instance_id"] == instance_id))


def swe_bench_image(instance_id: str, context: Path) -> str:
    """A SWE-bench-shaped image of one SWE-bench Lite instance (flask 2.3 rows only: their pinned test
    requirements as wheels from PyPI, cached under ~/.cache/coderl-test-wheels): the repository's tree
    at the base commit in /testbed (``git archive`` of the instance's tag in the offline bundle)."""
    repo = instance_id.rsplit("-", 1)[0]
    bundle = SWE_LITE / "repos" / f"{repo}.bundle"
    mirror = context / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(bundle), str(mirror)], check=True, timeout=600)
    (context / "image" / "testbed").mkdir(parents=True)
    archive = subprocess.run(["git", f"--git-dir={mirror}", "archive", instance_id], capture_output=True, check=True,
                             timeout=600).stdout
    subprocess.run(["tar", "-x", "-C", str(context / "image" / "testbed")], input=archive, check=True, timeout=600)
    shutil.copytree(flask_wheels(), context / "image" / "wheels")
    return built_image(f"sweb.eval.{instance_id.replace('__', '_1776_')}", context / "image", swe_dockerfile())
