"""A compiled project's environment (issue 45 item 3, coderl.swe.build_products): a real C extension
built by the environment's editable install, kept with the environment, laid into the snapshot the
sessions see and imported there from /repo; never part of a captured diff; and the environment's
key follows the compiled sources."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coderl.errors import EnvBuildError
from coderl.sandbox.session import SessionHost, SessionLimits
from coderl.swe import build_products
from coderl.swe.environment import build_env
from coderl.swe.store import RepoStore
from coderl.swe.task import EnvSpec

LIMITS = SessionLimits(episode_s=120, exec_s=60, memory_mb=512, max_processes=64, output_kb=64, disk_mb=32)
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
_GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
SETUP = ('from setuptools import Extension, setup\n'
         'setup(name="tinyext", version="1.0", packages=["tinyext"],\n'
         '      ext_modules=[Extension("tinyext._speed", ["tinyext/_speed.c"])])\n')
SPEED_C = ('#include <Python.h>\n'
           'static PyObject *answer(PyObject *self, PyObject *args) { return PyLong_FromLong(%d); }\n'
           'static PyMethodDef methods[] = {{"answer", answer, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};\n'
           'static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_speed", NULL, -1, methods};\n'
           'PyMODINIT_FUNC PyInit__speed(void) { return PyModule_Create(&mod); }\n')


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=_GIT_ENV, check=True, capture_output=True, text=True).stdout


# built in an isolated build environment (astropy, matplotlib), or against the environment's own
# packages, installed first (scikit-learn: SWE-bench's --no-build-isolation), with the build tools
# (setuptools' editable build needs wheel: scikit-learn 1.3's tables name setuptools only)
BUILDS = {"isolated": EnvSpec(python=PYTHON, install="."),
          "no-build-isolation": EnvSpec(python=PYTHON, install=".", build_env=(("UV_NO_BUILD_ISOLATION", "1"),))}


@pytest.fixture(scope="module", params=list(BUILDS))
def built(tmp_path_factory, request) -> tuple[Path, Path, str]:
    """(snapshot, environment, base sha) of a one-extension project, its environment built for real."""
    root = tmp_path_factory.mktemp("compiled")
    mirror = root / "repos" / "acme__tinyext"
    (mirror / "tinyext").mkdir(parents=True)
    (mirror / "setup.py").write_text(SETUP)
    (mirror / "tinyext" / "__init__.py").write_text("from tinyext._speed import answer\n")
    (mirror / "tinyext" / "_speed.c").write_text(SPEED_C % 42)
    (mirror / ".gitignore").write_text("build/\n*.egg-info/\n")
    _git("init", "-q", "-b", "main", cwd=mirror)
    _git("add", "-A", cwd=mirror)
    _git("commit", "-q", "-m", "base", cwd=mirror)
    sha = _git("rev-parse", "HEAD", cwd=mirror).strip()
    cache = root / "cache"
    snapshot = RepoStore(root / "repos", cache).snapshot("acme/tinyext", sha)
    env = build_env(dataclasses.replace(BUILDS[request.param], source=f"acme/tinyext@{sha}"), cache)
    return snapshot, env, sha


@pytest.mark.slow  # a real editable build of a C extension (uv, setuptools, gcc): ~20 s each
def test_the_extension_is_kept_laid_into_the_snapshot_and_imported_from_repo(built):
    snapshot, env, _ = built
    products = json.loads((env / build_products.MANIFEST).read_text())
    [so] = [p for p in products if p.endswith(".so")]
    assert so.startswith("tinyext/_speed.") and (snapshot / so).is_file()
    assert hashlib.sha256((snapshot / so).read_bytes()).hexdigest() == products[so]
    assert f"/{so}" in (snapshot / ".git" / "info" / "exclude").read_text().splitlines()
    assert _git("status", "--porcelain", "--untracked-files=all", cwd=snapshot) == ""  # no new file to git

    async def body() -> tuple[str, str, str]:
        async with SessionHost() as host:
            session = await host.open(snapshot, env_dir=env, limits=LIMITS)
            try:
                imported = await session.exec("python -c 'import tinyext, tinyext._speed as s; "
                                              "print(tinyext.answer(), s.__file__)'")
                # an episode that replaces the built module: never part of its diff
                await session.exec(f"cp /bin/true /repo/{so} && echo x >> /repo/tinyext/__init__.py")
                status = await session.exec("git status --porcelain")
                diff = await session.finish()
            finally:
                await session.close()
            return imported.stdout, status.stdout, diff

    imported, status, diff = asyncio.run(body())
    assert imported.split() == ["42", f"/repo/{so}"]
    assert " M tinyext/__init__.py" in status.splitlines() and "_speed" not in status
    assert [line for line in diff.splitlines() if line.startswith("diff --git")] == \
        ["diff --git a/tinyext/__init__.py b/tinyext/__init__.py"]


def test_a_snapshot_holding_another_build_is_refused(tmp_path):
    """Two environments whose builds differ never lay their modules into one snapshot: the second
    is refused, since its tests would import the first's."""
    env, so = tmp_path / "env", "pkg/_k.cpython-311-x86_64-linux-gnu.so"
    (env / build_products.PRODUCTS / "pkg").mkdir(parents=True)
    (env / build_products.PRODUCTS / so).write_bytes(b"this build")
    (env / build_products.MANIFEST).write_text(json.dumps({so: hashlib.sha256(b"this build").hexdigest()}))
    snapshot = tmp_path / "snap"
    (snapshot / ".git").mkdir(parents=True)
    assert build_products.place(snapshot, env) == 1 and (snapshot / so).read_bytes() == b"this build"
    assert (snapshot / ".git" / "info" / "exclude").read_text() == f"/{so}\n"
    other = tmp_path / "snap2"
    (other / ".git").mkdir(parents=True)
    (other / "pkg").mkdir()
    (other / so).write_bytes(b"another build")
    with pytest.raises(EnvBuildError, match="already holds .* remove .* from the cache"):
        build_products.place(other, env)


