"""Environments inferred from a repository no table covers (coderl.swe.env_infer): read from its
packaging metadata, never by running it; refused with the reason when it builds code of its own or
declares nothing. The slow test builds one and runs its suite in the sandbox."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from coderl.errors import EnvBuildError
from coderl.swe.env_infer import infer_env, pick_python, validate_env
from coderl.swe.environment import build_env
from coderl.swe.interpreters import find_python
from tests.helpers.require import needs

PYPROJECT = """[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "tiny"
version = "0.1"
requires-python = ">=3.8"
classifiers = ["Programming Language :: Python :: 3.9", "Programming Language :: Python :: 3.10"]
dependencies = []

[project.optional-dependencies]
tests = ["pytest"]
docs = ["sphinx"]
"""


def project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def has_python(version: str) -> bool:
    try:
        find_python(version)
        return True
    except EnvBuildError:
        return False


@needs(has_python("3.10"), "needs a Python 3.10 on the machine")
def test_a_pyproject_project_with_a_tests_extra(tmp_path):
    tree = project(tmp_path, {"pyproject.toml": PYPROJECT, "requirements-test.txt": "hypothesis\n",
                              "docs/requirements.txt": "sphinx\n",
                              "tox.ini": "[testenv]\ndeps =\n    pytest-mock\n    -rrequirements-test.txt\n"})
    spec = infer_env(tree, source="o/tiny@" + "0" * 40, resolved_at="2023-06-01T00:00:00Z")
    assert spec.python == "3.10"  # the newest the classifiers name, released half a year before the date
    assert spec.install == ".[tests]" and spec.resolved_at == "2023-06-01T00:00:00Z"
    assert "pytest" in spec.requirements and "pytest-mock" in spec.requirements
    assert spec.requirement_files == ("requirements-test.txt",)


def test_the_date_bounds_the_python():
    assert pick_python(">=3.6", (), "2020-03-01T00:00:00Z") in ("3.8", "3.7", "3.6")  # 3.9 came out after
    with pytest.raises(EnvBuildError, match="no Python on this machine fits"):
        pick_python(">=3.99", (), "2023-01-01T00:00:00Z")


def test_what_cannot_be_inferred_is_refused_with_the_reason(tmp_path):
    with pytest.raises(EnvBuildError, match="no pyproject.toml, setup.cfg or setup.py"):
        infer_env(project(tmp_path / "a", {"x.py": ""}), source="", resolved_at="2023-01-01T00:00:00Z")
    setup = "from setuptools import setup, Extension\nsetup(name='c', ext_modules=[Extension('c', ['c.c'])])\n"
    with pytest.raises(EnvBuildError, match="builds code of its own.*ext_modules"):
        infer_env(project(tmp_path / "b", {"setup.py": setup}), source="", resolved_at="2023-01-01T00:00:00Z")
    optional = ("import os\nfrom setuptools import setup\nEXT = None\nif os.getenv('X'):\n    EXT = ['m.py']\n"
                "setup(name='o', ext_modules=EXT)\n")  # an optional compile (charset_normalizer's mypyc)
    assert infer_env(project(tmp_path / "d", {"setup.py": optional}), source="", resolved_at="2023-06-01T00:00:00Z")
    with pytest.raises(EnvBuildError, match="builds code of its own.*Cython"):
        infer_env(project(tmp_path / "c", {"setup.py": "from setuptools import setup\nsetup(name='p')\n",
                                           "pkg/fast.pyx": ""}), source="", resolved_at="2023-01-01T00:00:00Z")


@pytest.mark.slow
@needs(has_python("3.10"), "needs a Python 3.10 on the machine")
@pytest.mark.timeout(600)
def test_inferred_built_and_validated_in_the_sandbox(tmp_path):
    """A made project (one test passing, one failing) inferred, built by uv as of its date, and its
    suite run at the base commit in a session sandbox: collection works, half the tests pass."""
    from coderl.swe.store import snapshot_path

    repo = "o/tiny"
    work = project(tmp_path / "work", {"pyproject.toml": PYPROJECT, "tiny/__init__.py": "def one():\n    return 1\n",
                                      "tests/test_tiny.py": "from tiny import one\n\ndef test_one():\n    assert one() == 1\n\n"
                                                            "def test_two():\n    assert one() == 2\n"})
    cache = tmp_path / "cache"
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=work, check=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True, text=True).stdout.strip()
    snapshot = snapshot_path(cache, repo, commit)
    snapshot.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", str(work), str(snapshot)], check=True)
    spec = infer_env(snapshot, source=f"{repo}@{commit}", resolved_at="2023-06-01T00:00:00Z")
    env = build_env(spec, cache)
    checked = asyncio.run(validate_env(snapshot, env, timeout_s=300))
    assert checked["collects"] and checked["collected"] == 2, checked
    assert checked["counts"] == {"passed": 1, "failed": 1} and checked["pass_share"] == 0.5, checked
