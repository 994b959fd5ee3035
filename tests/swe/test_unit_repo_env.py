"""coderl.swe.environment on its own: environments keyed by what makes them, built once from the
sandbox's interpreter with the repository's paths importable, packages installed from a local
wheel directory with no index, and a failed build that leaves nothing behind. Also the cache
directory they live in (coderl.cache)."""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import pytest

from coderl.cache import default_cache_dir
from coderl.sandbox.pythonenv import sandbox_python
from coderl.swe.environment import EnvBuildError, build_env, env_key
from coderl.swe.task import EnvSpec


def make_wheel(folder: Path, name: str = "coderl_unit_tiny", version: str = "1.0", source: str = "VALUE = 42\n",
               requires: tuple[str, ...] = ()) -> Path:
    """A pure-Python wheel holding one module (``source``, by default ``VALUE = 42``) that requires
    ``requires``: enough for pip to install offline."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = f"{name}-{version}.dist-info"
    files = {f"{name}.py": source,
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                 + "".join(f"Requires-Dist: {r}\n" for r in requires),
             f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: coderl-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
        zf.writestr(f"{dist}/RECORD", "".join(f"{path},,\n" for path in [*files, f"{dist}/RECORD"]))
    return wheel


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("CODERL_CACHE", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"
    monkeypatch.setenv("CODERL_CACHE", "")  # empty counts as unset
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "coderl"


def test_env_key_is_what_makes_the_environment(tmp_path):
    spec = EnvSpec(requirements=("pytest",), pythonpath=(".",))
    key = env_key(spec)
    assert len(key) == 16 and int(key, 16) >= 0
    assert env_key(EnvSpec(requirements=("pytest",))) == key
    others = {env_key(EnvSpec(requirements=("pytest==8.0",))), env_key(EnvSpec(("pytest",), ("src",))),
              env_key(spec, tmp_path / "wheels"), env_key(EnvSpec())}
    assert key not in others and len(others) == 4


def test_an_environment_without_requirements(tmp_path):
    spec = EnvSpec(pythonpath=(".", "src", "lib/../pkg"))
    env = build_env(spec, tmp_path)
    assert env == tmp_path / "envs" / env_key(spec)
    config = (env / "pyvenv.cfg").read_text()
    assert f"command = {sandbox_python()} -m venv" in config  # the sandbox's interpreter, not the service's
    (site,) = env.glob("lib/python3*/site-packages")
    assert (site / "coderl_repo.pth").read_text() == "/repo\n/repo/src\n/repo/pkg\n"
    assert not (env / "bin" / "pip").exists()  # made without pip: nothing installs inside later
    ready = env / ".coderl-ready"
    assert json.loads(ready.read_text()) == spec.to_dict()
    made = ready.stat().st_mtime_ns
    assert build_env(spec, tmp_path) == env and ready.stat().st_mtime_ns == made  # built once


def test_requirements_from_a_local_wheel_directory(tmp_path):
    wheels = tmp_path / "wheels"
    make_wheel(wheels)
    env = build_env(EnvSpec(requirements=("coderl_unit_tiny==1.0",)), tmp_path / "cache", find_links=wheels)
    out = subprocess.run([str(env / "bin" / "python"), "-c", "import coderl_unit_tiny; print(coderl_unit_tiny.VALUE)"],
                         capture_output=True, text=True, timeout=60)
    assert out.stdout == "42\n", out.stderr


def test_a_failed_build_names_the_requirement_and_leaves_nothing(tmp_path):
    wheels = tmp_path / "wheels"
    make_wheel(wheels)
    spec = EnvSpec(requirements=("coderl-unit-missing==0.1",))
    with pytest.raises(EnvBuildError, match="cannot install coderl-unit-missing==0.1"):
        build_env(spec, tmp_path / "cache", find_links=wheels)
    assert not (tmp_path / "cache" / "envs" / env_key(spec, wheels)).exists()


def test_threads_resolving_one_spec_at_once_share_one_key(tmp_path):
    """A grader's concurrent gradings (and a builder's jobs) resolve the same new spec from threads
    of one process: each resolution works in a directory of its own (a pid-named one collided:
    FileExistsError, "Current directory does not exist")."""
    import sys
    from concurrent.futures import ThreadPoolExecutor

    from coderl.swe.environment import resolution_key

    wheels = tmp_path / "wheels"
    make_wheel(wheels)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    spec = EnvSpec(requirements=("coderl_unit_tiny==1.0",), python=python)
    with ThreadPoolExecutor(4) as pool:
        keys = list(pool.map(lambda _: resolution_key(spec, tmp_path / "cache", wheels), range(4)))
    assert len(set(keys)) == 1
    assert [p.name for p in (tmp_path / "cache" / "resolutions").iterdir() if not p.name.endswith(".json")] == []
