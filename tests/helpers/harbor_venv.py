"""The `harbor` package (Harbor's own ATIF trajectory models), in a Python 3.12 virtualenv of its
own under coderl's cache: harbor 0.26 needs Python 3.12 and brings litellm, supabase, openai and
about 120 packages (321 MB), none of which coderl's .venv (Python 3.11) should hold. Used to read
coderl's ATIF exports and Harbor job exports back with harbor itself (tests/records/test_atif_export.py,
tests/view/test_export.py).

``python -m tests.helpers.harbor_venv`` builds it (uv; about 15 s with uv's cache warm); under
CODERL_TEST_ALL=1 (CI) the first test that needs it builds it (``harbor_for_tests``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from coderl.cache import default_cache_dir
from tests.helpers.require import CI, require

HARBOR_VERSION = "0.26.0"  # the version the export is validated against
READ_BACK = Path(__file__).with_name("atif_read_back.py")
READ_BACK_JOB = Path(__file__).with_name("harbor_job_read_back.py")


def harbor_venv() -> Path:
    """``$CODERL_HARBOR_VENV``, else ``<coderl cache>/harbor-<version>``."""
    return Path(os.environ.get("CODERL_HARBOR_VENV") or default_cache_dir() / f"harbor-{HARBOR_VERSION}")


def harbor_python() -> Path | None:
    """The venv's interpreter when it has harbor ``HARBOR_VERSION`` importable, else None."""
    python = harbor_venv() / "bin" / "python"
    if not python.exists():
        return None
    probe = subprocess.run([str(python), "-c", "import harbor.models.trajectories; from importlib.metadata import "
                            "version; print(version('harbor'))"], capture_output=True, text=True, timeout=120)
    return python if probe.returncode == 0 and probe.stdout.strip() == HARBOR_VERSION else None


def build_harbor_venv() -> Path:
    """Make the venv (idempotent) with a Python 3.12 found on this machine; its interpreter."""
    from coderl.swe.environment import uv_binary
    from coderl.swe.interpreters import find_python

    found = harbor_python()
    if found is not None:
        return found
    venv = harbor_venv()
    subprocess.run([uv_binary(), "venv", "-q", "--clear", "-p", find_python("3.12"), str(venv)], check=True, timeout=300)
    subprocess.run([uv_binary(), "pip", "install", "-q", "-p", str(venv / "bin" / "python"), f"harbor=={HARBOR_VERSION}"],
                   check=True, timeout=900)
    python = harbor_python()
    if python is None:
        raise RuntimeError(f"harbor {HARBOR_VERSION} is not importable in {venv} after installing it")
    return python


def harbor_for_tests() -> Path:
    """The venv's interpreter for a test: built here under CODERL_TEST_ALL=1 (CI provides it this way),
    else a skip saying how to build it (tests/helpers/require.py)."""
    if CI:
        return build_harbor_venv()
    python = harbor_python()
    require(python is not None, f"no harbor {HARBOR_VERSION} venv at {harbor_venv()} (Python 3.12): build it with "
            "`python -m tests.helpers.harbor_venv` (CODERL_TEST_ALL=1 builds it)")
    assert python is not None
    return python


def read_back(python: Path, paths: list[Path]) -> list[dict]:
    """Harbor's verdict on each exported file (tests/helpers/atif_read_back.py, run by harbor's Python)."""
    import json

    proc = subprocess.run([str(python), str(READ_BACK), *map(str, paths)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines()]


def read_back_job(python: Path, jobs_dir: Path) -> dict:
    """Harbor's view of a jobs folder from `coderl export atif --layout harbor`
    (tests/helpers/harbor_job_read_back.py, run by harbor's Python)."""
    import json

    proc = subprocess.run([str(python), str(READ_BACK_JOB), str(jobs_dir)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


if __name__ == "__main__":
    print(build_harbor_venv())
