"""The environment of a pure-Python repository no table covers, inferred from the repository itself.

``infer_env(tree, source=..., resolved_at=...)`` reads the project at that commit, never runs its
code: ``pyproject.toml`` (PEP 621 ``requires-python``, dependencies, optional dependencies, PEP 735
dependency groups, the build backend), ``setup.cfg`` (``[options]``), ``setup.py`` (the literal
arguments of its ``setup()`` call, read with ``ast``), requirement files (``requirements*.txt``,
``requirements/*.txt``, ``*requirements*.txt`` with test or dev in their name) and ``tox.ini``'s test
environment deps. From those:

- the Python: the newest interpreter on this machine (``coderl.swe.interpreters``) that the
  project's ``requires-python`` allows, that its classifiers name when they name 3.x versions,
  and that was released at least half a year before ``resolved_at`` (so the packages of that
  date have wheels for it);
- the install: the project editable with its test extra (``test``, ``tests``, ``testing``, else
  ``dev``) when it has one, plus the test requirement files and dependency groups, plus pytest;
- the date: ``resolved_at`` (the commit's), as every table row's.

A project that builds code of its own (``ext_modules``, Cython/C sources in the package, a
compiled build backend) or declares no packaging at all is refused with the reason (``EnvBuildError``):
never guessed silently. ``validate_env`` runs the test suite at the base commit in a session
sandbox with the built environment: collection must work; the share of tests passing is reported.
"""

from __future__ import annotations

import ast
import configparser
import re
import tomllib
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from coderl.errors import CoderlError, EnvBuildError
from coderl.sandbox.session import SessionHost, SessionLimits
from coderl.swe.interpreters import PYTHON_RELEASED, find_python
from coderl.swe.task import EnvSpec

_WHEELS_LAG_DAYS = 183  # the packages of a date have wheels for a Python released half a year before it
_TEST_EXTRAS = ("test", "tests", "testing", "test-requirements", "dev", "develop")
_COMPILED_BACKENDS = ("scikit_build", "mesonpy", "maturin", "setuptools_rust", "pybind11", "cmake")
_REQ_FILE = re.compile(r"(^|/)([\w.-]*(test|dev)[\w.-]*\.txt|requirements\.txt)$", re.I)
_CLASSIFIER = re.compile(r"Programming Language :: Python :: (3\.\d+)$")


@dataclass(frozen=True)
class _Metadata:
    requires_python: str
    classifiers: tuple[str, ...]
    extras: tuple[str, ...]
    groups: dict[str, list[str]]
    compiled: str  # why the project builds code of its own, "" when it does not


def infer_env(tree: Path, *, source: str, resolved_at: str) -> EnvSpec:
    """The ``EnvSpec`` of the project checked out at ``tree`` (``source``: its ``owner/name@sha``),
    resolved as of ``resolved_at`` (ISO date, the commit's). Raises ``EnvBuildError`` with the
    reason when none can be inferred (no packaging, compiled code, no allowed Python here)."""
    meta = _metadata(tree)
    if meta.compiled:
        raise EnvBuildError(f"cannot infer an environment: the project builds code of its own ({meta.compiled})")
    python = pick_python(meta.requires_python, meta.classifiers, resolved_at)
    extra = next((e for e in _TEST_EXTRAS if e in meta.extras), "")
    requirements = ["pytest", *(r for name in ("test", "tests", "testing", "dev") for r in meta.groups.get(name, [])
                                if isinstance(r, str))]
    requirements += _tox_deps(tree)
    files = sorted({str(p.relative_to(tree)) for p in [*tree.glob("*.txt"), *tree.glob("requirements/*.txt")]
                    if _REQ_FILE.search(str(p.relative_to(tree))) and "doc" not in p.name.lower()})
    return EnvSpec.from_value({"python": python, "resolved_at": resolved_at, "requirements": list(dict.fromkeys(requirements)),
                               "requirement_files": files, "install": f".[{extra}]" if extra else ".",
                               "source": source})


