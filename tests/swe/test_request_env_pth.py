"""A request's environment may hold no code that ``site`` runs at the interpreter's start
(``environment.refuse_site_code``): a ``.pth`` ``import`` line or a ``sitecustomize`` module runs at
every start of the environment's interpreter, on the host too (uv's next call on the environment,
uv's own byte-code compilation), and a request names the wheels. Built for real, offline, from local
wheels that write a file when they run: refused for a request's spec before anything starts the
interpreter with them (the file never written), built for the operator's; setuptools' own
``distutils-precedence.pth`` passes when setuptools alone installs it."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from coderl.errors import UntrustedInput
from coderl.swe.environment import build_env, refuse_site_code, venv_identity
from coderl.swe.task import EnvSpec

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


def _wheel(folder: Path, name: str, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    dist = f"{name}-1.0.dist-info"
    files = {**files, f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
             f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: coderl-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    with zipfile.ZipFile(folder / f"{name}-1.0-py3-none-any.whl", "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
        zf.writestr(f"{dist}/RECORD", "".join(f"{p},,\n" for p in [*files, f"{dist}/RECORD"]))


@pytest.mark.parametrize("python", ["", PYTHON], ids=["pip", "uv"])
@pytest.mark.parametrize("what", ["pth", "sitecustomize", "pth-dir", "pyvenv.cfg"])
def test_a_requests_environment_with_start_up_code_is_refused(tmp_path, python, what):
    marker = tmp_path / "ran-on-the-host"
    code = f"import os; open({str(marker)!r}, 'w').write('ran')\n"
    files = {"pth": {"coderl_probe.pth": code}, "sitecustomize": {"sitecustomize.py": code},
             "pth-dir": {"coderl_probe.pth": "probe_dir\n", "probe_dir/sitecustomize.py": code},
             # a wheel's data files land in the environment's root: its pyvenv.cfg names the stdlib
             "pyvenv.cfg": {"coderl_probe-1.0.data/data/pyvenv.cfg": f"home = {tmp_path}/fake/bin\n"}}[what]
    _wheel(tmp_path / "wheels", "coderl_probe", files)
    spec = EnvSpec(requirements=("coderl_probe==1.0",), python=python, trusted=False)
    with pytest.raises(UntrustedInput, match="runs at the interpreter's start"):
        build_env(spec, tmp_path / "cache", find_links=tmp_path / "wheels")
    assert not marker.exists()
    if what == "pth" and not python:  # the operator's spec is built as it was
        trusted = build_env(EnvSpec(requirements=("coderl_probe==1.0",)), tmp_path / "cache",
                            find_links=tmp_path / "wheels")
        assert (next((trusted / "lib").glob("python3*/site-packages")) / "coderl_probe.pth").exists()


def test_setuptools_own_pth_passes_only_when_setuptools_alone_installs_it(tmp_path):
    dest = tmp_path / "env"
    site = dest / "lib" / f"python{PYTHON}" / "site-packages"
    site.mkdir(parents=True)
    (dest / "pyvenv.cfg").write_text("home = /usr/bin\n")
    identity = venv_identity(dest)
    (site / "distutils-precedence.pth").write_text("import os; __import__('_distutils_hack').add_shim()\n")
    (site / "setuptools-70.0.dist-info").mkdir()
    (site / "setuptools-70.0.dist-info" / "RECORD").write_text(
        "distutils-precedence.pth,,\n_distutils_hack/__init__.py,,\n")
    spec = EnvSpec(requirements=("setuptools",), trusted=False)
    refuse_site_code(spec, dest, identity)
    (site / "other-1.0.dist-info").mkdir()
    (site / "other-1.0.dist-info" / "RECORD").write_text("_distutils_hack/__init__.py,,\n")
    with pytest.raises(UntrustedInput, match="distutils-precedence.pth"):
        refuse_site_code(spec, dest, identity)
