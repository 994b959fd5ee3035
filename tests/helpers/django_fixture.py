"""A real Django task for the Django grader's tests: Django 4.2.10's source distribution (its
``django/``, ``tests/runtests.py``, ``tests/test_sqlite.py`` and ``tests/humanize_tests/``) as the
base commit, and the fix 4.2.11 made to ``intcomma`` (a leading comma on ``100.1`` and
``-100,000.13``-shaped numbers) as the gold patch, with the test 4.2.11 added to
``humanize_tests.tests.HumanizeTests.test_intcomma`` as the test patch: the newer test fails on the
older code. The source distributions come from the package registry (``pip download``), once, into
the cache."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

from coderl.cache import READY, ready_once
from coderl.swe.django_run import DJANGO_TEST_CMD
from coderl.swe.store import git
from coderl.swe.task import EnvSpec, RepoTask

OLD, NEW = "4.2.10", "4.2.11"
KEPT = ("django/", "tests/runtests.py", "tests/test_sqlite.py", "tests/humanize_tests/")
FIXED = "django/contrib/humanize/templatetags/humanize.py"
TEST = "tests/humanize_tests/tests.py"
ENV = EnvSpec(requirements=("asgiref==3.7.2", "sqlparse==0.4.4"))  # Django 4.2's install_requires, pinned
DATE = {"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
# SWE-bench's names: ``name (module.Class)`` (its Django rows ran on Python before 3.11)
HUMANIZE = "humanize_tests.tests.HumanizeTests"
F2P = (f"test_intcomma ({HUMANIZE})",)
P2P = tuple(f"test_{n} ({HUMANIZE})" for n in ("ordinal", "intword", "apnumber", "naturaltime", "l10n_intcomma"))


def sdist(cache: Path, version: str) -> Path:
    """Django ``version``'s source distribution, downloaded once into ``cache``."""
    target = cache / "django-sdists" / f"Django-{version}.tar.gz"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                        f"django=={version}", "-d", str(target.parent)], check=True, capture_output=True, timeout=600)
    return target


def _members(tar: tarfile.TarFile, version: str) -> dict[str, bytes]:
    top = f"Django-{version}/"
    out = {}
    for m in tar.getmembers():
        rel = m.name.removeprefix(top)
        top_level = rel.startswith("tests/") and rel.count("/") == 1  # runtests.py's urls, settings
        if m.isfile() and (rel.startswith(KEPT) or top_level) and "__pycache__" not in rel:
            fh = tar.extractfile(m)
            assert fh is not None
            out[rel] = fh.read()
    return out


def django_repos(cache: Path) -> tuple[Path, dict[str, str]]:
    """The mirrors directory holding ``django__django`` (base commit: 4.2.10's files; on top:
    4.2.11's test, then its fix), built once into ``cache``, and the base commit, test patch and
    gold patch."""
    def build(dest: Path) -> str:
        with tarfile.open(sdist(cache, OLD)) as tar:
            old = _members(tar, OLD)
        with tarfile.open(sdist(cache, NEW)) as tar:
            new = _members(tar, NEW)
        work = dest / "repos" / "django__django"
        work.mkdir(parents=True)
        git("init", "-q", "-b", "main", cwd=work)
        (work / ".gitignore").write_text("__pycache__/\n*.pyc\n")
        for rel, data in old.items():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_bytes(data)
        (work / "tests" / "runtests.py").chmod(0o755)
        git("add", "-A", cwd=work)
        git("commit", "-q", "-m", f"Django {OLD}", cwd=work, env=DATE)
        base = git("rev-parse", "HEAD", cwd=work).strip()
        (work / TEST).write_bytes(new[TEST])
        git("commit", "-q", "-am", "test", cwd=work, env=DATE)
        test_patch = git("diff", "--no-color", base, "HEAD", cwd=work)
        (work / FIXED).write_bytes(new[FIXED])
        git("commit", "-q", "-am", "fix", cwd=work, env=DATE)
        gold = git("diff", "--no-color", "HEAD~1", "HEAD", cwd=work)
        return json.dumps({"base": base, "test_patch": test_patch, "gold": gold})

    dest = ready_once(cache / "django-fixture" / f"{OLD}-{NEW}", build)
    return dest / "repos", json.loads((dest / READY).read_text())


def make_django_task(cache: Path, instance_id: str = "django__django-intcomma") -> tuple[Path, RepoTask]:
    """The mirrors directory and the task (its test ids as SWE-bench's Django rows name them)."""
    repos, made = django_repos(cache)
    return repos, RepoTask(instance_id=instance_id, repo="django/django", base_commit=made["base"],
                           problem_statement="intcomma puts a leading comma before numbers like 100.1",
                           fail_to_pass=F2P, pass_to_pass=P2P, test_patch=made["test_patch"], gold_patch=made["gold"],
                           test_cmd=DJANGO_TEST_CMD, env=ENV)
