"""A table's exact pin against the project's own install requirement (coderl.swe.pin_overrides):
the project's requirement wins, as in SWE-bench's order (the pins installed, then ``pip install -e
.``), and the override is recorded (the environment, its resolution, the builder's report); a pin
the project does not exclude stays exact (issue 44 item 2).
Built for real, offline: a project whose build backend is in its tree, wheels from a local folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from coderl.data.swe_bench import pin_overrides_by_source
from coderl.swe import pin_overrides
from coderl.swe.environment import LOCK, PIN_OVERRIDES, build_env, env_key
from coderl.swe.store import RepoStore
from coderl.swe.task import EnvSpec
from tests.swe.test_unit_repo_env import make_wheel

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
_GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
# a PEP 517 backend of a few lines, in the tree (no build requirement to fetch); tiny_backend fills it
_BACKEND = '''import os, zipfile
META = "Metadata-Version: 2.1\\nName: {name}\\nVersion: 1.0\\n{requires}"
INFO = "{name}-1.0.dist-info"
def prepare_metadata_for_build_wheel(out, config_settings=None):
    os.makedirs(os.path.join(out, INFO))
    open(os.path.join(out, INFO, "METADATA"), "w").write(META)
    return INFO
prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel
def build_wheel(out, config_settings=None, metadata_directory=None):
    files = {{"{name}.pth": os.getcwd() + "\\n", INFO + "/METADATA": META,
             INFO + "/WHEEL": "Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}}
    name = "{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(out, name), "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
        zf.writestr(INFO + "/RECORD", "".join(p + ",,\\n" for p in [*files, INFO + "/RECORD"]))
    return name
build_editable = build_wheel
'''


def tiny_backend(name: str, requires: list[str]) -> str:
    """The source of a build backend (``tinyback``) for the project ``name`` requiring ``requires``."""
    return _BACKEND.format(name=name, requires="".join(f"Requires-Dist: {r}\\n" for r in requires))




def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=_GIT_ENV, check=True, capture_output=True, text=True).stdout


def tiny_project(tmp_path: Path, name: str, requires: list[str], files: dict[str, str] | None = None) -> tuple[Path, str]:
    """A mirror ``repos/acme__<name>`` whose project (``tiny_backend``) requires ``requires``, with
    ``files`` (path -> text) in its base commit too, snapshotted into ``tmp_path/cache``: (cache, source)."""
    mirror = tmp_path / "repos" / f"acme__{name}"
    mirror.mkdir(parents=True)
    for rel, text in (files or {}).items():
        (mirror / rel).parent.mkdir(parents=True, exist_ok=True)
        (mirror / rel).write_text(text)
    (mirror / "tinyback.py").write_text(tiny_backend(name, requires))
    (mirror / "pyproject.toml").write_text('[build-system]\nrequires = []\nbuild-backend = "tinyback"\n'
                                           'backend-path = ["."]\n')
    _git("init", "-q", "-b", "main", cwd=mirror)
    _git("add", "-A", cwd=mirror)
    _git("commit", "-q", "-m", "base", cwd=mirror)
    sha = _git("rev-parse", "HEAD", cwd=mirror).strip()
    cache = tmp_path / "cache"
    RepoStore(tmp_path / "repos", cache).snapshot(f"acme/{name}", sha)
    return cache, f"acme/{name}@{sha}"


def test_a_pin_the_project_excludes_gives_way_and_is_recorded(tmp_path):
    wheels = tmp_path / "wheels"
    for name in ("pin_low", "pin_free", "pin_old"):
        for version in ("1.0", "2.0"):
            make_wheel(wheels, name, version)
    # the project requires pin_low<2 (the table pins 2.0) and pin_free>=1 (the table pins 1.0, 2.0 is newer)
    cache, source = tiny_project(tmp_path, "tinyproj", ["pin_low<2", "pin_free>=1", "pin_old<1; python_version < '3'"])
    spec = EnvSpec(python=PYTHON, install=".", source=source,
                   requirements=("pin_low==2.0", "pin_free==1.0", "pin_old==2.0"))

    env = build_env(spec, cache, find_links=wheels)

    lock = (env / LOCK).read_text().replace("_", "-").lower().splitlines()
    assert "pin-low==1.0" in lock  # the project's pin_low<2 decided, not the table's 2.0
    assert "pin-free==1.0" in lock and "pin-old==2.0" in lock  # pins it allows, or does not constrain here: exact
    [override] = json.loads((env / PIN_OVERRIDES).read_text())
    assert override["pin"] == "pin_low==2.0" and override["project"] == "pin_low<2"
    memo = json.loads((cache / "resolutions" / f"{env_key(spec, wheels)}.json").read_text())
    assert memo["pin_overrides"] == [override]
    # `coderl data swe-bench`'s report names them per environment
    assert pin_overrides_by_source({spec.source: str(env), "other@x": "error: no build"}) == {spec.source: [override]}


def test_which_pins_the_project_overrides():
    declared = ["pyparsing<3.0.0,>=2.2.1", "numpy>=1.19", "six; python_version < '3'",
                "pytest<7; extra == 'test'", "Cycler!=0.11.0"]
    pins = ["pyparsing==3.0.9", "numpy==1.25.2", "six==1.16.0", "pytest==7.4.0", "cycler==0.11.0", "pandas==2.0",
            "fonttools>=4"]
    found = pin_overrides.overridden_pins(pins, declared, python="3.11", install=".")
    assert [o["pin"] for o in found] == ["pyparsing==3.0.9", "cycler==0.11.0"]
    with_extra = pin_overrides.overridden_pins(pins, declared, python="3.11", install=".[test]")
    assert [o["pin"] for o in with_extra] == ["pyparsing==3.0.9", "pytest==7.4.0", "cycler==0.11.0"]
