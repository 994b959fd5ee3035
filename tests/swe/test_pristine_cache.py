"""The protected test files' pristine compilation, made once on the host (``swe.pristine_cache``,
issue 49 item 5): the host's fill gives the same code objects a run compiles itself; a run loads
them only for the bytes they were made from; the host reads the work tree's files without following
a link; and the grader's runs do load them (an entry replaced on the host is what a run compares
the tests with: it grades the gold patch ``tampered``), while the grading sandbox cannot write there."""

from __future__ import annotations

import ast
import asyncio
import base64
import json
import marshal
import os
import shutil
import subprocess
import sys
import sysconfig
import uuid
from pathlib import Path

import pytest
from _pytest.assertion.rewrite import rewrite_asserts

from coderl.cache import default_cache_dir
from coderl.sandbox.session import SessionHost
from coderl.swe import pristine_cache
from coderl.swe.grader import RepoGrader
from coderl.swe.grading_run import LAUNCHER
from coderl.swe.pytest_inside import rewrites
from coderl.swe.store import RepoStore
from coderl.swe.task_set import build_task_set

SOURCE = b'''"""A test module."""
import os


def helper(x):
    return x + 1


class TestThing:
    def test_one(self):
        assert helper(1) == 2, "one"


def test_two():
    assert os.sep in ("/", "\\\\")
'''


def _fill(repo: Path, cache: Path, files: dict[str, bytes], wanted: list[str]) -> None:
    """The launcher's ``pristine`` mode, as ``pristine_cache.fill`` runs it (here with this
    interpreter and its pytest, the launcher from source)."""
    request = {"repo": str(repo), "wanted": wanted, "files": {k: base64.b64encode(v).decode() for k, v in files.items()}}
    subprocess.run([sys.executable, "-I", "-S", str(LAUNCHER), "pristine", sysconfig.get_paths()["purelib"], str(cache)],
                   input=json.dumps(request).encode(), check=True, capture_output=True, timeout=120)


def test_the_hosts_compilation_is_the_runs_and_is_used_only_for_its_bytes(tmp_path):
    repo, cache = tmp_path / "repo", tmp_path / "cache"
    (repo / "tests").mkdir(parents=True)
    cache.mkdir()
    path = repo / "tests" / "test_thing.py"
    path.write_bytes(SOURCE)
    _fill(repo, cache, {"tests/test_thing.py": SOURCE}, ["tests/test_thing.py::TestThing::test_one"])
    assert len(os.listdir(cache)) == len(rewrites.Pristine.CACHED)  # each variant that needs no configuration

    names = frozenset({"TestThing"})
    cached = rewrites.Pristine(rewrite_asserts, ast.parse, compile, str(cache))
    cached.add(str(path), names)
    own = rewrites.Pristine(rewrite_asserts, ast.parse, compile)
    own.add(str(path), names)
    for variant, partial in rewrites.Pristine.CACHED:
        loaded = cached._cached(str(path), variant, partial, None)
        assert loaded is not None and loaded == own.compile(str(path), variant, partial, None), (variant, partial)
    whole = own.compile(str(path), "rewritten", False, None)
    test_two = next(c for c in whole.co_consts if getattr(c, "co_name", "") == "test_two")
    assert cached.holds(test_two, None)  # found in the whole file's cached variant

    path.write_bytes(SOURCE.replace(b"== 2", b"== 3"))  # other bytes: compiled by the run, the cache unused
    changed = rewrites.Pristine(rewrite_asserts, ast.parse, compile, str(cache))
    changed.add(str(path), names)
    assert all(changed._cached(str(path), v, p, None) is None for v, p in rewrites.Pristine.CACHED)
    assert changed.holds(test_two, None)
    moved = rewrites.Pristine(rewrite_asserts, ast.parse, compile, str(cache))  # the same bytes at another path
    (repo / "other.py").write_bytes(SOURCE)
    moved.add(str(repo / "other.py"), names)
    assert all(moved._cached(str(repo / "other.py"), v, p, None) is None for v, p in rewrites.Pristine.CACHED)


def test_the_host_reads_no_link_and_no_special_file(tmp_path):
    tree = tmp_path / "tree"
    (tree / "tests").mkdir(parents=True)
    (tree / "tests" / "test_a.py").write_text("x = 1\n")
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "test_a.py").write_text("host file\n")
    (tree / "linked").symlink_to(secret)
    (tree / "tests" / "test_link.py").symlink_to(secret / "test_a.py")
    os.mkfifo(tree / "tests" / "test_fifo.py")
    assert pristine_cache.read_regular(tree, "tests/test_a.py") == b"x = 1\n"
    for rel in ("linked/test_a.py", "tests/test_link.py", "tests/test_fifo.py", "tests/../tests/test_a.py", "tests"):
        assert pristine_cache.read_regular(tree, rel) is None, rel


@pytest.fixture(scope="module")
def intervals(tmp_path_factory):
    root = tmp_path_factory.mktemp("swe")
    task = next(t for t in build_task_set(root) if "intervals" in t.instance_id)
    return root, task


def test_the_grader_fills_and_its_runs_load_the_cache_which_they_cannot_write(intervals, monkeypatch):
    root, task = intervals
    monkeypatch.setattr(pristine_cache, "CACHE", f"grading-pristine-test-{uuid.uuid4().hex[:8]}")  # ours alone
    base = default_cache_dir() / pristine_cache.CACHE

    async def grade(host: SessionHost, diff: str):  # type: ignore[no-untyped-def]
        grader = RepoGrader(host, RepoStore(root / "repos", root / "cache"), env_cache=default_cache_dir())
        try:
            return await grader.grade(task, diff)
        finally:
            await grader.aclose()  # the cache's fill, in the background, done

    async def main():  # type: ignore[no-untyped-def]
        async with SessionHost() as host:
            first = await grade(host, task.gold_patch)
            (cache,) = base.iterdir()
            entries = sorted(cache.iterdir())
            assert entries, "the grader filled no cache"
            snapshot = RepoStore(root / "repos", root / "cache").snapshot(task.repo, task.base_commit)
            session = await host.open(snapshot, ro_binds=[str(cache)])  # as a grading sandbox binds it
            try:
                wrote = await session.exec(f"echo x > {cache}/{entries[0].name}; touch {cache}/new", timeout_s=60)
            finally:
                await session.close()
            real = {entry: entry.read_bytes() for entry in entries}
            for entry in entries:  # what the runs compare the tests with: another module's code
                entry.write_bytes(marshal.dumps(compile("pass\n", "elsewhere.py", "exec")))
            poisoned = await grade(host, task.gold_patch)
            assert all(entry.read_bytes() != real[entry] for entry in entries)
            for entry in entries:
                entry.unlink()
            again = await grade(host, task.gold_patch)
            return first, wrote, poisoned, again, sorted(cache.iterdir()) == entries

    try:
        first, wrote, poisoned, again, refilled = asyncio.run(main())
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert first.status == "resolved", first
    assert wrote.exit_code != 0 and "Read-only" in wrote.stderr, wrote
    assert poisoned.status == "tampered" and any("compiles to" in f for f in poisoned.findings), poisoned
    assert again.status == "resolved" and refilled, again
