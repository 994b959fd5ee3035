"""coderl.swe.store on its own, with real git: where a mirror is found, tarballs unpacked
safely, snapshots that hold the base commit and its history only, built once, and what is refused."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import threading
from pathlib import Path

import pytest

from coderl.swe.store import RepoStore, RepoUnavailable, build_once

GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, check=True).stdout.strip()


def make_mirror(path: Path, *, bare: bool = False) -> tuple[str, str]:
    """A repository with a base commit and a later one; returns (base sha, later sha)."""
    work = path if not bare else path.with_name(path.name + "-work")
    work.mkdir(parents=True)
    git(work, "init", "-q", "-b", "main")
    (work / "a.py").write_text("A = 1\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "base")
    base = git(work, "rev-parse", "HEAD")
    (work / "a.py").write_text("A = 2\n")
    git(work, "commit", "-q", "-am", "later")
    later = git(work, "rev-parse", "HEAD")
    if bare:
        subprocess.run(["git", "clone", "-q", "--bare", str(work), str(path)], env=GIT_ENV, check=True)
    return base, later


@pytest.mark.parametrize("rel, bare", [("acme__calc", False), ("acme/calc", False), ("calc", False),
                                       ("acme__calc.git", True), ("calc.git", True)])
def test_a_mirror_is_found_in_each_spelling(tmp_path, rel, bare):
    make_mirror(tmp_path / "repos" / rel, bare=bare)
    store = RepoStore(tmp_path / "repos", tmp_path / "cache")
    assert store.mirror("acme/calc") == tmp_path / "repos" / rel and store.has("acme/calc")
    assert store.mirror("acme/other") is None and not store.has("acme/other")


def test_a_directory_that_is_no_repository_is_no_mirror(tmp_path):
    (tmp_path / "repos" / "acme__calc").mkdir(parents=True)
    assert RepoStore(tmp_path / "repos", tmp_path / "cache").mirror("acme/calc") is None


def _tarball(path: Path, source: Path, arcname: str) -> None:
    with tarfile.open(path, "w:gz") as tf:
        tf.add(source, arcname=arcname)


def test_a_tarball_is_unpacked_once_into_the_cache(tmp_path):
    base, _ = make_mirror(tmp_path / "src" / "calc")
    (tmp_path / "repos").mkdir()
    _tarball(tmp_path / "repos" / "acme__calc.tar.gz", tmp_path / "src" / "calc", "calc-main")
    store = RepoStore(tmp_path / "repos", tmp_path / "cache")
    mirror = store.mirror("acme/calc")
    assert mirror == tmp_path / "cache" / "mirrors" / "acme__calc"  # its one top directory became the mirror
    assert git(mirror, "rev-parse", "HEAD~1") == base
    stamp = mirror.stat().st_ino
    assert store.mirror("acme/calc").stat().st_ino == stamp  # not unpacked again
    assert not list((tmp_path / "cache" / "mirrors").glob("*.building"))


def test_a_tarball_without_a_repository_or_with_an_escape_is_refused(tmp_path):
    (tmp_path / "repos").mkdir()
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "README").write_text("no git here\n")
    _tarball(tmp_path / "repos" / "acme__plain.tgz", tmp_path / "plain", "plain")
    with tarfile.open(tmp_path / "repos" / "acme__evil.tar", "w") as tf:
        data = b"owned\n"
        info = tarfile.TarInfo("../../escaped.txt")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    store = RepoStore(tmp_path / "repos", tmp_path / "cache")
    with pytest.raises(RepoUnavailable, match="holds no git repository"):
        store.mirror("acme/plain")
    with pytest.raises(RepoUnavailable, match="cannot unpack"):
        store.mirror("acme/evil")
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "cache" / "escaped.txt").exists()
    assert not (tmp_path / "cache" / "mirrors" / "acme__evil").exists()  # a failed unpack leaves nothing


def test_a_snapshot_is_the_base_commit_checked_out_with_its_history_only(tmp_path):
    base, later = make_mirror(tmp_path / "repos" / "acme__calc")
    store = RepoStore(tmp_path / "repos", tmp_path / "cache")
    snap = store.snapshot("acme/calc", base)
    assert snap == tmp_path / "cache" / "snapshots" / f"acme__calc@{base[:16]}"
    assert (snap / "a.py").read_text() == "A = 1\n" and git(snap, "rev-parse", "HEAD") == base
    assert git(snap, "status", "--porcelain") == "" and git(snap, "rev-list", "--all").split() == [base]
    assert subprocess.run(["git", "cat-file", "-e", later], cwd=snap, env=GIT_ENV).returncode != 0
    inode = snap.stat().st_ino
    assert store.snapshot("acme/calc", base).stat().st_ino == inode  # made once
    assert store.snapshot("acme/calc", later) != snap


@pytest.mark.parametrize("repo, commit, error", [
    ("acme/calc", "abc123", "not a full 40-hex sha"),
    ("acme/calc", "A" * 40, "not a full 40-hex sha"),
    ("acme/none", "0" * 40, r"repository acme/none is not in .*repos"),
    ("acme/calc", "0" * 40, f"commit {'0' * 40} is not in the mirror of acme/calc"),
])
def test_what_a_snapshot_refuses(tmp_path, repo, commit, error):
    make_mirror(tmp_path / "repos" / "acme__calc")
    store = RepoStore(tmp_path / "repos", tmp_path / "cache")
    with pytest.raises(RepoUnavailable, match=error):
        store.snapshot(repo, commit)
    assert not [p for p in (tmp_path / "cache").glob("snapshots/*") if p.is_dir()]  # (a lock file may stay)


def test_build_once_builds_once_across_threads_and_leaves_nothing_after_a_failure(tmp_path):
    dest = tmp_path / "made"
    builds = []

    def failing(tmp: Path) -> Path:
        (tmp / "half").write_text("x")
        raise RuntimeError("the build broke")

    with pytest.raises(RuntimeError, match="broke"):
        build_once(dest, failing)
    assert not dest.exists() and not dest.with_name("made.building").exists()

    def build(tmp: Path) -> Path:
        builds.append(threading.get_ident())
        (tmp / "inner").mkdir()
        (tmp / "inner" / "done").write_text("ok")
        return tmp / "inner"  # the builder names what becomes dest

    threads = [threading.Thread(target=build_once, args=(dest, build)) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a build_once thread did not finish in 60 s"
    assert len(builds) == 1 and (dest / "done").read_text() == "ok"
    assert not dest.with_name("made.building").exists()