def pick_python(requires_python: str, classifiers: tuple[str, ...], resolved_at: str) -> str:
    """The newest Python on this machine the project allows and its date had wheels for."""
    try:
        allowed = SpecifierSet(requires_python or "")
    except InvalidSpecifier:
        allowed = SpecifierSet("")
    named = {m.group(1) for c in classifiers if (m := _CLASSIFIER.match(c.strip()))}
    day = resolved_at[:10] or "9999-12-31"
    why_not = []
    for version in sorted(PYTHON_RELEASED, key=lambda v: tuple(map(int, v.split("."))), reverse=True):
        if not _released_before(PYTHON_RELEASED[version], day):
            continue
        if f"{version}.0" not in allowed and version not in allowed:
            continue
        if named and version not in named:
            continue
        try:
            find_python(version)
        except CoderlError as exc:
            why_not.append(str(exc).split(":")[0])
            continue
        return version
    raise EnvBuildError(f"cannot infer an environment: no Python on this machine fits requires-python "
                        f"{requires_python or '(none)'}, the classifiers {sorted(named) or '(none)'} and the date {day}"
                        + (f" ({'; '.join(why_not[:2])})" if why_not else ""))


def _released_before(released: str, day: str) -> bool:
    try:
        return date.fromisoformat(released) + timedelta(days=_WHEELS_LAG_DAYS) <= date.fromisoformat(day)
    except ValueError:
        return False


def _metadata(tree: Path) -> _Metadata:
    pyproject, setup_cfg, setup_py = tree / "pyproject.toml", tree / "setup.cfg", tree / "setup.py"
    if not (pyproject.is_file() or setup_cfg.is_file() or setup_py.is_file()):
        raise EnvBuildError("cannot infer an environment: no pyproject.toml, setup.cfg or setup.py at the root")
    requires, classifiers, extras, groups, compiled = "", [], [], {}, ""
    if pyproject.is_file():
        try:
            doc = tomllib.loads(pyproject.read_text(errors="replace"))
        except tomllib.TOMLDecodeError as exc:
            raise EnvBuildError(f"cannot infer an environment: pyproject.toml is not TOML ({exc})") from exc
        project = doc.get("project", {})
        requires = str(project.get("requires-python", ""))
        classifiers += [str(c) for c in project.get("classifiers", [])]
        extras += list(project.get("optional-dependencies", {}))
        groups = {k: v for k, v in doc.get("dependency-groups", {}).items() if isinstance(v, list)}
        build = doc.get("build-system", {})
        backend = " ".join([str(build.get("build-backend", "")), *map(str, build.get("requires", []))]).replace("-", "_")
        compiled = next((f"build backend {b}" for b in _COMPILED_BACKENDS if b in backend.lower()), "")
        if not project and not setup_cfg.is_file() and not setup_py.is_file() and "poetry" not in backend:
            raise EnvBuildError("cannot infer an environment: pyproject.toml has no [project] table and there is no setup.py")
    if setup_cfg.is_file():
        cfg = configparser.ConfigParser(interpolation=None)
        try:
            cfg.read_string(setup_cfg.read_text(errors="replace"))
        except configparser.Error:
            cfg = configparser.ConfigParser(interpolation=None)
        requires = requires or cfg.get("options", "python_requires", fallback="")
        classifiers += cfg.get("metadata", "classifiers", fallback="").splitlines()
        extras += list(cfg["options.extras_require"]) if cfg.has_section("options.extras_require") else []
    if setup_py.is_file():
        call = _setup_call(setup_py.read_text(errors="replace"))
        requires = requires or str(call.get("python_requires", ""))
        classifiers += [str(c) for c in call.get("classifiers", [])] if isinstance(call.get("classifiers"), list) else []
        extras += list(call["extras_require"]) if isinstance(call.get("extras_require"), dict) else []
        if call.get("ext_modules") not in (None, []):
            compiled = "setup.py declares ext_modules"
    package_c = [p for pattern in ("*.pyx", "*.c", "*.cpp") for p in tree.glob(f"*/{pattern}")]
    package_c += [p for pattern in ("*.pyx",) for p in tree.glob(f"src/*/{pattern}")]
    if package_c and not compiled:
        compiled = f"C/Cython sources in the package ({package_c[0].relative_to(tree)})"
    return _Metadata(requires, tuple(classifiers), tuple(extras), groups, compiled)


