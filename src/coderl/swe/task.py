"""A repository task: SWE-bench / SWE-Gym shaped, as the session, the grader and the data builder see it.

The fields follow SWE-bench's names where it has them (``instance_id``, ``repo``, ``base_commit``,
``problem_statement``, ``FAIL_TO_PASS``, ``PASS_TO_PASS``, ``test_patch``, ``patch``), so rows of
those datasets read unchanged; ``test_cmd``, ``test_files`` and ``environment_setup`` are ours and
optional (see docs/agent.md, "Repository tasks").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from coderl.errors import InvalidTask
from coderl.swe.patch import split_diff

DEFAULT_TEST_CMD = "python -m pytest -rA -p no:cacheprovider -W ignore::DeprecationWarning"


@dataclass(frozen=True)
class EnvSpec:
    """How a task's Python environment is made: a virtualenv of the sandbox's interpreter with
    ``requirements`` installed (pip requirement strings), and ``pythonpath`` (paths inside the
    repository) importable, the way ``pip install -e .`` would make it without running its code."""

    requirements: tuple[str, ...] = ()
    pythonpath: tuple[str, ...] = (".",)

    @classmethod
    def from_value(cls, value: Any) -> EnvSpec:
        if value in (None, "", {}):
            return cls()
        if isinstance(value, str):
            value = json.loads(value)
        if isinstance(value, list):
            value = {"requirements": value}
        if not isinstance(value, dict):
            raise InvalidTask(f"environment_setup must be an object, got {type(value).__name__}")
        unknown = set(value) - {"requirements", "pythonpath"}
        if unknown:
            raise InvalidTask(f"environment_setup has unknown keys {sorted(unknown)}")
        reqs, paths = value.get("requirements", []), value.get("pythonpath", ["."])
        if not all(isinstance(x, str) for x in [*reqs, *paths]):
            raise InvalidTask("environment_setup.requirements and .pythonpath must be lists of strings")
        return cls(tuple(reqs), tuple(paths))

    def to_dict(self) -> dict:
        return {"requirements": list(self.requirements), "pythonpath": list(self.pythonpath)}


@dataclass(frozen=True)
class RepoTask:
    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    test_patch: str = ""
    gold_patch: str = ""
    test_cmd: str = DEFAULT_TEST_CMD
    test_files: tuple[str, ...] = ()
    env: EnvSpec = field(default_factory=EnvSpec)

    @property
    def tests(self) -> tuple[str, ...]:
        return (*self.fail_to_pass, *self.pass_to_pass)

    @property
    def protected_files(self) -> frozenset[str]:
        """Paths the agent's diff may not change (restored before grading, as SWE-bench does):
        the declared test files, every file the test patch touches, and the files of the tests."""
        from_ids = {t.split("::", 1)[0] for t in self.tests if "::" in t}
        return frozenset({*self.test_files, *(p for fp in split_diff(self.test_patch) for p in fp.paths), *from_ids})

    @classmethod
    def from_row(cls, row: dict) -> RepoTask:
        """A SWE-bench / SWE-Gym row (lists may be JSON strings, as in SWE-bench's parquet)."""
        missing = [k for k in ("instance_id", "repo", "base_commit", "FAIL_TO_PASS") if not row.get(k)]
        if missing:
            raise InvalidTask(f"task row lacks {', '.join(missing)}")
        return cls(
            instance_id=str(row["instance_id"]), repo=str(row["repo"]), base_commit=str(row["base_commit"]),
            problem_statement=str(row.get("problem_statement") or ""),
            fail_to_pass=_str_list(row, "FAIL_TO_PASS"), pass_to_pass=_str_list(row, "PASS_TO_PASS"),
            test_patch=str(row.get("test_patch") or ""), gold_patch=str(row.get("patch") or ""),
            test_cmd=str(row.get("test_cmd") or DEFAULT_TEST_CMD), test_files=_str_list(row, "test_files"),
            env=EnvSpec.from_value(row.get("environment_setup")),
        )

    def to_row(self) -> dict:
        return {"instance_id": self.instance_id, "repo": self.repo, "base_commit": self.base_commit,
                "problem_statement": self.problem_statement, "FAIL_TO_PASS": list(self.fail_to_pass),
                "PASS_TO_PASS": list(self.pass_to_pass), "test_patch": self.test_patch, "patch": self.gold_patch,
                "test_cmd": self.test_cmd, "test_files": list(self.test_files),
                "environment_setup": self.env.to_dict()}


def _str_list(row: dict, key: str) -> tuple[str, ...]:
    value = row.get(key) or []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InvalidTask(f"{key} is not a JSON list: {value[:80]!r}") from exc
    if not isinstance(value, list | tuple) or not all(isinstance(x, str) for x in value):
        raise InvalidTask(f"{key} must be a list of strings")
    return tuple(value)

