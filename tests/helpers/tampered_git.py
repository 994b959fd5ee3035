"""The diff-capture attack both session kinds face (a work tree on a repository snapshot, an image's
work dir): the agent plants commands in a ``.git`` of its own (an fsmonitor command, hooks) that would
run if the capture used that ``.git`` or its config. One check for both, so the two kinds are held to
the same bar: the diff is the true one and nothing the agent planted ran."""

from __future__ import annotations

from pathlib import Path

from coderl.sandbox.session import Session

PWNED = Path("/tmp/pwned")  # what a planted command touches (host path: the capture runs outside the boundary)
PLANT_HOOK = "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/*"


async def diff_past_tampered_git(session: Session, tamper: str) -> str:
    """The session's diff after it adds ``added.py`` and runs ``tamper`` (a shell line that rewrites
    the work dir's ``.git``), checked to hold the change, no ``.git`` file, and to have run nothing."""
    await session.exec(f"echo 'x = 1' > added.py; {tamper}")
    diff = await session.finish()
    assert "b/added.py" in diff and "+x = 1" in diff and "b/.git" not in diff, diff
    assert not PWNED.exists()
    return diff