def _setup_call(text: str) -> dict[str, object]:
    """The literal keyword arguments of setup.py's ``setup(...)`` call (never run): a name whose
    value is not a literal maps to None, so ``ext_modules=[...]`` is seen either way."""
    try:
        module = ast.parse(text)
    except SyntaxError:
        return {}
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "setup":
            out: dict[str, object] = {}
            for kw in node.keywords:
                if kw.arg:
                    try:
                        out[kw.arg] = ast.literal_eval(kw.value)
                    except (ValueError, TypeError, SyntaxError, RecursionError):
                        out[kw.arg] = None if kw.arg != "ext_modules" else _ext_modules(module, kw.value)
            return out
    return {}


def _ext_modules(module: ast.Module, value: ast.expr) -> object:
    """A non-literal ``ext_modules``: None when it is a name the module also sets to None or ``[]``
    (an optional compile, e.g. charset_normalizer's mypyc switch: the pure-Python build is the
    default), else a marker that the project builds code of its own."""
    if isinstance(value, ast.Name):
        for node in ast.walk(module):
            sets_it = isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == value.id
                                                           for t in node.targets)
            if sets_it and (isinstance(node.value, ast.Constant) and node.value.value is None
                            or isinstance(node.value, ast.List) and not node.value.elts):
                return None
    return "not literal"


def _tox_deps(tree: Path) -> list[str]:
    """``tox.ini``'s ``[testenv] deps`` (plain requirement lines: no substitutions, no -r)."""
    tox = tree / "tox.ini"
    if not tox.is_file():
        return []
    cfg = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        cfg.read_string(tox.read_text(errors="replace"))
    except configparser.Error:
        return []
    deps = cfg.get("testenv", "deps", fallback="")
    return [d.strip() for d in deps.splitlines()
            if d.strip() and not d.strip().startswith(("-", "#", "{")) and "{" not in d and ":" not in d.split()[0]]


_COUNTS = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)\b")
_VALIDATE_LIMITS = SessionLimits(episode_s=1500.0, exec_s=1200.0, memory_mb=4096, max_processes=512, output_kb=1024)


async def validate_env(snapshot: Path, env_dir: Path, *, timeout_s: float = 1200.0) -> dict[str, Any]:
    """The project's test suite at its base commit (``snapshot``) in a session sandbox with the
    built environment: ``collects`` (pytest's collection exits 0 with tests found), ``collected``,
    the counts of the run and ``pass_share`` (passed / (passed + failed + errors)). Nothing of the
    project runs outside the sandbox."""
    async with SessionHost() as host:
        session = await host.open(snapshot, env_dir=env_dir, limits=_VALIDATE_LIMITS)
        try:
            collect = await session.exec("python -m pytest --collect-only -q -p no:cacheprovider 2>&1 | tail -n 30",
                                         timeout_s=min(300.0, timeout_s))
            tail = collect.stdout.strip().splitlines()
            found = re.search(r"(\d+) tests? collected", collect.stdout)
            out: dict[str, Any] = {"collects": bool(found) and "error" not in (tail[-1] if tail else "").lower(),
                                   "collected": int(found.group(1)) if found else 0,
                                   "collect_tail": "\n".join(tail[-3:])}
            if not out["collects"]:
                return out
            run = await session.exec("python -m pytest -q -p no:cacheprovider 2>&1 | tail -n 5",
                                     timeout_s=timeout_s)
        finally:
            await session.close()
    counts: dict[str, int] = {}
    for n, word in _COUNTS.findall(run.stdout):
        word = "errors" if word.startswith("error") else word
        counts[word] = counts.get(word, 0) + int(n)
    ran = counts.get("passed", 0) + counts.get("failed", 0) + counts.get("errors", 0)
    return {**out, "counts": counts, "timed_out": run.timed_out,
            "pass_share": round(counts.get("passed", 0) / ran, 3) if ran else 0.0, "run_tail": run.stdout.strip()[-300:]}
