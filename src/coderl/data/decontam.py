"""How a training row overlaps SWE-bench, the evaluation set it must stay apart from.

Three checks per row, each reported (``report.json``'s ``overlap``) and, with ``--drop-overlaps``,
a reason to drop the row:
- instance: the row's id is a SWE-bench instance id (needs SWE-bench's rows: ``--swe-bench-rows``);
- repository: the row's repository is one SWE-bench draws from. Offline we know SWE-bench's
  repositories (the 12 of its test split, which Lite and Verified share, and the 6 of its dev
  split, as the ``swebench`` package's constants name them) and the repositories of any rows given;
- nearby commit: a row given with the same repository whose ``base_commit`` or
  ``environment_setup_commit`` starts with the commit the row's mirror names (``<owner>__<name>.<sha8>``)
  or whose ``created_at`` is within ``NEARBY_DAYS`` of the row's (when both have one). Commits that
  are near in history but not equal need the upstream repository's history, which is not offline:
  the report says so per row (``history_checked: false``).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from coderl.data.common import read_rows

SWE_BENCH_REPOS = frozenset({
    # test split (full, Lite and Verified)
    "astropy/astropy", "django/django", "matplotlib/matplotlib", "mwaskom/seaborn", "pallets/flask",
    "psf/requests", "pydata/xarray", "pylint-dev/pylint", "pytest-dev/pytest", "scikit-learn/scikit-learn",
    "sphinx-doc/sphinx", "sympy/sympy",
    # dev split
    "marshmallow-code/marshmallow", "pvlib/pvlib-python", "pydicom/pydicom", "pylint-dev/astroid",
    "pyvista/pyvista", "sqlfluff/sqlfluff",
})
NEARBY_DAYS = 30


def overlap_report(rows: list[dict[str, Any]], bench_rows: str | Path | None) -> dict[str, dict[str, Any]]:
    """Per row id: what of SWE-bench it overlaps (``overlaps``: empty when nothing) and what was checked."""
    bench = [r for r in read_rows(bench_rows) if isinstance(r, dict)] if bench_rows else []
    ids = {str(r.get("instance_id")) for r in bench}
    repos = SWE_BENCH_REPOS | {str(r.get("repo")) for r in bench}
    out = {}
    for row in rows:
        iid, repo = str(row["instance_id"]), str(row["repo"])
        found = []
        if iid in ids:
            found.append(f"instance {iid} is a SWE-bench instance")
        if repo in repos:
            found.append(f"repository {repo} is one of SWE-bench's")
        found += [f"near {b['instance_id']}: {why}" for b in bench if b.get("repo") == repo
                  for why in [_nearby(row, b)] if why]
        out[iid] = {"overlaps": found, "instances_checked": len(ids), "history_checked": False}
    return out


def _nearby(row: dict[str, Any], bench: dict[str, Any]) -> str:
    sha8 = str(row.get("mirror", "")).rsplit(".", 1)[-1]
    for key in ("base_commit", "environment_setup_commit"):
        if len(sha8) == 8 and str(bench.get(key, "")).startswith(sha8):
            return f"same commit {sha8} as its {key}"
    a, b = _date(row.get("created_at")), _date(bench.get("created_at"))
    if a and b and abs((a - b).days) <= NEARBY_DAYS:
        return f"created within {NEARBY_DAYS} days ({a.date()} vs {b.date()})"
    return ""


def _date(value: Any) -> dt.datetime | None:
    try:
        parsed = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
