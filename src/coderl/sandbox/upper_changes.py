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
import os
import stat
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
