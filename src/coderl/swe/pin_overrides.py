"""A table's exact pin against the project's own install requirement: the project's wins.

SWE-bench installs a version's pinned packages first and then the project (``pip install -e .``):
when the project requires a version a pin excludes (matplotlib 3.5's ``setup.py`` asks
``pyparsing<3.0.0``; its table pins ``pyparsing==3.0.9``), pip's second step replaces the pinned
version with one the project accepts. One resolution of both refuses them; this module finds those
pins so that the resolution can leave them out and let the project's requirement decide, as pip's
order does. A pin the project does not constrain, or constrains in a way its version meets, stays
exact.

The project's requirements are its own metadata (``Requires-Dist``), asked of its build backend
(``build_system``) through PEP 517's ``prepare_metadata_for_build_wheel`` (``METADATA_HOOK``, run by
`coderl.swe.environment` in a throwaway virtualenv holding the backend's build requirements): what
pip reads before it installs the project. Only a trusted spec's project gets there (a request's
spec runs no project build), and only when a resolution has failed.
"""

from __future__ import annotations

import re
import tomllib
from email.parser import Parser
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from coderl.errors import EnvBuildError

# PEP 517's default for a tree with no [build-system]: setuptools' legacy backend
_DEFAULT_BACKEND = ("setuptools.build_meta:__legacy__", ["setuptools>=40.8.0", "wheel"])
# run by the throwaway environment's interpreter in the tree, as a PEP 517 frontend would: with
# "requires", prints the backend's further build requirements (JSON; setuptools' legacy backend:
# the project's setup_requires); with "metadata", the metadata directory it writes
METADATA_HOOK = """
import importlib, json, os, sys
step, out, backend, *paths = sys.argv[1:]
sys.path[:0] = [os.path.abspath(p) for p in paths]
module, _, attrs = backend.partition(":")
hooks = importlib.import_module(module)
for name in filter(None, attrs.split(".")):
    hooks = getattr(hooks, name)
if step == "requires":
    print(json.dumps(list(getattr(hooks, "get_requires_for_build_wheel", lambda: [])())))
else:
    print(os.path.join(out, hooks.prepare_metadata_for_build_wheel(out)))
"""


def requires_dist(metadata_dir: Path) -> list[str]:
    """The ``Requires-Dist`` lines of the metadata directory the backend's hook wrote."""
    return Parser().parsestr((metadata_dir / "METADATA").read_text()).get_all("Requires-Dist") or []


def overridden_pins(pins: list[str], declared: list[str], *, python: str, install: str) -> list[dict[str, str]]:
    """The exact pins (``name==version``) whose version the project's own requirement on that
    package excludes (a requirement counts when its marker holds for ``python`` and the extras the
    editable ``install`` names), each with the requirement that wins."""
    named = re.search(r"\[([^]]*)\]", install)
    extras = ["", *(e.strip() for e in named.group(1).split(","))] if named else [""]
    marker_env = {"python_version": python, "python_full_version": f"{python}.0"}
    wanted: dict[str, list[Requirement]] = {}
    for line in declared:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is None or any(req.marker.evaluate({**marker_env, "extra": e}) for e in extras):
            wanted.setdefault(canonicalize_name(req.name), []).append(req)
    out = []
    for pin in pins:
        version = _exact_version(pin)
        if version is None:
            continue
        name = canonicalize_name(Requirement(pin).name)
        against = [r for r in wanted.get(name, []) if not r.specifier.contains(version, prereleases=True)]
        if against:
            out.append({"pin": pin, "project": str(against[0]),
                        "why": "the project's own install requirement excludes the pinned version: installed "
                               "after the pins, the project's requirement decides (pip's order)"})
    return out


def _exact_version(pin: str) -> str | None:
    try:
        req = Requirement(pin)
    except InvalidRequirement:
        return None
    [*specs] = req.specifier
    return specs[0].version if len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version else None


def build_system(src: Path) -> tuple[str, list[str], list[str]]:
    """(backend, build requirements, backend path) of the tree's ``pyproject.toml``, PEP 517's
    defaults where it says nothing."""
    table: dict[str, Any] = {}
    if (src / "pyproject.toml").is_file():
        try:
            table = tomllib.loads((src / "pyproject.toml").read_text()).get("build-system", {})
        except tomllib.TOMLDecodeError as exc:
            raise EnvBuildError(f"cannot read the project's pyproject.toml: {exc}") from exc
    if "build-backend" not in table:
        return _DEFAULT_BACKEND[0], list(table.get("requires", _DEFAULT_BACKEND[1])), []
    return str(table["build-backend"]), list(table.get("requires", [])), list(table.get("backend-path", []))
