"""The diff capture compares only what the episode's upper layer holds (issue 49 item 3): every kind
of change an agent can make is in the diff exactly as the whole-tree comparison finds it, and
the paths compared are the written ones, not the tree."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from coderl.sandbox import upper_changes
from coderl.sandbox.session import SessionHost, SessionLimits

LIMITS = SessionLimits(episode_s=120, exec_s=30, memory_mb=512, max_processes=64, output_kb=64, disk_mb=32)
EDITS = "; ".join([
    "echo changed >> keep/edited.py",                     # a tracked file written
    "echo same > keep/rewritten.py",                      # written with the content it had: no change
    "rm keep/deleted.py",                                 # a tracked file deleted (a whiteout)
    "rm -r gone",                                         # a tracked directory deleted (a whiteout)
    "rm -r again && mkdir again && echo new > again/b.py",  # deleted and made again (opaque)
    "mv moved renamed",                                   # a directory renamed (redirect, or a copy)
    "chmod +x keep/mode.py",                              # the mode alone
    "rm keep/link.py && ln -s edited.py keep/link.py",    # a file turned into a link
    "printf x > 'odd :(glob)*name'",                      # a new file whose name is pathspec magic
    "printf y > \"$(printf 'new\\nline')\"",              # a new file with a newline in its name
    "mkdir -p deep/er && echo z > deep/er/new.py",        # a new directory
    "rm keep/todir.py && mkdir keep/todir.py && echo i > keep/todir.py/inner.py",  # a file made a directory
    "mkdir -p build && echo o > build/out.o",             # ignored by the work tree's .gitignore: never in a diff
    "mkdir -p keep/__pycache__ && echo b > keep/__pycache__/m.cpython-311.pyc",  # byte code: never in a diff
])


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("repo")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    files = {"keep/edited.py": "a\n", "keep/rewritten.py": "same\n", "keep/deleted.py": "d\n", "keep/mode.py": "m\n",
             "keep/link.py": "l\n", "keep/untouched.py": "u\n", "keep/todir.py": "f\n", ".gitignore": "build/\n", "gone/x.py": "x\n", "gone/sub/y.py": "y\n",
             "again/a.py": "a\n", "moved/m.py": "m\n", "top.py": "t\n"}
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", *cmd], cwd=path, env=env, check=True)
    # byte code beside the sources, untracked, as a compiled snapshot holds it
    (path / "keep" / "__pycache__").mkdir()
    (path / "keep" / "__pycache__" / "edited.cpython-311.pyc").write_bytes(b"pyc")
    return path


def test_the_diff_from_the_upper_layer_is_the_whole_trees(repo, monkeypatch):
    async def main() -> tuple[str, str, list[bytes] | None]:
        async with SessionHost() as host, await host.open(repo, limits=LIMITS) as s:
            r = await s.exec(EDITS)
            assert r.ok, r.stderr
            await s._kill()  # what finish does first: no process of the episode left
            written = upper_changes.changed_paths(s.layer.upper)
            narrowed = await host.capture_diff(s)
            with monkeypatch.context() as m:
                m.setattr(upper_changes, "changed_paths", lambda *a: None)  # compare the whole tree
                whole = await host.capture_diff(s)
            return narrowed, whole, written

    narrowed, whole, written = asyncio.run(main())
    assert narrowed == whole
    for expected in ("b/keep/edited.py", "deleted file mode 100644", "a/gone/sub/y.py", "b/again/b.py",
                     "a/again/a.py", "b/renamed/m.py", "a/moved/m.py", "new mode 100755", "new file mode 120000",
                     "odd :(glob)*name", "b/deep/er/new.py", "a/keep/todir.py", "b/keep/todir.py/inner.py"):
        assert expected in narrowed, expected
    for absent in ("rewritten.py", "untouched.py", "top.py", "pyc", "out.o"):
        assert absent not in narrowed, absent
    assert written is not None
    assert b"keep/untouched.py" not in written and b"top.py" not in written  # only what was written is compared
    assert {b"keep/edited.py", b"keep/deleted.py", b"gone", b"again", b"new\nline"} <= set(written)


def test_an_episode_that_wrote_nothing_has_an_empty_diff_without_a_sandbox(repo):
    async def main() -> tuple[str, list[bytes] | None]:
        async with SessionHost() as host, await host.open(repo, limits=LIMITS) as s:
            await s.exec("cat top.py > /tmp/copy; ls -R > /dev/null")
            await s._kill()
            return await host.capture_diff(s), upper_changes.changed_paths(s.layer.upper)

    assert asyncio.run(main()) == ("", [])


def test_touched_reads_again_the_tracked_paths_at_under_and_above_a_written_one(tmp_path):
    for d in ("d", "f", "g"):  # the upper layer: g, a tracked file made a directory
        (tmp_path / d).mkdir()
    (tmp_path / "a.py").write_text("x")
    tracked = (b"a.py", b"d/sub/y.py", b"d/x.py", b"f", b"g", b"keep.py")
    stdin, untracked = upper_changes.touched(tracked, [b"a.py", b"d", b"f/new.py", b"g", b"n.txt"], bytes(tmp_path))
    assert stdin == b"a.py\0d/sub/y.py\0d/x.py\0f\0g\0"  # f: a tracked file above a written path
    assert untracked == [b"d", b"f/new.py", b"g", b"n.txt"]  # for ls-files -o: what the ignore rules let through
