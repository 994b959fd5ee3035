"""The environment of every (repository, version) SWE-bench specifies, as an ``EnvSpec`` for one row.

Two files beside this one, kept apart on purpose:
- ``env_tables.json``: SWE-bench's own specifications, generated (never edited) by
  ``scripts/gen_env_tables.py`` from the ``swebench`` package's ``MAP_REPO_VERSION_TO_SPECS_PY``
  (its version is in the file's ``source``). Translated mechanically: ``python`` as given,
  ``pip_packages`` and conda ``packages`` as requirements, ``packages: requirements.txt`` as
  ``requirement_files_first_of`` (SWE-bench's ``MAP_REPO_TO_REQS_PATHS``: the first the row's tree
  has), ``install`` as the editable install's target, ``pre_install`` as given but the steps that
  need the system (``apt-get``, locales, conda) which are listed in ``not_run``; ``test_cmd`` and
  ``eval_commands`` kept for the runners.
- ``env_overlay.json``: coderl's changes, each rule with its reason (pytest run directly, test
  requirements instead of development ones, dates' fixes). A rule may hold only for rows resolved
  before a date: the date is the row's, so the rule is decided per row.

The resolution date is the row's own (``resolved_at``, from its ``created_at``), never the
table's: a row's exact pins name versions of its own time. A row whose base commit is later than
its date (the fix opened months before the commit SWE-bench took as its base) carries that date as
``resolved_at_fallback``: used only when the row's own date leaves the packages unresolvable. A row older than its Python's first
release is resolved as of that release (``python_floor``). The tree the environment is built from
is the row's (``source``); whether two rows share an environment is decided by the content of
their resolutions (``coderl.swe.environment``), never by their table.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from importlib import resources
from typing import Any

from coderl.swe.interpreters import PYTHON_RELEASED
from coderl.swe.task import EnvSpec

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_SPEC_KEYS = ("python", "requirements", "pre_install", "install", "build_env", "resolved_at", "services")


@functools.cache
def env_tables() -> dict[str, dict[str, dict[str, Any]]]:
    """SWE-bench's specifications, per repository and version (``env_tables.json``'s ``tables``)."""
    return json.loads((resources.files("coderl.swe") / "env_tables.json").read_text())["tables"]


@functools.cache
def overlay_rules() -> list[dict[str, Any]]:
    return json.loads((resources.files("coderl.swe") / "env_overlay.json").read_text())["rules"]


def table_entry(repo: str, version: str) -> dict[str, Any] | None:
    """SWE-bench's entry for (repo, version) with coderl's overlay rules that hold at any date;
    None when SWE-bench specifies no such version."""
    return _with_overlay(repo, version, "9999")


def table_spec(repo: str, version: str, *, source: str, resolved_at: str,
               has_file: Callable[[str], bool] = lambda path: False, fallback_at: str = "") -> EnvSpec | None:
    """The environment of one row of ``repo`` at ``version``: built from ``source`` (the row's
    ``owner/name@sha``), resolved as of ``resolved_at`` (the row's date; an overlay rule may set
    a later one, with its reason), with the first of SWE-bench's requirement files the row's tree
    has (``has_file``). ``fallback_at`` (the base commit's date), when later than the date used,
    becomes the spec's ``resolved_at_fallback``: the resolution is made as of it only when it
    cannot be made as of the row's date (``coderl.swe.environment.resolution_key``); the overlay's
    rules are decided by the row's date either way. None when SWE-bench specifies no such version."""
    entry = _with_overlay(repo, version, resolved_at)
    if entry is None:
        return None
    files = [f for f in entry.get("requirement_files_first_of", []) if has_file(f)][:1]
    value = {k: entry[k] for k in _SPEC_KEYS if entry.get(k)}
    value["resolved_at"] = date_used(entry, resolved_at)
    later = date_used(entry, fallback_at) if fallback_at else ""
    if later and value["resolved_at"] and later > value["resolved_at"]:
        value["resolved_at_fallback"] = later
    return EnvSpec.from_value({**value, "requirement_files": files, "source": source})


def date_used(entry: dict[str, Any], resolved_at: str) -> str:
    """The date an entry resolves as of: the date an overlay rule set, else the row's floored at
    its Python's first release (``python_floor``); never before the entry's ``resolved_not_before``
    (a rule's floor: the first date the table's packages have builds for the Python a rule moved
    the entry to; rows after it keep their own dates)."""
    at = entry.get("resolved_at") or python_floor(resolved_at, entry["python"])
    return max(at, entry.get("resolved_not_before", "")) if at else at


def python_floor(resolved_at: str, python: str) -> str:
    """The row's date, or its Python's first release when the row is older (SWE-bench runs 2014
    requests rows on Python 3.9: pytest as of 2014 does not run there, nothing of that date was
    made for 3.9)."""
    released = PYTHON_RELEASED.get(python, "")
    return max(resolved_at, f"{released}T00:00:00Z") if released and resolved_at else resolved_at


def _with_overlay(repo: str, version: str, resolved_at: str) -> dict[str, Any] | None:
    base = env_tables().get(repo, {}).get(version)
    if base is None:
        return None
    entry = json.loads(json.dumps(base))
    for rule in overlay_rules():
        if rule["repo"] not in ("*", repo) or version not in rule.get("versions", [version]):
            continue
        at = date_used(entry, resolved_at)  # the date rules see the date used (earlier rules may have moved it)
        if "resolved_before" in rule and not (at and at < rule["resolved_before"]):
            continue
        removed = {_name(r) for r in rule.get("remove", [])}
        entry["requirements"] = [r for r in entry.get("requirements", []) if _name(r) not in removed]
        added = {_name(r) for r in rule.get("add", [])}
        entry["requirements"] = [*(r for r in entry["requirements"] if _name(r) not in added), *rule.get("add", [])]
        entry["pre_install"] = [s for s in entry.get("pre_install", [])
                                if not any(p in s for p in rule.get("remove_pre_install_containing", []))]
        entry["pre_install"] += rule.get("add_pre_install", [])
        for key, value in rule.get("set", {}).items():
            entry[key] = {k: v.replace("{version}", version) for k, v in value.items()} if key == "build_env" else value
    return entry


def _name(requirement: str) -> str:
    m = _NAME.match(requirement)
    return (m.group(1) if m else requirement).lower().replace("_", "-")
