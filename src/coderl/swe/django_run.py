"""The grading run of a Django-run repository (``django/django``): its ``tests/runtests.py`` with the
row's test labels, under the launcher's supervisor and ``pytest_inside/django_runner.py``'s records.

A task runs this way when its ``test_cmd`` runs ``tests/runtests.py`` (SWE-bench's Django command,
``DJANGO_TEST_CMD``). What is pinned, made on the host before the agent's diff is anywhere:

- the runner and the settings: every file under ``tests/`` is the base commit's (with the task's
  test patch on top): a diff's sections there are dropped and the paths restored, so
  ``runtests.py``, the settings module it is told to use (``--settings``, from the task's command,
  never the diff's) and every test app are the pristine ones;
- the arguments: ``--settings`` from the task's command, ``--verbosity 2 --parallel 1`` (one
  process: the records come from it), then the labels, as SWE-bench runs them: the test modules
  of the test patch's files under ``tests/`` (``tests/a/test_b.py`` -> ``a.test_b``);
- the environment: the same clean one as pytest's (``session.USER_ENV`` too), less the plugin switch.
"""

from __future__ import annotations

import os
import secrets
import shlex
from pathlib import Path

from coderl.sandbox.session import REPO, USER_ENV
from coderl.swe.environment import site_packages
from coderl.swe.grading_run import compiled_launcher
from coderl.swe.patch import split_diff
from coderl.swe.task import InvalidTask, RepoTask

RUNTESTS = "tests/runtests.py"
TESTS_DIR = "tests/"
DJANGO_TEST_CMD = "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"  # SWE-bench's
DEFAULT_SETTINGS = "test_sqlite"
DJANGO_REPOS = frozenset({"django/django"})


def runs_django_repo(repo: str) -> bool:
    """Whether a SWE-bench row of ``repo`` runs its tests under ``tests/runtests.py`` (its ids are
    unittest's ``name (module.Class)``, its command ``DJANGO_TEST_CMD``)."""
    return repo in DJANGO_REPOS


def runs_django(task: RepoTask) -> bool:
    """Whether the task's tests run under ``tests/runtests.py`` (Django's runner)."""
    words = shlex.split(task.test_cmd)
    if words[:1] in (["python"], ["python3"]):
        words = words[1:]
    return bool(words) and os.path.normpath(words[0]) == RUNTESTS


def settings_module(task: RepoTask) -> str:
    """The ``--settings`` of the task's command (``test_sqlite`` when it names none)."""
    words = shlex.split(task.test_cmd)
    for i, word in enumerate(words):
        if word.startswith("--settings="):
            return word.split("=", 1)[1]
        if word == "--settings" and i + 1 < len(words):
            return words[i + 1]
    return DEFAULT_SETTINGS


def labels(task: RepoTask) -> list[str]:
    """The test modules SWE-bench runs for the task: its test patch's ``.py`` files under ``tests/``."""
    out = []
    for section in split_diff(task.test_patch):
        path = section.new_path or section.old_path
        if path and path.startswith(TESTS_DIR) and path.endswith(".py") and path != RUNTESTS:
            module = path[len(TESTS_DIR):-3].replace("/", ".")
            out.append(module.removesuffix(".__init__"))
    if not out:
        raise InvalidTask(f"{task.instance_id}: the test patch touches no test module under tests/ (nothing to label)")
    return list(dict.fromkeys(out))


def runner_paths(diff: str) -> list[str]:
    """The paths under ``tests/`` a diff touches: the runner's, never the agent's to change."""
    return sorted({p for section in split_diff(diff) for p in section.paths if p.startswith(TESTS_DIR)})


def launch(task: RepoTask, env: Path) -> tuple[str, dict]:
    """The launcher's command line and its spec (with a fresh nonce) for ``runtests.py``."""
    args = [f"--settings={settings_module(task)}", "--verbosity", "2", "--parallel", "1", *labels(task)]
    environ = {"PATH": f"{env}/bin:/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
               "TMPDIR": "/tmp", "VIRTUAL_ENV": str(env), **USER_ENV}
    protected = sorted({*task.protected_files, RUNTESTS})
    spec = {"runner": "django", "nonce": secrets.token_hex(32), "args": args, "wanted": list(task.tests),
            "protected": protected, "site_packages": str(site_packages(env)), "env": environ, "repo": REPO}
    command = f"exec {shlex.quote(str(env / 'bin' / 'python'))} -I -S {shlex.quote(str(compiled_launcher(env)))}"
    return command, spec
