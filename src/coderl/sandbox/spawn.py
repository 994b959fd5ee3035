"""Starting a sandbox's outer process on the host, and killing it with all it started: what the
judging slot (``slot.py``) and the session host (``session.py``) share.

The process is spawned inside its cgroup before exec (a tiny shell writes ``0``, itself, into the
group's ``SlotCgroup.procs_files``, then execs the real argv), so every descendant, bubblewrap and
PID 1 and all they start, is inside from its first instruction. It leads its own session, so one
``killpg`` reaches the whole tree outside the pid namespace too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Sequence

from coderl.sandbox.cgroups import SlotCgroup

# ``0``: the writer itself; a failed write fails the shell (``set -e``), never runs argv outside the group
_JOIN_CGROUP = 'set -e; for p in $CODERL_CGROUP_PROCS; do echo 0 > "$p"; done; exec "$@"'
_KILL_WAIT_S = 5.0
STREAM_LIMIT = 1 << 24  # the largest line an asyncio reader buffers (frames are read by size, not lines)


async def spawn_in_cgroup(argv: Sequence[str], cgroup: SlotCgroup | None, *, pass_fds: Sequence[int] = (),
                          label: str = "coderl-sandbox") -> asyncio.subprocess.Process:
    """Start ``argv`` with piped stdin/stdout/stderr and a bare PATH, inside ``cgroup`` (when
    there is one) before exec. ``label`` names the joining shell in ``ps``. Raises ``OSError``."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    if cgroup is not None:
        env["CODERL_CGROUP_PROCS"] = " ".join(cgroup.procs_files)
        argv = ["/bin/sh", "-c", _JOIN_CGROUP, label, *argv]
    return await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        pass_fds=tuple(pass_fds), env=env, limit=STREAM_LIMIT, start_new_session=True)


async def kill_process_group(proc: asyncio.subprocess.Process | None) -> None:
    """SIGKILL the process's whole session and wait (bounded) for it. No ``proc.kill()`` after it:
    Popen polls before signalling and could reap the process ahead of asyncio's child watcher,
    which then warns on stderr."""
    if proc is None or proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, 9)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(proc.wait(), _KILL_WAIT_S)


async def stderr_of(proc: asyncio.subprocess.Process | None) -> str:
    """What bubblewrap (or PID 1) said before it died, for the error message."""
    if proc is None or proc.stderr is None:
        return ""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(1):
            return (await proc.stderr.read(2000)).decode("utf-8", "replace").strip()
    return ""
