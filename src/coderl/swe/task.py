"""A repository task: SWE-bench / SWE-Gym shaped, as the session, the grader and the data builder see it.

The fields follow SWE-bench's names where it has them (``instance_id``, ``repo``, ``base_commit``,
``problem_statement``, ``FAIL_TO_PASS``, ``PASS_TO_PASS``, ``test_patch``, ``patch``), so rows of
those datasets read unchanged; ``test_cmd``, ``test_files`` and ``environment_setup`` are ours and
optional (see docs/agent.md, "Repository tasks").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from coderl.errors import InvalidTask
from coderl.swe.patch import split_diff

# SWE-bench's harness command for pytest repositories (``pytest -rA``): the repository's own warning
# filters decide. No ``-W``: a command-line filter is applied after the configuration's, so
# ``-W ignore::DeprecationWarning`` undid a ``filterwarnings = error`` (matplotlib's conftest,
# flask's, astropy's and pytest's own configuration) and a test that fails unfixed on a warning
# passed with the empty patch (matplotlib-24970)
DEFAULT_TEST_CMD = "python -m pytest -rA -p no:cacheprovider"
# the default before that change, which every row `coderl data swe-bench` built until then carries
# (``to_row`` writes the default out): read as the default, so those rows need no rebuild
_OLD_DEFAULT_TEST_CMD = "python -m pytest -rA -p no:cacheprovider -W ignore::DeprecationWarning"


# what a test service's variables may not name: the grading run's own environment (``grading_run.launch``)
# and the variables that change how Python or pytest start (the launcher replaces the environment whole)
_RUN_OWN_VARS = frozenset({"PATH", "HOME", "LANG", "TMPDIR", "VIRTUAL_ENV"})
_STARTUP_PREFIXES = ("PYTHON", "PYTEST", "LD_", "COV_", "CODERL")
_VAR_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
_SERVICE_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,39}$")


@dataclass(frozen=True)
class TestService:
    """A service the test suite needs, started inside the grading sandbox before the tests (a local
    httpbin for requests' suites of 2012-2015, which read ``HTTPBIN_URL``): ``argv`` run there in
    the task's environment (``python`` is its interpreter), from ``/tmp``, its output to a file;
    the tests start once something accepts connections on ``127.0.0.1:port`` (the sandbox's own
    loopback, in its own network namespace: nothing outside reaches it, it reaches nothing
    outside); ``env`` is added to the tests' environment (where the suite reads the service's
    address). Declared per (repository, version) beside the environment's packages
    (``env_overlay.json``), never per row.

    ``tls_port`` (0: none): a port where the starter itself accepts TLS and plain connections alike
    (it tells them apart by their first byte) and relays each to ``port``: ``https://`` and
    ``http://`` to one host and port both reach the service (requests 2.0-2.8's
    ``test_mixed_case_scheme_acceptable`` sends both to its httpbin's netloc). Its certificate is
    the environment's own, made when the environment is built (``service_tls.make_certificate``),
    and trusted there: appended to the environment's certifi bundle and named by ``SSL_CERT_FILE``
    in the tests' environment (``grading_run.service_env``)."""

    __test__ = False  # not a pytest test class, whatever its name

    name: str
    argv: tuple[str, ...]
    port: int
    env: tuple[tuple[str, str], ...] = ()
    tls_port: int = 0

    @classmethod
    def from_value(cls, value: Any) -> TestService:
        if not isinstance(value, dict) or set(value) - {"name", "argv", "port", "env", "tls_port"}:
            raise InvalidTask("environment_setup.services: each service is an object with name, argv, port, env "
                              "and tls_port")
        name, argv, port, env = value.get("name"), value.get("argv"), value.get("port"), value.get("env", {})
        tls_port = value.get("tls_port", 0)
        if not isinstance(name, str) or not _SERVICE_NAME.match(name):
            raise InvalidTask(f"environment_setup.services: a service's name must be a plain name, got {name!r}")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise InvalidTask(f"environment_setup.services.{name}.argv must be a non-empty list of strings")
        if not isinstance(port, int) or isinstance(port, bool) or not 1024 <= port <= 65535:
            raise InvalidTask(f"environment_setup.services.{name}.port must be a port number 1024-65535, got {port!r}")
        if tls_port != 0 and (not isinstance(tls_port, int) or isinstance(tls_port, bool) or
                              not 1024 <= tls_port <= 65535 or tls_port == port):
            raise InvalidTask(f"environment_setup.services.{name}.tls_port must be a port number 1024-65535 other "
                              f"than its port, got {tls_port!r}")
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise InvalidTask(f"environment_setup.services.{name}.env must be an object of strings")
        for key in env:
            if not _VAR_NAME.match(key) or key in _RUN_OWN_VARS or key.startswith(_STARTUP_PREFIXES):
                raise InvalidTask(f"environment_setup.services.{name}.env: {key!r} is refused (a service names the "
                                  "variables its tests read for its address, never the run's own or Python's/pytest's)")
        return cls(name=name, argv=tuple(argv), port=port, env=tuple(sorted(env.items())), tls_port=tls_port)

    def to_dict(self) -> dict:
        out = {"name": self.name, "argv": list(self.argv), "port": self.port, "env": dict(self.env)}
        if self.tls_port:  # only when set: a service without it keeps its row as it was
            out["tls_port"] = self.tls_port
        return out