def test_the_compiled_sources_decide_the_digest(tmp_path):
    tree = tmp_path / "t"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "a.py").write_text("x = 1\n")
    assert build_products.compiled_sources_digest(tree) == ""  # a pure-Python tree: its key is unchanged
    (tree / "pkg" / "_k.pyx").write_text("def f(): return 1\n")
    first = build_products.compiled_sources_digest(tree)
    (tree / "pkg" / "a.py").write_text("x = 2\n")
    assert build_products.compiled_sources_digest(tree) == first  # a Python change shares the build
    (tree / "pkg" / "_k.pyx").write_text("def f(): return 2\n")
    changed = build_products.compiled_sources_digest(tree)
    assert changed not in ("", first)
    (tree / "build").mkdir()
    (tree / "build" / "gen.c").write_text("int x;\n")  # the build's scratch directory is not a source
    assert build_products.compiled_sources_digest(tree) == changed
    assert "build/gen.c" not in build_products.tree_files(tree)


def test_the_system_libraries_compiled_projects_need_are_installed_and_named(tmp_path):
    """matplotlib's build, told by the overlay to use the host's FreeType and qhull (no download),
    needs them: setup.sh installs docker/swe-build-apt.txt, and a build that misses a header says so."""
    from coderl.swe import environment

    root = Path(__file__).resolve().parents[2]
    listed = {line.split("#")[0].strip() for line in (root / environment.SYSTEM_BUILD_PACKAGES).read_text().splitlines()}
    assert {"g++", "pkg-config", "libfreetype-dev", "libqhull-dev"} <= listed
    assert environment.SYSTEM_BUILD_PACKAGES in (root / "scripts" / "setup.sh").read_text()
    failed = subprocess.CompletedProcess([], 1, "", "error: Command 'g++' failed\n  hint: This error likely indicates "
                                         "that you need to install a library that provides `libqhull_r/qhull_ra.h`\n")
    with pytest.raises(EnvBuildError, match="swe-build-apt.txt"):
        environment._check(failed, "install the environment")
    with pytest.raises(EnvBuildError) as other:
        environment._check(subprocess.CompletedProcess([], 1, "", "error: no matching distribution\n"), "resolve")
    assert "swe-build-apt" not in str(other.value)
