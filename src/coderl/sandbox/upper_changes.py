"""What an episode changed, read from its overlay's upper layer instead of by hashing its whole tree.

Every write an episode makes to its work tree lands in the upper layer (overlayfs never writes
the lower one): a file written or created is there, whole or as a metadata copy; a deletion is a
whiteout (a 0/0 character device); a directory deleted and made again, or renamed, is a directory
marked opaque or redirected (its contents no longer come from the same lower directory). So the
paths that can differ from the pristine tree are those entries, and every other tracked file is
the pristine one: the diff capture compares only those (``SessionHost.capture_diff``). The walk
reads names and extended attributes on the host and follows no link; it never opens a file the
agent wrote. Anything it cannot tell (an attribute it may not read) gives None: compare everything.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
import subprocess
from pathlib import Path

_WHOLE_DIR_XATTRS = ("trusted.overlay.opaque", "trusted.overlay.redirect")


class _Unknown(Exception):
    """The upper layer holds something this walk cannot read: compare the whole tree."""


def changed_paths(upper: Path, work_tree: str = "") -> list[bytes] | None:
    """The paths (relative to the work tree, which is ``work_tree`` under the layer's root) that the
    episode may have changed: files, links and whiteouts as they are, directories whose whole
    content may differ as the directory. None: the whole tree must be compared (the work tree
    itself, or a directory above it, was replaced or deleted, or an attribute was unreadable)."""
    try:
        top = upper
        for part in [p for p in work_tree.split("/") if p]:
            top = top / part
            try:
                st = os.lstat(top)
            except FileNotFoundError:
                return []  # nothing under the work tree was written
            if not stat.S_ISDIR(st.st_mode) or _whole(top):
                return None
        try:
            return sorted(_walk(os.fsencode(top), b""))
        except FileNotFoundError:
            return []
    except _Unknown:
        return None


def _walk(directory: bytes, prefix: bytes) -> list[bytes]:
    found = []
    with os.scandir(directory) as entries:
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=False) and not _whole(entry.path):
                found += _walk(entry.path, rel + b"/")
            else:  # a file, a link, a whiteout, a directory replaced whole
                found.append(rel)
    return found


def _whole(path: bytes | Path) -> bool:
    """Whether a directory of the upper layer stands for all its content (opaque or redirected)."""
    for name in _WHOLE_DIR_XATTRS:
        try:
            os.getxattr(path, name, follow_symlinks=False)
        except OSError as exc:
            if exc.errno in (errno.ENODATA, errno.ENOTSUP):
                continue
            raise _Unknown(str(exc)) from exc
        return True
    return False


def touched(tracked: tuple[bytes, ...], changed: list[bytes], top: bytes) -> tuple[bytes, list[bytes]]:
    """What the capture reads again, from ``changed`` (under ``top``, the work tree in the upper
    layer): the tracked paths at, under or above a changed path, NUL-terminated for ``git
    update-index -z --stdin`` (one written, deleted, or made a directory or a link: each is re-read,
    or removed when gone), and the changed paths git does not track, or that are directories now
    (new files, directories whose whole content may be new, a tracked file made a directory:
    ``ls-files -o`` names what in them the ignore rules let through)."""
    written = set(changed)
    known = set(tracked)

    def hit(path: bytes) -> bool:
        parts = path.split(b"/")
        return any(b"/".join(parts[:i]) in written for i in range(1, len(parts) + 1))

    again = {path for path in tracked if hit(path)}
    for path in changed:  # a tracked file above a written path: the file became a directory
        parts = path.split(b"/")
        again.update(p for p in (b"/".join(parts[:i]) for i in range(1, len(parts))) if p in known)
    new = [path for path in changed if path not in known or stat.S_ISDIR(os.lstat(os.path.join(top, path)).st_mode)]
    return b"".join(path + b"\0" for path in sorted(again)), new


@functools.lru_cache(maxsize=256)
def tracked_paths(git_dir: str) -> tuple[bytes, ...]:
    """The files HEAD of a pristine repository (a snapshot's ``.git``: ours, never an episode's)
    tracks; read once per repository with our own git, no config."""
    out = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "-z", "--name-only", "--full-tree", "HEAD"],
                         capture_output=True, check=True, timeout=120,
                         env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1",
                              "GIT_CONFIG_GLOBAL": "/dev/null"}).stdout
    return tuple(path for path in out.split(b"\0") if path)
