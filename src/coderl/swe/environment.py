"""Per-task Python environments: one virtualenv per distinct ``EnvSpec``, built once, shared read-only.

Built outside the boundary, from the task's declared requirements only (task data, trusted like
the images SWE-bench builds; nothing an agent wrote runs here): ``python -m venv`` of the sandbox's
interpreter, ``pip install`` of the requirements (from ``find_links`` with no index when given:
training machines have no network), and a ``.pth`` file that puts the repository's
``pythonpath`` entries (under ``/repo``, where every episode sees its work tree) on ``sys.path``:
what ``pip install -e .`` gives, without running the repository's setup code. The venv lives at
the same path on the host and in the sandbox (mounted read-only), so its absolute paths hold.

An environment is keyed by a hash of (interpreter, requirements, pythonpath, find_links), built
under a lock, and marked complete last; a failed build is removed and raises ``EnvBuildError``
with pip's own last lines.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from coderl.errors import EnvBuildError
from coderl.sandbox.pythonenv import sandbox_python
from coderl.sandbox.session import REPO
from coderl.swe.store import file_lock
from coderl.swe.task import EnvSpec

_READY = ".coderl-ready"
_BUILD_TIMEOUT_S = 1800


def env_key(spec: EnvSpec, find_links: Path | None = None) -> str:
    blob = json.dumps([sandbox_python(), spec.to_dict(), str(find_links or "")], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def build_env(spec: EnvSpec, cache_dir: Path, *, find_links: Path | None = None) -> Path:
    """The ready virtualenv for ``spec`` (built now if it is not there yet)."""
    dest = cache_dir / "envs" / env_key(spec, find_links)
    if (dest / _READY).is_file():
        return dest
    with file_lock(dest):
        if (dest / _READY).is_file():
            return dest
        shutil.rmtree(dest, ignore_errors=True)
        try:
            _run([sandbox_python(), "-m", "venv", "--without-pip", str(dest)], "create the virtualenv")
            if spec.requirements:
                index = ["--no-index", "--find-links", str(find_links)] if find_links else []
                _run([sys.executable, "-m", "pip", "--python", str(dest / "bin" / "python"), "install", "-q",
                      "--disable-pip-version-check", "--no-input", *index, *spec.requirements],
                     f"install {' '.join(spec.requirements)}")
            site = site_packages(dest)
            (site / "coderl_repo.pth").write_text(
                "".join(os.path.normpath(os.path.join(REPO, p)) + "\n" for p in spec.pythonpath))
            (dest / _READY).write_text(json.dumps(spec.to_dict()))
        except BaseException:
            shutil.rmtree(dest, ignore_errors=True)
            raise
    return dest


def site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3*/site-packages"))
    if not found:
        raise EnvBuildError(f"{venv} has no site-packages directory")
    return found[0]


def _run(argv: list[str], what: str) -> None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise EnvBuildError(f"cannot {what}: no result after {_BUILD_TIMEOUT_S} s") from exc
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise EnvBuildError(f"cannot {what}: {' / '.join(tail) or f'exit {proc.returncode}'}")
