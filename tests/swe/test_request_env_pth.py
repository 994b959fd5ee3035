"""A request's environment may hold no ``.pth`` file that runs code (``environment.refuse_running_pth``):
``site`` runs its ``import`` lines at every start of the environment's interpreter, on the host too
(uv's and pip's next call on the environment start it), and a request names the wheels. Built for
real, offline, from a local wheel whose ``.pth`` writes a file: refused for a request's spec before
anything starts the interpreter again (the file never written), built for the operator's."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from coderl.errors import UntrustedInput
from coderl.swe.environment import build_env
from coderl.swe.task import EnvSpec


def _wheel_with_running_pth(folder: Path, marker: Path) -> None:
    folder.mkdir(parents=True)
    dist = "coderl_pth_probe-1.0.dist-info"
    files = {"coderl_pth_probe.pth": f"import os; open({str(marker)!r}, 'w').write('ran')\n",
             f"{dist}/METADATA": "Metadata-Version: 2.1\nName: coderl_pth_probe\nVersion: 1.0\n",
             f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: coderl-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    with zipfile.ZipFile(folder / "coderl_pth_probe-1.0-py3-none-any.whl", "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
        zf.writestr(f"{dist}/RECORD", "".join(f"{p},,\n" for p in [*files, f"{dist}/RECORD"]))


def test_a_requests_environment_with_a_running_pth_is_refused(tmp_path):
    marker = tmp_path / "ran-on-the-host"
    _wheel_with_running_pth(tmp_path / "wheels", marker)
    spec = EnvSpec(requirements=("coderl_pth_probe==1.0",), trusted=False)
    with pytest.raises(UntrustedInput, match=r"\.pth file that runs code"):
        build_env(spec, tmp_path / "cache", find_links=tmp_path / "wheels")
    assert not marker.exists()
    trusted = build_env(EnvSpec(requirements=("coderl_pth_probe==1.0",)), tmp_path / "cache",
                        find_links=tmp_path / "wheels")
    assert (next((trusted / "lib").glob("python3*/site-packages")) / "coderl_pth_probe.pth").exists()
