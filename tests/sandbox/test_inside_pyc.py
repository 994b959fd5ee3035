"""PID 1's modules come from byte code the host compiled once (coderl.sandbox.inside_pyc), bound
read-only: used while it matches the bound sources, never writable from the sandbox, and a host
that cannot compile it still starts sessions (PID 1 then compiles its modules itself)."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

import coderl.sandbox.session as session_module
from coderl.sandbox import isolation
from coderl.sandbox.inside_pyc import PYC_INSIDE
from coderl.sandbox.session import SessionHost

IMPORT_LIKE_PID1 = (f"{isolation.sandbox_python()} -I -S -v -c 'import sys; sys.path.insert(0, \"/coderl\"); "
                    f"sys.pycache_prefix = \"{PYC_INSIDE}\"; import pid1, reap, output_cap' 2>&1")


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
    # PID 1 is stdlib only and names the bind itself: the same path as the host binds
    assert f'sys.pycache_prefix = "{PYC_INSIDE}"' in Path(isolation.inside_path("session_init.py")).read_text()
    imported, written = in_session(repo, IMPORT_LIKE_PID1, f"echo x > {PYC_INSIDE}/coderl/pid1.cpython-311.pyc")
    for name in ("pid1", "reap", "output_cap", "frames", "wire"):
        assert f"code object from '{PYC_INSIDE}/coderl/{name}." in imported.stdout, imported.stdout[-2000:]
    assert written.exit_code != 0 and "Read-only file system" in written.stderr, (written.exit_code, written.stderr)


def test_sessions_start_without_it(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_module, "compiled_inside", lambda names: None)
    (listed,) = in_session(repo, f"ls {PYC_INSIDE} 2>&1; echo ok")
    assert listed.exit_code == 0 and "No such file" in listed.stdout and listed.stdout.endswith("ok\n"), listed.stdout
