"""The host's cache of the protected test files' pristine compilation (``pytest_inside/rewrites.Pristine``).

A grading run compiles the task's protected test files, as the grading sandbox holds them (the base
commit's, with the task's test patch), the way pytest's assertion rewriting compiles a test module,
before any code of the repository runs: the code objects every wanted test's function is checked
against. Those bytes are the same in every grading of the task, so the host compiles them once
(``fill``: the launcher's own ``Pristine`` in the environment's interpreter, given the bytes, reading
no work tree) into a directory of the task's (``cache_dir``: under the grader's cache, never inside an
environment, bound read-only into that task's grading sandboxes alone: it holds the task's test patch,
which an agent's episode must not read), each variant under a hash of the file's path, the variant, the
names kept and the bytes (``rewrites.cache_key``). A run loads the variant whose key its own reading of the file
gives, else compiles as before: what it compares with is the same code, made from the same bytes by
the same interpreter and pytest, by code the code under test never reaches.

The grader takes the bytes (``missing``) from the grading sandbox's work tree once the protected files
are restored and the test patch applied, before its launcher's go-ahead (nothing of the repository has
run): each file opened without following a link, and only regular files up to ``MAX_FILE_BYTES``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import subprocess
from pathlib import Path

from coderl.errors import CoderlError
from coderl.sandbox.session import REPO
from coderl.swe.environment import site_packages
from coderl.swe.grading_run import compiled_launcher, launcher_build, run_env_python
from coderl.swe.pytest_inside.launcher import wanted_names
from coderl.swe.pytest_inside.rewrites import Pristine, cache_key
from coderl.swe.task import RepoTask

CACHE = "grading-pristine"
MAX_FILE_BYTES = 4 << 20
MAX_FILES = 64
_FILL_TIMEOUT_S = 120


def cache_dir(root: Path, env: Path, task: RepoTask) -> Path | None:
    """The task's cache under ``root`` (the grader's cache): one directory per environment, compiled
    launcher (its sources' hash, so a change of ``Pristine`` starts a new one) and task (its test
    patch); made now. None when the launcher runs from source."""
    name = launcher_build(env, task.instance_id, task.test_patch)  # a rebuilt environment starts a new cache
    if name is None:
        return None
    path = root / CACHE / name
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:  # no cache (a full or read-only disk): the runs compile the files themselves
        return None
    return path


def missing(cache: Path, tree: Path, protected: list[str], wanted: list[str], repo: str = REPO) -> dict[str, bytes]:
    """The protected Python files of the work tree at ``tree`` (the sandbox's ``repo``) that lack a
    cached variant, with their bytes ({} when every one is there)."""
    names = wanted_names(wanted)
    found: dict[str, bytes] = {}
    for rel in [p for p in protected if p.endswith(".py")][:MAX_FILES]:
        data = read_regular(tree, rel)
        if data is None:
            continue
        path = os.path.join(repo, rel)
        keep = "\n".join(sorted(names.get(rel, ())))
        keys = [cache_key(hashlib.sha256, path, variant, partial, keep, data)
                for variant, partial in Pristine.CACHED if keep or not partial]
        if not all((cache / key).exists() for key in keys):
            found[rel] = data
    return found


def fill(env: Path, cache: Path, files: dict[str, bytes], wanted: list[str], repo: str = REPO) -> None:
    """Compile ``files`` (path in the work tree -> bytes) into ``cache`` with the environment's
    interpreter and pytest (``launcher.fill_pristine``). Best effort: a failure leaves the runs
    compiling those files themselves."""
    if not files:
        return
    request = {"repo": repo, "wanted": list(wanted),
               "files": {rel: base64.b64encode(data).decode() for rel, data in files.items()}}
    args = [str(compiled_launcher(env)), "pristine", str(site_packages(env)), str(cache)]
    try:  # boxed: the environment's interpreter reads its .pth files (grading_run.run_env_python)
        run_env_python(env, args, writable=cache, input=json.dumps(request), timeout_s=_FILL_TIMEOUT_S)
    except (CoderlError, OSError, subprocess.TimeoutExpired):
        return


def read_regular(tree: Path, rel: str) -> bytes | None:
    """The bytes of ``tree/rel`` when every part of the path is a directory or, last, a regular file,
    none of them a link, and it holds at most ``MAX_FILE_BYTES``; else None."""
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    try:
        fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
        leaf = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        with os.fdopen(leaf, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            data = fh.read(MAX_FILE_BYTES + 1)
        return data if len(data) <= MAX_FILE_BYTES else None
    except OSError:
        return None
    finally:
        os.close(fd)
