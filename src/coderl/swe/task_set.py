"""coderl's own repository tasks (``coderl/swe/tasks/<name>/``), built into git mirrors.

Each task directory holds ``repo/`` (the buggy tree, tests included), ``fix/`` (the files the
fix replaces) and ``task.json`` (problem statement, FAIL_TO_PASS, PASS_TO_PASS, test files,
environment, and ``split``: ``train`` or ``heldout``, declared there once so that training data
and held-out evaluation can never pick the same task). The builder commits ``repo/`` as the base
commit and ``fix/`` on top of it, as an upstream repository would have them (the snapshot of a
task holds the base commit only), so the gold patch is ``git diff base fix``. Commit dates and authors are fixed, so the shas are the same
on every machine.
"""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

from coderl.errors import BadRequest
from coderl.swe.store import build_once, git
from coderl.swe.task import RepoTask

_DATE = {"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
SPLITS = ("train", "heldout")


def task_dirs() -> list[Path]:
    root = Path(str(resources.files("coderl.swe") / "tasks"))
    return sorted(p for p in root.iterdir() if (p / "task.json").is_file())


def build_task_set(dest: Path, split: str | None = None) -> list[RepoTask]:
    """Mirrors under ``dest/repos`` and the tasks as rows in ``dest/tasks.jsonl``; idempotent.
    ``split`` (``train`` or ``heldout``) keeps that split's tasks only; None keeps every task."""
    if split is not None and split not in SPLITS:
        raise BadRequest(f"unknown split {split!r}: the builtin tasks are split into {' and '.join(SPLITS)}")
    repos = dest / "repos"
    tasks = []
    for task_dir in task_dirs():
        meta = json.loads((task_dir / "task.json").read_text())
        if split is not None and meta.get("split") != split:
            continue
        mirror = build_once(repos / meta["repo"].replace("/", "__"), lambda tmp, d=task_dir: _commit_tree(d, tmp))
        base = git("rev-parse", "HEAD~1", cwd=mirror).strip()
        gold = git("diff", "--no-color", "--binary", "HEAD~1", "HEAD", cwd=mirror)
        tasks.append(RepoTask.from_row({**meta, "base_commit": base, "patch": gold}))
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "tasks.jsonl").write_text("".join(json.dumps(t.to_row()) + "\n" for t in tasks))
    return tasks


def _commit_tree(task_dir: Path, tmp: Path) -> Path:
    shutil.copytree(task_dir / "repo", tmp, dirs_exist_ok=True)
    (tmp / ".gitignore").write_text("__pycache__/\n*.pyc\n.pytest_cache/\n")
    git("init", "-q", "-b", "main", cwd=tmp)
    git("add", "-A", cwd=tmp)
    git("commit", "-q", "-m", "base", cwd=tmp, env=_DATE)
    shutil.copytree(task_dir / "fix", tmp, dirs_exist_ok=True, copy_function=shutil.copy)  # new mtimes: git sees the change
    git("add", "-A", cwd=tmp)
    git("commit", "-q", "-m", "fix", cwd=tmp, env=_DATE)
    return tmp
