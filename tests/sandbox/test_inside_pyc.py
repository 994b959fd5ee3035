"""PID 1's modules come from byte code the host compiled once (coderl.sandbox.inside_pyc), bound
read-only with them at /coderl in one mount: used while it matches the bound sources (PID 1's own
module too: it is imported, not run as a script), never writable from the sandbox, the standard
library's modules from their own byte code, and a host that cannot compile it still starts sessions
(the modules bound file by file; PID 1 then compiles them itself)."""

from __future__ import annotations

import asyncio
import shlex
import subprocess
from pathlib import Path

import pytest

import coderl.sandbox.session as session_module
from coderl.sandbox import isolation
from coderl.sandbox.inside_pyc import PYC_INSIDE
from coderl.sandbox.session import PID1, SessionHost

# what PID 1 runs, but importing session_init without serving
IMPORT_LIKE_PID1 = f"{isolation.sandbox_python()} -I -S -v -c {shlex.quote(PID1[-1].split('; session_init')[0])} 2>&1"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("repo")
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "base"], check=True)
    return path


def in_session(repo: Path, *commands: str) -> list:
    async def main() -> list:
        async with SessionHost() as host:
            session = await host.open(repo)
            try:
                return [await session.exec(c) for c in commands]
            finally:
                await session.close()

    return asyncio.run(main())


def test_the_bound_byte_code_matches_the_bound_sources_and_is_read_only(repo: Path) -> None:
    imported, written, pid1 = in_session(repo, IMPORT_LIKE_PID1, f"echo x > {PYC_INSIDE}/pid1.cpython-311.pyc",
                                         "tr '\\0' ' ' < /proc/1/cmdline")
    for name in ("session_init", "pid1", "reap", "output_cap", "frames", "wire"):
        assert f"code object from '{PYC_INSIDE}/{name}." in imported.stdout, imported.stdout[-2000:]
    assert "code object from /coderl/" not in imported.stdout, imported.stdout  # none compiled from its source
    stdlib = [line for line in imported.stdout.splitlines() if "code object from '" in line and "/struct.cpython" in line]
    assert len(stdlib) == 1 and PYC_INSIDE not in stdlib[0], stdlib  # frames' struct: the standard library's own
    assert written.exit_code != 0 and "Read-only file system" in written.stderr, (written.exit_code, written.stderr)
    assert pid1.stdout.split()[1:] == [*PID1[:-1], *PID1[-1].split()], pid1.stdout  # the command PID 1 runs


def test_sessions_start_without_it(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_module, "compiled_inside", lambda names: None)
    (listed,) = in_session(repo, f"ls /coderl {PYC_INSIDE} 2>&1; echo ok")
    assert listed.exit_code == 0 and "No such file" in listed.stdout and listed.stdout.endswith("ok\n"), listed.stdout
    assert "session_init.py" in listed.stdout and "pid1.py" in listed.stdout, listed.stdout
