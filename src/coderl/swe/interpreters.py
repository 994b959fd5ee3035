"""Which CPython runs a task environment of Python ``X.Y``: one already on this machine, never one
downloaded behind the user's back (training machines have no network).

Looked for, in order: ``pythonX.Y`` on PATH (a pyenv shim is asked for its real executable), the
pyenv versions (``$PYENV_ROOT`` or ``~/.pyenv``), and the interpreters uv installed
(``$UV_PYTHON_INSTALL_DIR`` or ``~/.local/share/uv/python``); of several X.Y.Z, the newest patch
release. Each candidate is run once to check that it is the version it claims and that it works.

An environment's interpreter lives outside it (the virtualenv links to it), so the sandbox binds its
install tree read-only beside the environment (``coderl.sandbox.pythonenv.venv_base_prefix``).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

from coderl.errors import EnvBuildError

_VERSION = re.compile(r"^3\.\d{1,2}$")
# first release of each CPython minor version (python.org): no package uploaded before it was made
# for it, so an environment of that Python is never resolved as of an earlier date
PYTHON_RELEASED = {"3.5": "2015-09-13", "3.6": "2016-12-23", "3.7": "2018-06-27", "3.8": "2019-10-14",
                   "3.9": "2020-10-05", "3.10": "2021-10-04", "3.11": "2022-10-24", "3.12": "2023-10-02",
                   "3.13": "2024-10-07"}
_PROBE = "import sys; print(sys.executable); print('%d.%d' % sys.version_info[:2])"


@functools.cache
def find_python(version: str) -> str:
    """The real executable of a working CPython ``version`` (``X.Y``) on this machine."""
    if not _VERSION.match(version):
        raise EnvBuildError(f"python version {version!r} is not of the form 3.Y")
    for candidate in _candidates(version):
        found = _probe(candidate, version)
        if found:
            return found
    raise EnvBuildError(f"no Python {version} on this machine: install it (`uv python install {version}` or "
                        f"`pyenv install {version}`) or put python{version} on PATH")


def _candidates(version: str) -> list[str]:
    out = []
    on_path = shutil.which(f"python{version}")
    if on_path:
        out.append(on_path)
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    uv = Path(os.environ.get("UV_PYTHON_INSTALL_DIR") or Path.home() / ".local" / "share" / "uv" / "python")
    for root, pattern in ((pyenv, f"{version}.*"), (uv, f"cpython-{version}.*")):
        dirs = [d for d in root.glob(pattern) if re.search(rf"{re.escape(version)}\.(\d+)", d.name)]
        dirs.sort(key=lambda d: int(re.search(rf"{re.escape(version)}\.(\d+)", d.name).group(1)), reverse=True)
        out += [str(d / "bin" / f"python{version}") for d in dirs]
    return out


def _probe(path: str, version: str) -> str | None:
    try:
        proc = subprocess.run([path, "-I", "-c", _PROBE], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = proc.stdout.split()
    if proc.returncode != 0 or len(lines) != 2 or lines[1] != version:
        return None
    return os.path.realpath(lines[0])
