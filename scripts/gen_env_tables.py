"""Generate src/coderl/swe/env_tables.json from SWE-bench's own specifications.

Source: the ``swebench`` package on PyPI (MIT), ``swebench.harness.constants.python``
(``MAP_REPO_VERSION_TO_SPECS_PY`` and ``MAP_REPO_TO_REQS_PATHS``). Version 4.1.0 is the last
release that ships them (5.x moved the specifications out of the package). Nothing of it is
kept in the project: download the wheel into a scratch directory and point this script at it:

    pip download --no-deps swebench==4.1.0 -d /tmp/swebench
    python scripts/gen_env_tables.py /tmp/swebench/swebench-4.1.0-py3-none-any.whl

Every (repo, version) SWE-bench specifies becomes one entry, translated mechanically to an
``EnvSpec``'s fields (``coderl.swe.env_tables`` documents each translation). What cannot run on
coderl's host build (system packages: ``apt-get``, locale generation, conda's environment.yml) is
listed in the entry's ``not_run`` with the step itself, never silently dropped. coderl's own
changes are not here: they are ``env_overlay.json``, applied when a row's spec is made.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shlex
import tempfile
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "coderl" / "swe" / "env_tables.json"
# steps that need the system (root, a package manager, /etc): coderl builds as a user on the host
_SYSTEM_STEP = re.compile(r"\b(apt-get|apt|locale-gen|yum|conda)\b|/etc/")


def _install_target(command: str) -> str:
    """``python -m pip install -e .[test] --verbose`` -> ``.[test]``; ``python setup.py install`` -> ``.``."""
    if "setup.py" in command:
        return "."
    words = [w for w in shlex.split(command) if not w.startswith("-") and w not in ("python", "pip", "install")]
    targets = [w for w in words if w.startswith(".")]
    return targets[-1] if targets else "."


def translate(repo: str, spec: dict, reqs_paths: dict[str, list[str]]) -> dict:
    """One SWE-bench spec as a table entry (EnvSpec fields, plus what coderl does not run and why)."""
    entry: dict = {"python": spec["python"], "requirements": list(spec.get("pip_packages", [])),
                   "pre_install": [], "install": _install_target(spec["install"]) if spec.get("install") else ""}
    not_run = []
    packages = spec.get("packages", "")
    if packages == "requirements.txt":
        # SWE-bench reads the first of these that the environment's commit has
        entry["requirement_files_first_of"] = reqs_paths.get(repo, [])
    elif packages == "environment.yml":
        not_run.append("packages: environment.yml (a conda environment; its pip_packages are installed)")
    elif packages:
        # conda names, the same on PyPI; one that pip_packages pins is left to the pin (SWE-bench's pip step
        # installs over the conda one). The string is a shell command's arguments: quoted ones
        # ('numpy==1.19.2', scikit-learn 1.3+) are unquoted as the shell does (uv refuses the quotes)
        pinned = {re.split(r"[<>=!~\[; ]", p, maxsplit=1)[0].lower() for p in entry["requirements"]}
        entry["requirements"] = [*(p for p in shlex.split(packages) if p.lower() not in pinned), *entry["requirements"]]
    for step in spec.get("pre_install", []):
        if _SYSTEM_STEP.search(step):
            not_run.append(f"pre_install: {step}")
        else:
            entry["pre_install"].append(step)
    if spec.get("eval_commands"):
        entry["eval_commands"] = list(spec["eval_commands"])
    if spec.get("test_cmd"):
        cmd = spec["test_cmd"]
        entry["test_cmd"] = cmd if isinstance(cmd, str) else " && ".join(cmd)
    if not_run:
        entry["not_run"] = not_run
    return entry


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheel", help="the swebench wheel (pip download --no-deps swebench==4.1.0)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    wheel = Path(args.wheel)
    version = wheel.name.split("-")[1]
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(tmp)
        # the module file alone (plain data, no imports): never the package, whose __init__ needs docker
        loader = importlib.util.spec_from_file_location("swebench_specs", Path(tmp, "swebench/harness/constants/python.py"))
        specs = importlib.util.module_from_spec(loader)
        loader.loader.exec_module(specs)

    tables = {repo: {v: translate(repo, spec, specs.MAP_REPO_TO_REQS_PATHS) for v, spec in sorted(versions.items())}
              for repo, versions in sorted(specs.MAP_REPO_VERSION_TO_SPECS_PY.items())
              if repo != "swe-bench/humaneval"}  # not a repository
    doc = {"source": {"package": "swebench", "version": version, "module": "swebench.harness.constants.python",
                      "licence": "MIT", "generated_by": "scripts/gen_env_tables.py"},
           "tables": tables}
    Path(args.out).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"{args.out}: {sum(len(v) for v in tables.values())} (repo, version) entries, {len(tables)} repositories "
          f"(swebench {version})")


if __name__ == "__main__":
    main()
