"""The work dir of a slot: the program's private writable directory (stdlib only).

Inside the sandbox this is ``/coderl/workdir.py``, imported by the runner as a top-level module.
"""

from __future__ import annotations

import os
import shutil

from wire import write_all


class WorkDir:
    """The program's private writable directory, rebuilt from the prepared files for every run."""

    def __init__(self, root: str, scratch: list[str]) -> None:
        self.root = root
        self.scratch = scratch  # other writable dirs (/tmp) wiped with it
        self.files: dict[str, bytes] = {}
        self.executables: set[str] = set()

    def wipe(self) -> None:
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

    def keep(self, rel: str) -> bool:
        """Make a compiler's artifact (a file, or a directory of them) part of every run's work dir.
        False when the compiler produced none."""
        path = self.path(rel)
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
        out: dict[str, bytes] = {}
        for rel in names:
            try:
                path = self.path(rel)
                if os.path.isfile(path) and not os.path.islink(path):
                    with open(path, "rb") as fh:
                        out[rel] = fh.read(64 << 20)
            except (OSError, ValueError):
                continue
        return out


def _make_writable_and_retry(func, path, _exc) -> None:  # type: ignore[no-untyped-def]
    try:
        os.chmod(os.path.dirname(path), 0o700)
        os.chmod(path, 0o700)
        func(path)
    except OSError:
        pass
