"""Pristine repository snapshots, made once per (repo, base commit) from what the user provides.

Repositories come from a local directory (no network at training time), in either form:
- a mirror: ``<dir>/<owner>__<name>`` (SWE-bench's instance-id spelling), ``<dir>/<owner>/<name>``
  or ``<dir>/<name>``, each a git repository, bare or not, optionally ending in ``.git``;
- a tarball of one: ``<dir>/<owner>__<name>.tar.gz`` (or ``.tgz``, ``.tar``), unpacked once into
  the cache (safe extraction: no links or paths out of the destination);
- a git bundle: ``<dir>/<owner>__<name>.bundle``, cloned once into the cache (a bundle per
  repository whose tags name instances, as ../shared/data/swe-bench-lite/ has them).

A snapshot is a fresh repository holding the base commit and its history only, checked out: the
commits after it (the upstream fix, in a SWE-bench mirror) are not in it, so an agent cannot find
the answer with ``git log --all`` (nor in a reflog, ``FETCH_HEAD`` or a dangling object). It is
built beside its final place and renamed into it, so a snapshot that exists is complete, and every
episode and grading run mounts it read-only under its own overlay.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

from coderl.cache import file_lock
from coderl.errors import RepoUnavailable

_TARBALL_SUFFIXES = (".tar.gz", ".tgz", ".tar")
_SHA = re.compile(r"^[0-9a-f]{40}$")
_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": "coderl", "GIT_AUTHOR_EMAIL": "coderl@localhost",
            "GIT_COMMITTER_NAME": "coderl", "GIT_COMMITTER_EMAIL": "coderl@localhost"}


def git(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """Our own git on trusted repositories (mirrors, snapshots), with no user or system config."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **_GIT_ENV, **(env or {})})
    if proc.returncode != 0:
        raise RepoUnavailable(f"git {' '.join(args[:2])} failed: {proc.stderr.strip()[-300:]}")
    return proc.stdout


class RepoStore:
    def __init__(self, repos_dir: Path, cache_dir: Path) -> None:
        self.repos_dir = repos_dir
        self.cache_dir = cache_dir

    def mirror(self, repo: str) -> Path | None:
        """The local git repository of ``repo`` ("owner/name"), unpacking a tarball if that is
        what there is; None when neither is there."""
        owner_name = repo.replace("/", "__")
        name = repo.rsplit("/", 1)[-1]
        for rel in (owner_name, repo, name):
            for suffix in ("", ".git"):
                path = self.repos_dir / (rel + suffix)
                if path.is_dir() and ((path / ".git").exists() or (path / "HEAD").is_file()):
                    return path
        bundle = self.repos_dir / f"{owner_name}.bundle"
        if bundle.is_file():
            return self._clone_bundle(bundle, owner_name)
        for rel in (owner_name, name):
            for suffix in _TARBALL_SUFFIXES:
                tarball = self.repos_dir / (rel + suffix)
                if tarball.is_file():
                    return self._unpack(tarball, self.cache_dir / "mirrors" / owner_name)
        return None

    def has(self, repo: str) -> bool:
        return self.mirror(repo) is not None

    def snapshot(self, repo: str, commit: str) -> Path:
        """The checked-out pristine tree of ``repo`` at ``commit`` (a full 40-hex sha)."""
        if not _SHA.match(commit):
            raise RepoUnavailable(f"base commit {commit!r} is not a full 40-hex sha")
        dest = snapshot_path(self.cache_dir, repo, commit)
        if dest.is_dir():
            return dest
        source = self.mirror(repo)
        if source is None:
            raise RepoUnavailable(f"repository {repo} is not in {self.repos_dir} (as a mirror or a tarball)")

        def build(tmp: Path) -> Path:
            git("init", "-q", "-b", "main", str(tmp))
            try:
                git("fetch", "-q", "--no-tags", f"file://{source.resolve()}", commit, cwd=tmp)
            except RepoUnavailable as exc:
                raise RepoUnavailable(f"commit {commit} is not in the mirror of {repo}") from exc
            git("reset", "-q", "--hard", commit, cwd=tmp)
            git("update-index", "-q", "--refresh", cwd=tmp)
            _scrub(tmp / ".git")
            return tmp

        return build_once(dest, build)

    def _clone_bundle(self, bundle: Path, owner_name: str) -> Path:
        """A bundle's refs and objects as a bare repository in the cache, once per bundle content
        (SWE-bench Lite's offline bundles: one tag per instance, each an orphan commit)."""
        digest = hashlib.sha256()
        with bundle.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)

        def build(tmp: Path) -> Path:
            git("clone", "-q", "--mirror", str(bundle.resolve()), str(tmp / "git"))
            return tmp / "git"

        return build_once(self.cache_dir / "mirrors" / f"{owner_name}.bundle-{digest.hexdigest()[:16]}", build)

    def _unpack(self, tarball: Path, dest: Path) -> Path:
        def build(tmp: Path) -> Path:
            try:
                with tarfile.open(tarball) as tf:
                    tf.extractall(tmp, filter="data")
            except (tarfile.TarError, OSError) as exc:
                raise RepoUnavailable(f"cannot unpack {tarball}: {exc}") from exc
            entries = list(tmp.iterdir())
            root = entries[0] if len(entries) == 1 and entries[0].is_dir() else tmp
            if not ((root / ".git").exists() or (root / "HEAD").is_file()):
                raise RepoUnavailable(f"{tarball} holds no git repository")
            return root

        return build_once(dest, build)


def snapshot_path(cache_dir: Path, repo: str, commit: str) -> Path:
    """Where the snapshot of ``repo`` at ``commit`` lives in ``cache_dir`` (``RepoStore.snapshot``
    builds it there; an environment built from a project's tree reads it there)."""
    return cache_dir / "snapshots" / f"{repo.replace('/', '__')}@{commit[:16]}"


def _scrub(git_dir: Path) -> None:
    """What the fetch and the checkout leave that points elsewhere: ``FETCH_HEAD`` (it names the
    mirror), ``ORIG_HEAD`` and the reflog. The fetch by sha brings the base commit's history only
    (no tags, no other refs, nothing dangling); tests/swe/test_grader_redteam.py checks each."""
    for name in ("FETCH_HEAD", "ORIG_HEAD"):
        (git_dir / name).unlink(missing_ok=True)
    shutil.rmtree(git_dir / "logs", ignore_errors=True)


def build_once(dest: Path, build: Callable[[Path], Path]) -> Path:
    """``dest`` made once across processes: under a lock, ``build`` fills a directory beside it and
    names what becomes ``dest`` (that directory or one inside it), which is renamed into place, so a
    ``dest`` that exists is complete."""
    if dest.is_dir():
        return dest
    with file_lock(dest):
        if dest.is_dir():
            return dest
        tmp = dest.with_name(dest.name + ".building")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            os.rename(build(tmp), dest)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return dest
