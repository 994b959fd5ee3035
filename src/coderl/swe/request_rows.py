"""What a repository task row that arrives over the network may ask of this node.

Making a task's environment runs programs on the host, outside every sandbox: the resolver, the
project's build backend, a package's build code and the spec's shell steps. A row from the
operator's own files (the CLI, the configured task sources, the trainer's data set) is trusted as
SWE-bench trusts the specs its images are built from; a row in a request to the service is not
(docs/deploy.md, "Who may call"). Such a row may name only what the node already trusts:

- exactly what the bundled environment tables (`coderl.swe.env_tables`) give a row of its
  repository with its source, date and requirement files (``coderl data swe-bench`` writes such
  rows): built as the operator's data would be, the same environment under the same key;
- otherwise declarative fields: ``python``, ``requirements`` (names with version specifiers and
  markers: no URL, path or option), ``resolved_at``, ``requirement_files`` and ``pythonpath``
  (relative paths in the tree), ``source`` (``owner/name@sha``: a snapshot of this node's
  mirrors), ``install`` (``.`` or ``.[extras]``: the project of that snapshot, whose build code
  is the operator's mirror's, as a table's ``install`` is; rows ``coderl data`` infers for
  repositories without a table carry one), and ``pre_install`` and ``build_env`` only as one of
  its repository's table entries has them (the node's own text; ``pre_install`` runs in the build
  sandbox all the same). Such a spec is marked untrusted (``EnvSpec.trusted``) and its packages
  are installed from wheels only, so no request-named package's build code runs.

Any other ``pre_install`` (shell steps) or ``build_env`` (variables every build process sees,
``LD_PRELOAD`` among them), or an ``install`` that is not the project itself, is refused with
`UntrustedInput` naming the field, before anything runs. The row's ``repo`` must be a plain
``owner/name`` (it names a mirror of this node, never a path; the store checks ``base_commit``).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

from coderl.errors import UntrustedInput
from coderl.swe.env_tables import env_tables, table_entry, table_spec
from coderl.swe.task import EnvSpec, RepoTask

_REPO = re.compile(r"^(?!\.\.?/)[A-Za-z0-9_.-]+/(?!\.\.?$)[A-Za-z0-9_.-]+$")  # no . or .. part
_SHA = re.compile(r"^[0-9a-f]{40}$")
_PYTHON = re.compile(r"^3\.\d{1,2}$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$")
_SHELL_FIELDS = {"pre_install": "shell steps", "build_env": "variables every build process sees"}
_INSTALL = re.compile(r"^\.(\[[A-Za-z0-9_.,-]+\])?$")  # the snapshot's project, with extras
ShellFields = tuple[tuple[str, ...], tuple[tuple[str, str], ...]]
_NO_SHELL: ShellFields = ((), ())


def task_from_request(row: dict[str, Any]) -> RepoTask:
    """The task a request's row stands for; `UntrustedInput` (400) naming the field when it asks
    for more than the node trusts. Its environment stays trusted only when it is exactly what the
    tables give for this row (``coderl data swe-bench`` makes such rows: the operator may have
    built it already, under the same key); otherwise it is marked untrusted (wheels only)."""
    task = RepoTask.from_row(row)
    _plain_name(task.repo, "repo", _REPO, "owner/name")
    if is_table_spec(task.repo, task.env):
        return task
    if _shell_fields(task.env) not in [_NO_SHELL, *table_shell_fields(task.repo)]:
        _refuse_shell(task.env)
    check_untrusted_spec(task.env)
    return dataclasses.replace(task, env=dataclasses.replace(task.env, trusted=False))


def is_table_spec(repo: str, spec: EnvSpec) -> bool:
    """Whether ``spec`` is what the tables give a row of ``repo`` with its source, date and
    requirement files (`env_tables.table_spec`), for one of the repository's versions."""
    return any(table_spec(repo, version, source=spec.source, resolved_at=spec.resolved_at,
                          has_file=lambda path: path in spec.requirement_files,
                          fallback_at=spec.resolved_at_fallback) == spec
               for version in env_tables().get(repo, {}))


def table_shell_fields(repo: str) -> list[ShellFields]:
    """(pre_install, build_env) of each of the bundled tables' entries for ``repo``, as
    the tables give them (SWE-bench's entry with coderl's overlay: `env_tables.table_entry`)."""
    out = []
    for version in env_tables().get(repo, {}):
        entry = table_entry(repo, version) or {}
        out.append((tuple(entry.get("pre_install") or ()), tuple(sorted((entry.get("build_env") or {}).items()))))
    return out


@functools.cache
def _every_tables_shell_fields() -> frozenset[ShellFields]:
    return frozenset([_NO_SHELL, *(f for repo in env_tables() for f in table_shell_fields(repo))])


def _shell_fields(spec: EnvSpec) -> ShellFields:
    return spec.pre_install, spec.build_env


def _refuse_shell(spec: EnvSpec) -> None:
    name, what = next((n, w) for n, w in _SHELL_FIELDS.items() if getattr(spec, n))
    raise UntrustedInput(
        f"environment_setup.{name} is refused in a request: it runs {what} on the service's host, so only the "
        "operator's task files or the bundled environment tables may give it. A request names a table entry "
        "of its repository or declarative fields (python, requirements, requirement_files, resolved_at, "
        "pythonpath, source, install of the project itself)")


def check_untrusted_spec(spec: EnvSpec) -> None:
    """Raise `UntrustedInput` naming the first field of an untrusted ``spec`` that only the operator
    may give: shell steps or build variables other than a table entry's own, an install that is not
    the project itself, a requirement that is not a
    name with specifiers, a path out of the tree, a malformed version, date or source."""
    if _shell_fields(spec) not in _every_tables_shell_fields():
        _refuse_shell(spec)
    if spec.install and not _INSTALL.match(spec.install):
        raise UntrustedInput(f"environment_setup.install must be '.' or '.[extras]' (the project itself), got "
                             f"{spec.install[:120]!r}")
    for requirement in spec.requirements:
        _requirement(requirement)
    for field, paths in (("requirement_files", spec.requirement_files), ("pythonpath", spec.pythonpath)):
        for path in paths:
            parts = path.split("/")
            if path.startswith(("/", "-")) or ".." in parts or "\\" in path:
                raise UntrustedInput(f"environment_setup.{field}: {path!r} is not a relative path inside the repository")
    if spec.python:
        _plain_name(spec.python, "environment_setup.python", _PYTHON, "X.Y")
    if spec.resolved_at:
        _plain_name(spec.resolved_at, "environment_setup.resolved_at", _DATE, "an ISO date")
    if spec.resolved_at_fallback:
        _plain_name(spec.resolved_at_fallback, "environment_setup.resolved_at_fallback", _DATE, "an ISO date")
    if spec.source:
        repo, _, commit = spec.source.partition("@")
        if not _REPO.match(repo) or not _SHA.match(commit):
            raise UntrustedInput(f"environment_setup.source must be owner/name@<40-hex sha>, got {spec.source[:120]!r}")


def _requirement(text: str) -> None:
    try:
        parsed = Requirement(text)
    except InvalidRequirement:
        parsed = None
    if text.lstrip().startswith("-") or parsed is None or parsed.url is not None:
        raise UntrustedInput(f"environment_setup.requirements: {text[:120]!r} is not a package name with version "
                             "specifiers (a request names no URL, path or installer option)")


def _plain_name(value: str, field: str, pattern: re.Pattern[str], what: str) -> None:
    if not pattern.match(value):
        raise UntrustedInput(f"{field} must be {what}, got {value[:120]!r}")
