"""What the grader runs in its sandbox: the launcher (``coderl/swe/pytest_inside``) and its spec,
made on the host from the task, its environment and the pristine snapshot, before the agent's
diff is anywhere.

- the pytest arguments: the task's ``test_cmd`` less its ``python -m pytest``, then ours:
  ``-p no:cacheprovider``, the configuration file pinned with ``-c`` and ``--rootdir`` to the ones
  the task environment's own pytest picks on the pristine snapshot (``locate_config``: a
  configuration file the diff adds next to the tests is never read; the grader restores the
  pinned one from the base commit, where its relative ``pythonpath`` entries still resolve), the
  test files last;
- the wanted test ids (FAIL_TO_PASS, PASS_TO_PASS), the protected files (hashed by the
  supervisor before the run), a clean environment with plugin autoload off;
- a fresh nonce per run, sent on the launcher's stdin (never in its environment or argv);
- the task environment's test services (``EnvSpec.services``: a local httpbin for requests' old
  suites), started by ``pytest_inside/services.py`` in the same command before the launcher, on
  the sandbox's own loopback, their variables added to the tests' environment.

``compiled_launcher`` is the launcher and the reporter compiled by the environment's interpreter,
once, into the environment (read-only in every sandbox). ``base_tree`` is the base commit's
path -> blob id listing that ``verdicts`` compares files with.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shlex
import stat
import subprocess
import tempfile
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path

from coderl.cache import built_once
from coderl.errors import SessionFailure
from coderl.sandbox.build_box import run_boxed
from coderl.sandbox.pythonenv import venv_base_prefix
from coderl.sandbox.result import ExecResult
from coderl.sandbox.session import REPO, USER_ENV, Session
from coderl.swe import service_tls
from coderl.swe.environment import EnvBuildError, site_packages
from coderl.swe.pytest_inside.services import EXIT_SERVICE
from coderl.swe.pytest_inside.services import START_S as SERVICES_START_S
from coderl.swe.store import git
from coderl.swe.task import InvalidTask, RepoTask, TestService

INSIDE_DIR = Path(str(resources.files("coderl.swe") / "pytest_inside"))
LAUNCHER = INSIDE_DIR / "launcher.py"
_RUNNERS = (("python", "-m", "pytest"), ("python3", "-m", "pytest"), ("pytest",), ("py.test",))
_LOCATE_TIMEOUT_S = 120
_COMPILED_DIR = "coderl-grading"  # in the task environment: bound read-only into every sandbox with it
_COMPILE = ("import py_compile, sys; "
            "[py_compile.compile(s, cfile=d, doraise=True) for s, d in zip(sys.argv[1::2], sys.argv[2::2])]")


def pytest_args(test_cmd: str) -> list[str]:
    """The options of a task's pytest command (what follows ``python -m pytest``)."""
    words = shlex.split(test_cmd)
    for runner in _RUNNERS:
        if tuple(words[:len(runner)]) == runner:
            return words[len(runner):]
    raise InvalidTask(f"test_cmd must run pytest (python -m pytest ...), got {test_cmd[:80]!r}")


def test_files(task: RepoTask) -> list[str]:
    """The files of the task's ``file::name`` tests, in order (the paths pytest is given)."""
    return list(dict.fromkeys(t.split("::", 1)[0] for t in task.tests if "::" in t))


def run_env_python(env: Path, args: list[str], *, writable: Path, ro: Sequence[str] = (), input: str | None = None,
                   timeout_s: float) -> subprocess.CompletedProcess[str]:
    """The environment's interpreter (``-I -S``) on ``args`` in the build sandbox
    (`coderl.sandbox.build_box`), never on the host itself: the grader's host-side helpers read the
    environment's ``.pth`` files, whose ``import`` lines run, and a request's environment holds
    wheels the request named. Bound read-only: the environment, its base interpreter, this
    package's in-sandbox modules and ``ro``; ``writable`` is the one writable path."""
    base = venv_base_prefix(str(env))
    binds = [str(env), *([base] if base else []), str(INSIDE_DIR), *ro]
    return run_boxed([str(env / "bin" / "python"), "-I", "-S", *args], writable=writable, ro_binds=binds,
                     input=input, timeout_s=timeout_s)


