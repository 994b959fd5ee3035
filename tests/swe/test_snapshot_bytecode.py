"""A snapshot's byte code is compiled once, on the host, for the environment's interpreter (issue 49
item 2): an episode's first import reads it and writes nothing (no byte code in its layer), an
edited module is compiled afresh (the timestamp check), and neither ``git status`` nor the diff
sees the byte code."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from coderl.sandbox import upper_changes
from coderl.sandbox.session import SessionHost, SessionLimits
from coderl.swe.bytecode import compile_snapshot
from coderl.swe.environment import build_env
from coderl.swe.task import EnvSpec

LIMITS = SessionLimits(episode_s=120, exec_s=30, memory_mb=512, max_processes=64, output_kb=64, disk_mb=32)


def _snapshot(path: Path) -> Path:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    (path / "pkg" / "sub").mkdir(parents=True)
    (path / "pkg" / "__init__.py").write_text("from pkg.sub import mod\nVALUE = mod.VALUE\n")
    (path / "pkg" / "sub" / "__init__.py").write_text("")
    (path / "pkg" / "sub" / "mod.py").write_text("VALUE = 1\n")
    (path / "py2_fixture.py").write_text("print 'a test fixture in Python 2'\n")  # does not compile: skipped
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", *cmd], cwd=path, env=env, check=True)
    return path


def test_an_episode_imports_the_snapshots_byte_code_and_writes_none(tmp_path):
    snapshot = _snapshot(tmp_path / "snapshots" / "pkg@0")
    env = build_env(EnvSpec(requirements=()), tmp_path / "cache")
    assert compile_snapshot(snapshot, env)
    compiled = sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*.pyc"))
    assert len(compiled) == 3 and all("__pycache__/" in p for p in compiled), compiled
    assert compile_snapshot(snapshot, env)  # once: the marker says so
    marker = next(snapshot.parent.glob("pkg@0.pyc-cpython-*"))

    async def main() -> tuple[str, str, list[bytes] | None, str, str, str]:
        async with SessionHost() as host, await host.open(snapshot, env_dir=env, limits=LIMITS) as s:
            first = await s.exec("python -c 'import pkg; print(pkg.VALUE)'")
            written = upper_changes.changed_paths(s.layer.upper)
            status = await s.exec("git status --porcelain")
            edited = await s.exec("echo 'VALUE = 22' > pkg/sub/mod.py && python -c 'import pkg; print(pkg.VALUE)'")
            diff = await s.finish()
            return first.stdout, edited.stdout, written, diff, first.stderr, status.stdout

    first, edited, written, diff, err, status = asyncio.run(main())
    assert first == "1\n", err
    assert status == "", status  # the byte code is excluded (.git/info/exclude)
    assert written == [], written  # the first import wrote no byte code into the episode's layer
    assert edited == "22\n"  # an edited module's byte code is stale by its timestamp: compiled afresh
    assert "b/pkg/sub/mod.py" in diff and "pyc" not in diff and "__pycache__" not in diff
    assert marker.is_file()
