"""What the engine is asked to run: a program, and the inputs of each of its runs."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field

from coderl.errors import BadRequest

#: The program's writable places as it sees them inside the boundary: the work dir and a private
#: ``/mnt`` (SandboxFusion programs write there). Only these may be named absolutely in a fetch.
BOX = "/box"
MNT = "/mnt"


def check_paths(paths: Iterable[str]) -> None:
    """Work-dir file names must be plain relative paths: a request cannot place files elsewhere."""
    for path in paths:
        norm = posixpath.normpath(path) if isinstance(path, str) else ""
        if not norm or norm.startswith(("/", "..")) or norm == "." or "\0" in norm:
            raise BadRequest(f"file path {path!r} must be relative and stay inside the work dir")


def check_fetch_paths(paths: Iterable[str]) -> None:
    """A fetch names a work-dir file, or an absolute path under ``/box`` or ``/mnt`` as the
    program saw it; the runner resolves it inside the boundary (symlinks out are not followed)."""
    for path in paths:
        norm = posixpath.normpath(path) if isinstance(path, str) else ""
        if norm.startswith((BOX + "/", MNT + "/")) and "\0" not in norm:
            continue
        check_paths([path])


@dataclass(frozen=True)
class Program:
    """What to run: source in a language, plus extra files placed next to it. ``prelude`` (Python
    only): run in a namespace that already holds LiveCodeBench's star-imports
    (`coderl.sandbox.zygote.LCB_PRELUDE`), which the warm zygote loads once per submission, not
    once per test; the runner leaves it out where no program could tell (``runner._needs_prelude``)."""

    language: str
    source: str
    files: dict[str, bytes] = field(default_factory=dict)
    prelude: bool = False

    def __post_init__(self) -> None:
        check_paths(self.files)


@dataclass(frozen=True)
class RunInput:
    """One run's input: stdin, files written into the work dir first, files to fetch afterwards."""

    stdin: bytes = b""
    files: dict[str, bytes] = field(default_factory=dict)
    fetch: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_paths(self.files)
        check_fetch_paths(self.fetch)