@lru_cache(maxsize=256)
def locate_config(env: Path, snapshot: Path, files: tuple[str, ...]) -> tuple[str, str | None]:
    """(rootdir, configuration file or None), relative to the repository, that the environment's
    pytest picks for ``files`` on the pristine snapshot (only files are read there)."""
    compiled_launcher(env)  # compiled here, off the event loop, before launch() asks for it
    try:
        with tempfile.TemporaryDirectory(prefix="coderl-locate-") as tmp:
            proc = run_env_python(env, [str(LAUNCHER), "locate", str(snapshot), str(site_packages(env)), *files],
                                  writable=Path(tmp), ro=[str(snapshot)], timeout_s=_LOCATE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvBuildError(f"cannot find the task's pytest configuration: {exc}") from exc
    try:
        found = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        why = proc.stderr.strip()[-300:] or f"exit {proc.returncode}"
        raise EnvBuildError(f"cannot find the task's pytest configuration: {why}") from exc

    def inside(path: str | None) -> str | None:
        rel = None if path is None else os.path.relpath(path, snapshot)
        return None if rel is None or rel.startswith("..") else rel

    return inside(found["rootdir"]) or ".", inside(found["inifile"])


@lru_cache(maxsize=256)
def compiled_launcher(env: Path) -> Path:
    """The launcher to run in ``env``: ``launcher.pyc`` beside ``reporter.pyc`` and ``rewrites.pyc``, compiled once by
    the environment's own interpreter into ``<env>/coderl-grading/<hash of the sources>/``, so a
    run does not compile them again (4 ms of CPU a run: the launcher is run as a script and the
    reporter's directory is read-only in the sandbox, so no byte code of theirs was ever cached).
    The directory is the environment's, which every sandbox binds read-only: the code under test
    can no more replace these files than the sources. Where it cannot be written: the source."""
    sources = [INSIDE_DIR / "launcher.py", INSIDE_DIR / "reporter.py", INSIDE_DIR / "rewrites.py",
               INSIDE_DIR / "django_runner.py", INSIDE_DIR / "preimport.py"]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:16]
    target = env / _COMPILED_DIR / digest
    built = built_once(target, lambda tmp: [str(env / "bin" / "python"), "-I", "-S", "-c", _COMPILE,
                                            *(str(x) for p in sources for x in (p, tmp / f"{p.stem}.pyc"))],
                       done="launcher.pyc", timeout_s=_LOCATE_TIMEOUT_S)
    return target / "launcher.pyc" if built else LAUNCHER


def launcher_build(env: Path, *parts: str) -> str | None:
    """A key for what the host caches per build of ``env`` (with ``parts``): the environment, its
    compiled launcher's sources and that file's inode and mtime, which stand for this build (one
    rebuilt at the same path, a newer pytest or a patched interpreter, compiles it anew and so
    gets a new key). None when the launcher runs from source or its file cannot be read."""
    launcher = compiled_launcher(env)
    if launcher == LAUNCHER:
        return None
    try:
        built = launcher.stat()
    except OSError:
        return None
    return hashlib.sha256("\0".join([str(env), launcher.parent.name, f"{built.st_ino}:{built.st_mtime_ns}", *parts])
                          .encode("utf-8", "surrogateescape")).hexdigest()[:32]


@lru_cache(maxsize=64)
def base_tree(snapshot: Path) -> dict[str, str]:
    """path -> git blob id of every file in the snapshot's base commit."""
    out = {}
    for entry in git("ls-tree", "-r", "-z", "HEAD", cwd=snapshot).split("\0"):
        meta, _, path = entry.partition("\t")
        if path and meta.split(" ")[1] == "blob":
            out[path] = meta.split(" ")[2]
    return out


