"""The environment of each (repository, version) coderl knows how to build: one table, kept in
``env_tables.json`` beside this file, not one per instance (every instance of a version shares its
environment, as SWE-bench's per-version images do).

Each entry is an ``EnvSpec`` less its ``source`` (which commit's tree it is built from is the data
set's choice: ``coderl.data.swe_bench``). Started from SWE-bench's published specs (the ``swebench``
package's ``MAP_REPO_VERSION_TO_SPECS_PY``, MIT) with the same Python versions and pins, changed
where coderl runs things differently (docs/agent.md, "Real repositories: SWE-bench rows"):
pytest runs the tests directly (no tox for sphinx, no ``bin/test`` for sympy: pytest added), the
test requirements stand in for the development ones where those bring linters and IDE plugins
(flask's ``requirements/tests.txt``, pylint's ``requirements_test_min.txt``, marshmallow's and
sqlfluff's test packages), and ``resolved_at`` is the newest ``created_at`` of the version's
instances in SWE-bench Lite.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from coderl.swe.task import EnvSpec


@functools.cache
def env_tables() -> dict[str, dict[str, dict[str, Any]]]:
    return json.loads((resources.files("coderl.swe") / "env_tables.json").read_text())


def table_spec(repo: str, version: str, source: str) -> EnvSpec | None:
    """The environment of ``repo`` at ``version`` built from ``source`` (``owner/name@sha``);
    None when the table has no such version."""
    entry = env_tables().get(repo, {}).get(version)
    return None if entry is None else EnvSpec.from_value({**entry, "source": source})
