"""The grader's host-side helpers that start an environment's interpreter (``locate_config``: the
pytest configuration of a task; ``pristine_cache.fill``: the protected test files compiled ahead)
run it in the build sandbox: starting it reads the environment's ``.pth`` files, whose ``import``
lines run, and an environment a request asked for holds wheels the request named. Here an
environment whose ``.pth`` writes a file: on the host the file appeared (before the box); boxed,
the helpers still answer and the host is untouched."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from coderl.swe import pristine_cache
from coderl.swe.grading_run import locate_config

PACKAGES = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", "py.py")


@pytest.fixture(scope="module")
def hostile_env(tmp_path_factory) -> tuple[Path, Path]:
    """(environment, the host path its .pth writes): a virtualenv of this interpreter with pytest
    copied in and a ``.pth`` whose import line writes a marker file."""
    root = tmp_path_factory.mktemp("hostile")
    env, marker = root / "env", root / "pwned"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    site = next((env / "lib").glob("python3*/site-packages"))
    ours = Path(sysconfig.get_paths()["purelib"])
    for name in PACKAGES:
        src = ours / name
        if src.is_dir():
            subprocess.run(["cp", "-a", str(src), str(site / name)], check=True)
        elif src.exists():
            subprocess.run(["cp", "-a", str(src), str(site)], check=True)
    (site / "zz_hostile.pth").write_text(f"import os; open({str(marker)!r}, 'w').write('ran on the host')\n")
    return env, marker


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "snap"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_a.py").write_text("def test_a():\n    assert 1\n")
    (repo / "setup.cfg").write_text("[tool:pytest]\ntestpaths = tests\n")
    return repo


def test_locating_the_configuration_runs_no_environment_code_on_the_host(hostile_env, tmp_path):
    env, marker = hostile_env
    repo = _repo(tmp_path)
    rootdir, inifile = locate_config(env, repo, ("tests/test_a.py",))
    assert (rootdir, inifile) == (".", "setup.cfg")
    assert not marker.exists()


def test_compiling_the_test_files_ahead_runs_no_environment_code_on_the_host(hostile_env, tmp_path):
    env, marker = hostile_env
    cache = tmp_path / "cache"
    cache.mkdir()
    pristine_cache.fill(env, cache, {"tests/test_a.py": b"def test_a():\n    assert 1\n"}, ["tests/test_a.py::test_a"])
    assert any(not p.name.startswith(".") for p in cache.iterdir())  # compiled, in the box
    assert not marker.exists()