RUNNER_PACKAGES = ("_pytest", "pytest", "pluggy")  # what the launcher imports to run and report the tests
# what pytest imports from the environment before any test module (its ini parser, its terminal
# writer's highlighter, its version checks): a repository of one of these is tested against the
# environment's copy, never the work tree's
RUNNER_DEPENDENCIES = ("iniconfig", "pygments", "packaging")


def runner_repository(base: dict[str, str]) -> str | None:
    """Why a repository cannot be graded by our reporter, when its base commit is the test runner
    itself (``pytest-dev/pytest``, ``pytest-dev/pluggy``: a package the launcher imports to run the
    tests, at the top of the tree or under ``src/``), or a package the runner imports before the
    tests run (``RUNNER_DEPENDENCIES``: ``pytest-dev/iniconfig``, ``pygments/pygments``,
    ``pypa/packaging``), else None. For the runner: its tests import the work tree's ``_pytest``
    and run under the pytest they test (its ``pytester`` runs it in process): the runner that
    makes the verdicts would be code the diff writes, so every record could be forged; and the
    environment's pristine pytest as the runner would shadow the work tree's, so the fix would
    never run (a right fix graded wrong). For a runner's dependency: the environment's copy is in
    ``sys.modules`` before any test module is imported, so the tests import it, not the work
    tree's, and a right fix is graded wrong (measured: a fix to ``pygments/`` or ``packaging/``,
    ``missing`` at collection). Never scored, rather than scored 0. Decided from the base commit
    alone, so a diff that adds such a package makes no repository ungradable (it is a runner
    shadow, checked as one)."""
    for package in (*RUNNER_PACKAGES, *RUNNER_DEPENDENCIES):
        for top in ("", "src/"):
            if f"{top}{package}/__init__.py" not in base:
                continue
            if package in RUNNER_PACKAGES:
                return (f"not gradable: the repository is the test runner itself ({top}{package}/ in the base commit): "
                        "its tests run under the pytest they test, whose reports the diff would write")
            return (f"not gradable: the repository is a package the test runner imports ({top}{package}/ in the base "
                    "commit): pytest imports the environment's copy before the tests, so they would test it, "
                    "not the work tree's")
    return None


def written_byte_code(upper: Path) -> list[str]:
    """The byte code a grading session's work tree got from the diff: every ``__pycache__``
    directory and ``.pyc`` / ``.pyo`` file (or a link so named) in its overlay's upper layer, which
    holds only what the diff and the restores wrote (read on the host before any code of the
    repository runs; no link followed; a deletion's whiteout is no byte code). When there is none,
    every ``.pyc`` the work tree holds is the snapshot's own, compiled on the host from the pristine
    sources (``swe.bytecode``), and the run may read it (``launcher.byte_code``)."""
    found = []
    for top, dirs, files in os.walk(upper):  # links to directories are listed in dirs, never entered
        for name in (*dirs, *files):
            path = os.path.join(top, name)
            if name == "__pycache__" or name.endswith((".pyc", ".pyo")):
                st = os.lstat(path)
                if not (stat.S_ISCHR(st.st_mode) and st.st_rdev == 0):
                    found.append(os.path.relpath(path, upper))
        dirs[:] = [d for d in dirs if d != "__pycache__" and not os.path.islink(os.path.join(top, d))]
    return sorted(found)




