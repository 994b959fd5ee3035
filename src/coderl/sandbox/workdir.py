"""The work dir of a slot: the program's private writable directory (stdlib only).

Inside the sandbox this is ``/coderl/workdir.py``, imported by the runner as a top-level module.
"""

from __future__ import annotations

import os
import shutil
import stat

from wire import write_all

MNT = "/mnt"  # a private tmpfs inside the boundary (isolation.py); without isolation, the host's
FETCH_LIMIT = 64 << 20


class WorkDir:
    """The program's private writable directory, rebuilt from the prepared files for every run."""

    def __init__(self, root: str, scratch: list[str]) -> None:
        self.root = root
        self.scratch = scratch  # other writable dirs (/tmp, /mnt) wiped with it
        # What a fetch may name absolutely: the work dir, and /mnt only where it is our own tmpfs
        # (a scratch dir of the sandbox), never a host directory of that name.
        self.fetch_roots = [os.path.realpath(root), *(d for d in scratch if d == MNT)]
        self.files: dict[str, bytes] = {}
        self.executables: set[str] = set()
        self._written: dict[str, tuple] | None = None  # the files as last written, when nothing else is there

    def prepare(self, files: dict[str, bytes], executables: tuple[str, ...] = ()) -> None:
        """A new submission's files (compiler artifacts may join them, see ``keep``; ``executables``:
        those among ``files`` that are artifacts kept from an earlier compile, mode 0755)."""
        self.files, self.executables, self._written = dict(files), set(executables) & set(files), None

    def wipe(self) -> None:
        self._written = None
        for d in [self.root, *self.scratch]:
            try:
                names = os.listdir(d)
            except FileNotFoundError:  # only without isolation can a program remove it
                os.makedirs(d)
                continue
            for name in names:
                path = os.path.join(d, name)
                try:
                    if os.path.isdir(path) and not os.path.islink(path):
                        shutil.rmtree(path, onerror=_make_writable_and_retry)
                    else:
                        os.unlink(path)
                except FileNotFoundError:
                    pass

    def materialise(self, extra: dict[str, bytes]) -> None:
        """The prepared files (and this run's ``extra``) and nothing else. Skipped when the last
        run left the dir as it was written: the same names, nothing in the scratch dirs, and each
        file's inode, size, mode and change time unchanged (no program can set a change time)."""
        if not extra and self._untouched():
            return
        self.wipe()
        for rel, data in [*self.files.items(), *extra.items()]:
            path = self.path(rel)
            if "/" in rel:
                os.makedirs(os.path.dirname(path), exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o755 if rel in self.executables else 0o644)
            try:
                write_all(fd, data)
            finally:
                os.close(fd)
        if not extra and not any("/" in rel for rel in self.files):
            self._written = {rel: _signature(self.path(rel)) for rel in self.files}

    def _untouched(self) -> bool:
        if self._written is None or sorted(os.listdir(self.root)) != sorted(self._written):
            return False
        if any(os.listdir(d) for d in self.scratch):
            return False
        try:
            return all(_signature(self.path(rel)) == sig for rel, sig in self._written.items())
        except OSError:
            return False

    def keep(self, rel: str) -> bool:
        """Make a compiler's artifact (a file, or a directory of them) part of every run's work dir.
        False when the compiler produced none."""
        path = self.path(rel)
        self._written = None
        if os.path.isdir(path):
            for dirpath, _, names in os.walk(path):
                for name in names:
                    full = os.path.join(dirpath, name)
                    with open(full, "rb") as fh:
                        self.files[os.path.relpath(full, self.root)] = fh.read()
            return True
        if os.path.isfile(path):
            with open(path, "rb") as fh:
                self.files[rel] = fh.read()
            self.executables.add(rel)
            return True
        return False

    def path(self, rel: str) -> str:
        norm = os.path.normpath(os.path.join(self.root, rel))
        if not norm.startswith(self.root + os.sep):
            raise ValueError(f"file path escapes the work dir: {rel!r}")
        return norm

    def fetch(self, names: list[str]) -> dict[str, bytes]:
        """The named regular files, resolved in the sandbox's own view; a name that resolves
        outside the fetch roots (``..``, a symlink pointing out) is omitted like a missing file."""
        out: dict[str, bytes] = {}
        for name in names:
            path = self._fetch_path(name)
            if path is None:
                continue
            try:  # O_NOFOLLOW | O_NONBLOCK: a link swapped in is refused, a FIFO cannot hang us
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    out[name] = _read_up_to(fd, FETCH_LIMIT)
            except OSError:
                pass
            finally:
                os.close(fd)
        return out

    def _fetch_path(self, name: str) -> str | None:
        path = os.path.realpath(os.path.join(self.root, name))  # an absolute name replaces the root
        return path if any(path.startswith(r + os.sep) for r in self.fetch_roots) else None


def _read_up_to(fd: int, limit: int) -> bytes:
    chunks, size = [], 0
    while size < limit:
        chunk = os.read(fd, min(1 << 20, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _signature(path: str) -> tuple[int, int, int, int, int]:
    st = os.stat(path, follow_symlinks=False)
    return st.st_ino, st.st_size, st.st_mode, st.st_mtime_ns, st.st_ctime_ns


def _make_writable_and_retry(func, path, _exc) -> None:  # type: ignore[no-untyped-def]
    try:
        os.chmod(os.path.dirname(path), 0o700)
        os.chmod(path, 0o700)
        func(path)
    except OSError:
        pass
