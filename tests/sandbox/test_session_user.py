"""An episode's user has a name (``session.USER_ENV``), as a grading run's does: the sandbox's uid
has no /etc/passwd entry, and a suite that asks for the user's name (Django's createsuperuser
tests) otherwise got none and prompted until its command's timeout."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from coderl.sandbox.session import SessionHost, SessionLimits

LIMITS = SessionLimits(episode_s=60, exec_s=20, memory_mb=256, max_processes=32, output_kb=16, disk_mb=8)


def test_an_episode_knows_its_users_name(tmp_path: Path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)

    async def main() -> str:
        async with SessionHost() as host:
            session = await host.open(tmp_path, limits=LIMITS)
            try:
                run = await session.exec("python3 -c 'import getpass; print(getpass.getuser())'")
            finally:
                await session.close()
            return run.stdout.strip()

    assert asyncio.run(main()) == "nobody"