def launch(task: RepoTask, env: Path, rootdir: str, inifile: str | None) -> tuple[str, dict]:
    """The launcher's command line and its spec (with a fresh nonce)."""
    root = os.path.normpath(os.path.join(REPO, rootdir))
    pinned = ["-c", f"{REPO}/{inifile}"] if inifile else ["-c", "/dev/null", "--confcutdir", root]
    args = [*pytest_args(task.test_cmd), "-p", "no:cacheprovider", *pinned, "--rootdir", root, *test_files(task)]
    environ = {"PATH": f"{env}/bin:/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
               "TMPDIR": "/tmp", "VIRTUAL_ENV": str(env), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **USER_ENV}
    services = task.env.services  # their variables (where the suite reads their address) never override the run's
    environ = {**service_env(services, env), **environ}
    spec = {"nonce": secrets.token_hex(32), "args": args, "wanted": list(task.tests),
            "protected": sorted(task.protected_files), "site_packages": str(site_packages(env)), "env": environ}
    python = shlex.quote(str(env / "bin" / "python"))
    command = f"exec {python} -I -S {shlex.quote(str(compiled_launcher(env)))}"
    return start_services(services, env) + command, spec


def start_services(services: tuple[TestService, ...], env: Path) -> str:
    """The shell prefix that starts the task's test services (``pytest_inside/services.py``) before
    the launcher, in the same command (a session kills what a command started when it returns):
    stdin from /dev/null and stdout onto stderr, since the command's stdin holds the spec's nonce
    and its stdout is the records channel; if one does not start, the command ends with
    ``EXIT_SERVICE`` before pytest (``service_failed``). '' when there are none."""
    if not services:
        return ""
    return f"{shlex.join(services_argv(services, env))} </dev/null >&2 || exit {EXIT_SERVICE}; "


def services_argv(services: tuple[TestService, ...], env: Path) -> list[str]:
    """The starter's command line, one for grading runs and episodes: the environment's Python on
    ``pytest_inside/services.py`` with the services as it takes them (a TLS front's certificate
    directory: the environment's, ``service_tls``)."""
    tls = {"tls_dir": str(service_tls.tls_dir(env))}
    spec = json.dumps([{**s.to_dict(), **(tls if s.tls_port else {})} for s in services])
    return [str(env / "bin" / "python"), "-I", "-S", str(INSIDE_DIR / "services.py"), spec]


def services_binds(task: RepoTask | None) -> tuple[str, ...]:
    """What a session on ``task`` binds read-only to start its test services: the starter's
    directory (``INSIDE_DIR``), only when it has services."""
    return (str(INSIDE_DIR),) if task is not None and task.env.services else ()


async def start_in_session(session: Session, services: tuple[TestService, ...], env: Path) -> None:
    """The task's test services started in an agent episode's sandbox as a grading run starts
    them (the same starter, ``pytest_inside/services.py``, with the same services and certificate),
    but kept for the episode (``--hold``, ``Session.keep``): every command of the episode reaches
    them, the way its grading will. The session must have been opened with ``services_binds`` and
    ``service_env``'s variables. A service that does not start is ``SessionFailure`` (the task's
    environment's fault: the episode is dropped, never scored)."""
    if not services:
        return
    run = await session.keep([*services_argv(services, env), "--hold"], timeout_s=SERVICES_START_S + 30)
    if run.timed_out or run.exit_code is not None:
        raise SessionFailure(f"session {session.id}: a test service of the task's environment did not start: "
                             f"{run.stdout.strip()[-600:]}")


def service_env(services: tuple[TestService, ...], env: Path) -> dict[str, str]:
    """The variables the task's test services add to the tests' environment (where the suite
    reads their addresses; with a TLS front, ``SSL_CERT_FILE`` naming the environment's
    certificate: ``service_tls``)."""
    out = {k: v for service in services for k, v in service.env}
    if any(s.tls_port for s in services):
        out["SSL_CERT_FILE"] = str(service_tls.tls_dir(env) / service_tls.CERT)
    return out


def service_failed(task: RepoTask, run: ExecResult) -> str | None:
    """Why the run never reached pytest because a test service did not start (its own message on
    stderr), else None: the run's stdout is empty (the launcher never ran: it writes the first
    record before any code of the repository) and its exit status is ``EXIT_SERVICE``."""
    if task.env.services and run.exit_code == EXIT_SERVICE and not run.stdout.strip():
        return f"a test service of the task's environment did not start: {run.stderr.strip()[-600:]}"
    return None
