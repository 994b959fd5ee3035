"""Killing and reaping everything a test started, and nothing else (stdlib only).

Inside the sandbox this is ``/coderl/reap.py``, used by the zygotes and the runner.

Every process a test starts stays a descendant of the zygote that forked it: orphans are
re-parented to the nearest child subreaper, which the zygote is, and the seccomp filter denies
ptrace, the only way to take another process as a child. So what a test left behind is exactly the
zygote's subtree. It is killed whole, round after round, and reaped only when nothing in it is
alive: until then the zombies keep their places under the process limits (RLIMIT_NPROC and the
cgroup's pids.max count them), so a fork bomb cannot refill what was killed. (``kill(-1)`` would
reach them too, but also the slot's other zygote.)
"""

from __future__ import annotations

import os
import time
from _signal import SIGKILL  # not ``signal``: the lean zygote stays without enum and collections

GIVE_UP_S = 5.0  # a process that will not die (stuck in the kernel): the slot's own timeouts take over


def kill_children(spare: frozenset[int] = frozenset()) -> None:
    """SIGKILL every descendant of this process but ``spare`` (and theirs), then reap them. The
    common case, a test that left nothing, is one ``waitid``.

    A listing can miss a process: a ``children`` file skips a child that is being re-parented
    while it is read, as a fork bomb's are all the time. Once every listed process is dead, such a
    process has become our own child, so after the reaping our direct children are listed again
    (nothing is being re-parented then) and any left but ``spare`` start another pass."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return
    give_up = time.monotonic() + GIVE_UP_S
    while True:
        _kill_subtree(spare, give_up)
        _reap_dead()
        if time.monotonic() >= give_up or all(pid in spare for pid in _children(os.getpid())):
            return


def oldest_child(spare: frozenset[int] = frozenset()) -> int | None:
    """This process's longest-running child but ``spare``, or None. When a zygote dies before it
    names the test process it forked, that process is the oldest of the orphans it leaves here:
    whatever the test started was forked after it (ties broken by the lower pid), and nothing of
    an earlier test is left (``kill_children``)."""
    started = []
    for pid in _children(os.getpid()):
        if pid not in spare:
            try:
                started.append((int(proc_stat(pid)[19]), pid))  # its start time
            except (OSError, IndexError, ValueError):  # reaped meanwhile
                continue
    return min(started)[1] if started else None


def _kill_subtree(spare: frozenset[int], give_up: float) -> None:
    """Kill round by round until nothing listed lives; no reaping meanwhile, so the zombies keep
    their places under the process limits and a fork bomb cannot refill what was killed."""
    while time.monotonic() < give_up:
        alive = [pid for pid in _subtree(os.getpid(), spare) if _alive(pid)]
        if not alive:
            return
        for pid in alive:
            try:
                os.kill(pid, SIGKILL)
            except ProcessLookupError:
                continue
        time.sleep(0.0001)  # the killed ones need a moment to become zombies


def _reap_dead() -> None:
    """Reap every zombie: all are our children now (their parents died before them, or are us)."""
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


def _subtree(root: int, spare: frozenset[int]) -> list[int]:
    found, todo = [], [root]
    while todo:
        for child in _children(todo.pop()):
            if child not in spare:
                found.append(child)
                todo.append(child)
    return found


def _children(pid: int) -> list[int]:
    """A process's children, through every one of its threads (a thread's forks are its own)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:  # gone meanwhile
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                out += [int(child) for child in fh.read().split()]
        except FileNotFoundError:  # gone, or a kernel without CONFIG_PROC_CHILDREN
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue
            out += [int(p) for p in os.listdir("/proc") if p.isdigit() and _parent(p) == pid]
            break
        except OSError:
            continue
    return out


def proc_stat(pid: int | str) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` from the state on: the command name before them is the
    program's to choose, spaces and parentheses included. OSError when the process is gone."""
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()


def _alive(pid: int) -> bool:
    try:
        return proc_stat(pid)[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _parent(pid: str) -> int:
    try:
        return int(proc_stat(pid)[1])
    except (OSError, IndexError, ValueError):
        return -1
