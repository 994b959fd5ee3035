"""Killing and reaping everything a test started, and nothing else (stdlib only).

Inside the sandbox this is ``/coderl/reap.py``, used by the zygotes and the runner.

Every process a test starts stays a descendant of the zygote that forked it: orphans are
re-parented to the nearest child subreaper, which the zygote is, and the seccomp filter denies
ptrace, the only way to take another process as a child. So what a test left behind is exactly the
zygote's children and their descendants: killing the children re-parents theirs to the zygote,
and the next round kills those, until none is left. (``kill(-1)`` reaches them too, but also the
slot's other zygote.)
"""

from __future__ import annotations

import os
import time
from _signal import SIGKILL  # not ``signal``: the lean zygote stays without enum and collections


def kill_children(spare: frozenset[int] = frozenset()) -> None:
    """SIGKILL and reap every child of this process but ``spare``, round by round, until there
    is none. The common case (the test left nothing) is one ``waitpid``."""
    while True:
        try:
            reaped, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if reaped:
            continue
        targets = [pid for pid in _children() if pid not in spare]
        if not targets:
            return
        for pid in targets:
            try:
                os.kill(pid, SIGKILL)
            except ProcessLookupError:
                continue
        time.sleep(0.0002)  # the killed ones need a moment to become zombies


def _children() -> list[int]:
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children") as fh:
            return [int(pid) for pid in fh.read().split()]
    except FileNotFoundError:  # a kernel without CONFIG_PROC_CHILDREN: every process's parent
        return [int(p) for p in os.listdir("/proc") if p.isdigit() and _parent(p) == me]


def _parent(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1
