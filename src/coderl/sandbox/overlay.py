"""Copy-on-write episode layers: the task's pristine repository under a private, size-capped upper layer.

bubblewrap 0.8 (Debian 12) has no overlay options, so the host mounts them: per episode a tmpfs
(``size=`` is the episode's disk limit; its pages are charged to the memory cgroup of whoever
writes them, the episode) holding the overlay's upper and work dirs, and an overlay of the
pristine repository under it, which the sandbox binds as its work tree. Starting an episode costs
two mount calls, not a copy; the pristine tree is never written (overlayfs does not write lower
layers), so every episode and every grading run starts from the same snapshot.

The layer outlives the agent's sandbox on purpose: the diff is captured from it after every
process of the episode is dead, then it is unmounted. Mounting needs CAP_SYS_ADMIN on the host
(the service runs as root, as the cgroups need); without it ``IsolationUnavailable`` says so.
Layers a crashed service left behind are unmounted by the next start (``remove_stale``).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
from pathlib import Path

from coderl.errors import IsolationUnavailable
from coderl.sandbox.stale import left_by_dead_process

_MNT_DETACH = 2
NOSUID_NODEV = 2 | 4  # MS_NOSUID | MS_NODEV: an image's files may hold setuid binaries or device nodes
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _mount(source: str, target: str, fstype: str, options: str, flags: int = 0) -> None:
    if _libc.mount(source.encode(), target.encode(), fstype.encode(), flags, options.encode()) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {fstype} on {target}: {os.strerror(err)}")


def _umount(target: str) -> None:
    _libc.umount2(target.encode(), _MNT_DETACH)


class EpisodeLayer:
    """``root``: the tmpfs; ``merged``: the repository as the episode sees it; ``lower``: pristine.
    ``below``: layers between the two, topmost first (a finished episode's ``upper``, which a
    grading run sees under its own fresh upper layer)."""

    def __init__(self, root: Path, lower: Path, disk_mb: int, *, flags: int = 0, below: tuple[Path, ...] = ()) -> None:
        self.root, self.lower = root, lower
        self.upper, self.work, self.merged = root / "upper", root / "work", root / "merged"
        self._mounted: list[str] = []
        root.mkdir(parents=True)
        try:
            # inodes capped too (one per 4 KiB of the size): a tmpfs's default is half of RAM's pages,
            # and millions of empty files cost kernel memory no size limit counts
            _mount("coderl-episode", str(root), "tmpfs", f"size={disk_mb}m,nr_inodes={disk_mb * 256},mode=0755", flags)
            self._mounted.append(str(root))
            for d in (self.upper, self.work, self.merged):
                d.mkdir()
            _mount("coderl-overlay", str(self.merged), "overlay",
                   f"lowerdir={':'.join(str(p) for p in (*below, lower))},upperdir={self.upper},workdir={self.work}", flags)
            self._mounted.append(str(self.merged))
        except OSError as exc:
            self.remove()
            if exc.errno in (1, 13):  # EPERM, EACCES
                raise IsolationUnavailable(
                    "agent sessions mount an overlay per episode and need CAP_SYS_ADMIN (run the service as root)"
                ) from exc
            raise

    def freeze(self) -> Path:
        """Unmount the merged view only (every process of the episode is dead), keeping the upper
        layer on its tmpfs: what the episode changed anywhere in its root, ready to be a lower layer
        (overlayfs forbids an upper layer in use as another overlay's lower). ``remove`` still frees it."""
        if str(self.merged) in self._mounted:
            _umount(str(self.merged))
            self._mounted.remove(str(self.merged))
        return self.upper

    def remove(self) -> None:
        for target in reversed(self._mounted):
            _umount(target)
        self._mounted = []
        with contextlib.suppress(OSError):
            self.root.rmdir()


def remove_stale(base: Path) -> None:
    """Unmount and delete the layers of services that are gone (``<pid>-<n>`` directories)."""
    if not base.is_dir():
        return
    for entry in base.iterdir():
        if left_by_dead_process(entry.name):
            _umount(str(entry / "merged"))
            _umount(str(entry))
            with contextlib.suppress(OSError):
                for d in ("upper", "work", "merged"):
                    (entry / d).rmdir()
                entry.rmdir()