@dataclass(frozen=True)
class EnvSpec:
    """How a task's Python environment is made (``coderl.swe.environment``).

    The plain form (``requirements``, ``pythonpath``): a virtualenv of the sandbox's interpreter
    with ``requirements`` installed (pip requirement strings) and ``pythonpath`` (paths inside the
    repository) importable, the way ``pip install -e .`` would make it without running its code.

    A real project's form adds ``python`` (``X.Y``, an interpreter on this machine), and with it
    ``resolved_at`` (ISO date: packages uploaded after it are never picked, except the exact
    ``==`` pins, which name their version already), ``requirement_files`` (paths in the source tree,
    e.g. ``requirements/dev.txt``), ``pre_install`` (shell steps run in a copy of the source tree
    before the install, e.g. sphinx's ``sed`` of its pins), ``install`` (the editable install's
    target, e.g. ``.`` or ``.[dev]``; empty: the project is not installed), ``build_env`` (variables
    its build needs, e.g. ``SETUPTOOLS_SCM_PRETEND_VERSION``) and ``source`` (the commit of the
    repository whose tree the environment is built from: one per (repo, version), so every instance
    of it shares one environment).

    ``services`` (either form): the `TestService`s the suite needs, started in the grading sandbox
    before the tests. Not part of what the environment is built from (its packages are in
    ``requirements``); a spec without services keeps the key it always had.

    ``resolved_at_fallback`` (a real project's, optional): a later date (the row's base commit's)
    the resolution is made as of when the packages cannot be resolved as of ``resolved_at`` (a base
    tree that requires a release newer than the row's date); the date used and why are recorded
    with the resolution (``coderl.swe.environment.resolution_date``). A spec without it keeps the
    key it always had.

    ``trusted`` says where the spec came from (no part of the spec's equality): True for the
    operator's files and the bundled tables; False for a row that came in a request
    (`coderl.swe.request_rows`, the service's routes), whose build runs no shell step, no project
    build and no package's build code (wheels only: its environment is keyed apart)."""

    requirements: tuple[str, ...] = ()
    pythonpath: tuple[str, ...] = (".",)
    python: str = ""
    resolved_at: str = ""
    requirement_files: tuple[str, ...] = ()
    pre_install: tuple[str, ...] = ()
    install: str = ""
    build_env: tuple[tuple[str, str], ...] = ()
    source: str = ""
    services: tuple[TestService, ...] = ()
    resolved_at_fallback: str = ""
    trusted: bool = field(default=True, compare=False)

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
        unknown = set(value) - set(_ENV_LISTS) - set(_ENV_STRINGS) - {"pythonpath", "build_env", "services",
                                                                         "resolved_at_fallback"}
        if unknown:
            raise InvalidTask(f"environment_setup has unknown keys {sorted(unknown)}")
        lists = {k: value.get(k, []) for k in _ENV_LISTS}
        paths = value.get("pythonpath", ["."])
        if not all(isinstance(v, list) for v in [*lists.values(), paths]) or \
                not all(isinstance(x, str) for v in [*lists.values(), paths] for x in v):
            raise InvalidTask(f"environment_setup.{', .'.join([*_ENV_LISTS, 'pythonpath'])} must be lists of strings")
        strings = {k: value.get(k, "") for k in (*_ENV_STRINGS, "resolved_at_fallback")}
        build_env = value.get("build_env", {})
        if not all(isinstance(v, str) for v in strings.values()) or not isinstance(build_env, dict) or \
                not all(isinstance(k, str) and isinstance(v, str) for k, v in build_env.items()):
            raise InvalidTask(f"environment_setup.{', .'.join(_ENV_STRINGS)} must be strings and .build_env "
                              "an object of strings")
        if strings["python"] == "" and any([*(v for k, v in lists.items() if k != "requirements"),
                                            *strings.values(), build_env]):
            raise InvalidTask("environment_setup: requirement_files, pre_install, install, resolved_at, "
                              "build_env and source need python (the X.Y the project runs on)")
        services = value.get("services", [])
        if not isinstance(services, list):
            raise InvalidTask("environment_setup.services must be a list of services")
        parsed = tuple(TestService.from_value(s) for s in services)
        ports = [p for s in parsed for p in (s.port, s.tls_port) if p]
        if len({s.name for s in parsed}) != len(parsed) or len(set(ports)) != len(ports):
            raise InvalidTask("environment_setup.services: two services share a name or a port")
        return cls(pythonpath=tuple(paths), build_env=tuple(sorted(build_env.items())),
                   services=parsed, **{k: tuple(v) for k, v in lists.items()}, **strings)

    def to_dict(self) -> dict:
        """The spec as a row holds it; the real-project keys only when set (so a plain spec's
        environment key is what it always was)."""
        out: dict[str, Any] = {"requirements": list(self.requirements), "pythonpath": list(self.pythonpath)}
        if self.python:
            out.update({k: list(getattr(self, k)) for k in _ENV_LISTS if k != "requirements"})
            out.update({k: getattr(self, k) for k in _ENV_STRINGS}, build_env=dict(self.build_env))
        if self.services:  # only when set: a spec without services keeps its environment key
            out["services"] = [s.to_dict() for s in self.services]
        if self.python and self.resolved_at_fallback:  # the same
            out["resolved_at_fallback"] = self.resolved_at_fallback
        return out

    @property
    def test_tls(self) -> bool:
        """Whether a service of the spec serves TLS (``TestService.tls_port``): the environment is
        built with a certificate of its own then, so it is keyed apart."""
        return any(s.tls_port for s in self.services)


_ENV_LISTS = ("requirements", "requirement_files", "pre_install")
_ENV_STRINGS = ("python", "resolved_at", "install", "source")


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
            test_cmd=_test_cmd(row), test_files=_str_list(row, "test_files"),
            env=EnvSpec.from_value(row.get("environment_setup")),
        )

    def to_row(self) -> dict:
        return {"instance_id": self.instance_id, "repo": self.repo, "base_commit": self.base_commit,
                "problem_statement": self.problem_statement, "FAIL_TO_PASS": list(self.fail_to_pass),
                "PASS_TO_PASS": list(self.pass_to_pass), "test_patch": self.test_patch, "patch": self.gold_patch,
                "test_cmd": self.test_cmd, "test_files": list(self.test_files),
                "environment_setup": self.env.to_dict()}


def _test_cmd(row: dict) -> str:
    cmd = str(row.get("test_cmd") or DEFAULT_TEST_CMD)
    return DEFAULT_TEST_CMD if cmd == _OLD_DEFAULT_TEST_CMD else cmd


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

