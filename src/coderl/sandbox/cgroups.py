"""Per-slot cgroups for the memory and process limits (v2 or v1), with a documented fallback.

Why cgroups and not RLIMIT_AS: an address-space limit breaks numpy/OpenBLAS, the JVM and Go, which
reserve far more virtual memory than they touch. A cgroup limits what is really resident (tmpfs
files written by the program included), and its OOM counter tells a memory-limit kill apart from a
crash. Each slot runs one test at a time, so the slot's group is the test's group: the engine sets
the limit before each test and reads the OOM counter after it.

Fallback (no writable cgroup hierarchy, e.g. an unprivileged container without delegation): the
runner polls the resident memory of the slot's processes every 10 ms and kills over the limit.
That is weaker (a fast allocation can overshoot between polls) and `coderl sandbox doctor` says so.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from coderl.sandbox.stale import left_by_dead_process

V1_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class CgroupSupport:
    version: str  # "v2", "v1" or "none"
    detail: str


class SlotCgroup:
    """One slot's group(s). ``procs_files`` are where the slot's first process writes ``0`` (itself)
    to join them."""

    def __init__(self, version: str, dirs: dict[str, Path]) -> None:
        self.version = version
        self.dirs = dirs  # controller -> directory ("unified" for v2)
        self._applied: tuple[int, int] | None = None

    @property
    def procs_files(self) -> list[str]:
        """v1: each group's ``tasks`` (the one thread written, ``0``: the writer itself, a
        single-threaded shell before its exec, so its whole process); v2: ``cgroup.procs``. Why not
        v1's ``cgroup.procs``: a process written there takes the kernel's global threadgroup lock,
        whose write side waits out an RCU grace period (``rcu_sync_enter``: 3-11 ms of sleep per
        sandbox start here, most of a cold session open's wait); ``0`` into ``tasks`` moves the
        writing thread alone and takes no such lock (``cgroup_procs_write_start``). v2 has no
        per-thread file for a domain group, so it still pays it (``favordynmods`` or
        ``CLONE_INTO_CGROUP`` would avoid it)."""
        name = "cgroup.procs" if self.version == "v2" else "tasks"
        return [str(d / name) for d in self.dirs.values()]

    def set_limits(self, memory_bytes: int, pids: int) -> None:
        if self._applied == (memory_bytes, pids):
            return
        if self.version == "v2":
            d = self.dirs["unified"]
            _write(d / "memory.max", str(memory_bytes))
            _write(d / "memory.swap.max", "0", missing_ok=True)
            _write(d / "pids.max", str(pids))
        else:
            mem = self.dirs["memory"]
            # v1 insists on memory <= memory+swap at every moment: raise memsw first, lower it last.
            order = ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"]
            if memory_bytes > self._memory_limit_now(mem):
                order.reverse()
            for name in order:
                _write(mem / name, str(memory_bytes), missing_ok=name.startswith("memory.memsw"))
            _write(self.dirs["pids"] / "pids.max", str(pids))
        self._applied = (memory_bytes, pids)

    def _memory_limit_now(self, mem: Path) -> int:
        """The v1 group's memory limit: the last one set here, else the group's own file (a slot
        replaced after its runner died gets a new ``SlotCgroup`` over the same group, which still
        holds the old limits: raising them in the wrong order is refused, EINVAL)."""
        if self._applied is not None:
            return self._applied[0]
        try:
            return int((mem / "memory.limit_in_bytes").read_text())
        except (OSError, ValueError):
            return 0

    @property
    def oom_counter_file(self) -> Path:
        """The file whose ``oom_kill N`` line counts out-of-memory kills in this group."""
        if self.version == "v2":
            return self.dirs["unified"] / "memory.events"
        return self.dirs["memory"] / "memory.oom_control"

    def kill_all(self) -> None:
        """Last-resort cleanup: SIGKILL whatever is still in the group."""
        if self.version == "v2":
            _write(self.dirs["unified"] / "cgroup.kill", "1", missing_ok=True)
            return
        for d in self.dirs.values():
            with contextlib.suppress(OSError):
                for pid in (d / "cgroup.procs").read_text().split():
                    with contextlib.suppress(OSError):
                        os.kill(int(pid), 9)

    def remove(self) -> None:
        self.kill_all()
        for d in self.dirs.values():
            for _ in range(200):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # still busy: processes exiting
                    time.sleep(0.01)


class CgroupManager:
    """Creates ``coderl-<pid>-<n>/slot<N>`` groups and removes them (and stale ones) again.

    The name is taken when the manager starts, in the process that starts it, not when it is made:
    Ray Serve makes the application (its engine, its session host) once in the driver and unpickles
    a copy in every replica, and names taken at construction gave every replica the driver's pid,
    hence the same groups: one replica's slot stop killed the other's runner, and a replica that
    removed its groups took the other's away under it (issue 49, the surviving replica's hang)."""

    _count = 0  # managers started in this process each get their own groups

    def __init__(self, root: Path = V1_ROOT) -> None:
        self.root = root
        self.support = detect(root)
        self.base_name = ""  # named by start()
        self._bases: list[Path] = []

    @property
    def available(self) -> bool:
        return self.support.version != "none"

    def start(self) -> None:
        if not self.available:
            return
        CgroupManager._count += 1
        self.base_name = f"coderl-{os.getpid()}-{CgroupManager._count}"
        self._remove_stale()
        if self.support.version == "v2":
            _enable_v2_controllers(self.root)
            self._bases = [self.root / self.base_name]
            self._bases[0].mkdir(exist_ok=True)
            _write(self._bases[0] / "cgroup.subtree_control", "+memory +pids")
        else:
            self._bases = [self.root / c / self.base_name for c in ("memory", "pids")]
            for b in self._bases:
                b.mkdir(exist_ok=True)

    def slot(self, index: int) -> SlotCgroup:
        name = f"slot{index}"
        if self.support.version == "v2":
            d = self._bases[0] / name
            d.mkdir(exist_ok=True)
            return SlotCgroup("v2", {"unified": d})
        dirs = {c: self.root / c / self.base_name / name for c in ("memory", "pids")}
        for d in dirs.values():
            d.mkdir(exist_ok=True)
        _write(dirs["memory"] / "memory.swappiness", "0", missing_ok=True)
        return SlotCgroup("v1", dirs)

    def close(self) -> None:
        for b in self._bases:
            for child in b.glob("slot*"):
                if child.is_dir():
                    _remove_found(self.support.version, child)
            with contextlib.suppress(OSError):
                b.rmdir()
        self._bases = []

    def _remove_stale(self) -> None:
        parents = [self.root] if self.support.version == "v2" else [self.root / "memory", self.root / "pids"]
        for parent in parents:
            for base in parent.glob("coderl-*"):
                if left_by_dead_process(base.name, "coderl-"):
                    for child in base.glob("slot*"):
                        _remove_found(self.support.version, child)
                    with contextlib.suppress(OSError):
                        base.rmdir()


def _remove_found(version: str, child: Path) -> None:
    """Remove a slot's group found on disk, keyed as `SlotCgroup` expects: v2's one group is
    "unified" (its kill writes there), v1's is one controller's (``<root>/<controller>/<base>/slotN``)."""
    SlotCgroup(version, {"unified" if version == "v2" else child.parent.parent.name: child}).remove()


def detect(root: Path = V1_ROOT) -> CgroupSupport:
    """Which hierarchy we can use: a writable v2 with memory+pids, else writable v1, else none."""
    controllers = root / "cgroup.controllers"
    if controllers.exists():
        have = controllers.read_text().split()
        if {"memory", "pids"} <= set(have) and os.access(root, os.W_OK):
            return CgroupSupport("v2", f"cgroup v2 at {root} (memory, pids)")
        return CgroupSupport("none", f"cgroup v2 at {root} lacks memory/pids or is read-only")
    mem, pids = root / "memory", root / "pids"
    if (mem / "memory.limit_in_bytes").exists() and (pids / "cgroup.procs").exists():
        if os.access(mem, os.W_OK) and os.access(pids, os.W_OK):
            return CgroupSupport("v1", f"cgroup v1 at {mem} and {pids}")
        return CgroupSupport("none", "cgroup v1 memory/pids hierarchies are read-only")
    return CgroupSupport("none", "no cgroup memory controller mounted")


def _enable_v2_controllers(root: Path) -> None:
    """The v2 "no internal processes" rule: move the root's processes into a leaf first."""
    enabled = (root / "cgroup.subtree_control").read_text().split()
    if {"memory", "pids"} <= set(enabled):
        return
    leaf = root / "coderl-init"
    leaf.mkdir(exist_ok=True)
    for pid in (root / "cgroup.procs").read_text().split():
        with contextlib.suppress(OSError):
            _write(leaf / "cgroup.procs", pid)
    _write(root / "cgroup.subtree_control", "+memory +pids")


def _write(path: Path, value: str, *, missing_ok: bool = False) -> None:
    try:
        with open(path, "w") as fh:
            fh.write(value)
    except FileNotFoundError:
        if not missing_ok:
            raise
    except OSError:
        if not missing_ok:
            raise
