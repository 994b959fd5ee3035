"""The compile cache: a submission whose language, compiler, compile command and files are byte for
byte those of an earlier successful compile gets that compile's artifacts instead of the compiler.

A GRPO group and a re-evaluation send the same program many times; each compile of it costs
0.3-4 CPU s, its tests a few ms each. What makes it safe:

- The key is everything the compile step reads that can differ: the language, the compiler's
  version line, the compile argv and environment (flags, the precompiled-header and class-archive
  paths, which are named by the toolchain's files), the artifact names, and every file of the
  submission (names and bytes). Two submissions share an entry only when they are the same input.
- The artifact is produced inside the boundary, by the compiler, in the submission's own slot,
  exactly as without the cache; the runner hands its bytes to the host along with the compile
  record. The cache lives on the host and is never bound into a sandbox: a run sees its own copy in
  its tmpfs work dir (rewritten from the runner's memory for every test anyway), so a program that
  overwrites or replaces its binary changes that copy only (tests/sandbox/test_compile_cache.py).
- Only successful compiles are kept: a failure may be a limit or a kill, which another request's
  limits would not repeat. A hit whose original compile took more CPU, wall time or memory than this
  request's compile limits is a miss, so the cache never lets through a compile they would stop.
- Entries are written whole (a temporary file renamed into place), so engines of several processes
  may share the directory; a damaged or unreadable entry is a miss and is removed.

Bounded: past ``max_bytes`` the least recently used entries (file mtime, touched on every hit) are
deleted. Off with ``CODERL_COMPILE_CACHE=0``, ``coderl serve --no-compile-cache`` (or
``Engine(compile_cache=False)``); its size with ``CODERL_COMPILE_CACHE_MB`` or ``coderl serve
--compile-cache-mb`` (default 1024); where, under ``coderl.cache.default_cache_dir()``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from coderl.cache import default_cache_dir
from coderl.sandbox.frames import HEADER, decode_header, encode_frame, header_size
from coderl.sandbox.result import CompileResult, Limits, RunResult

SWITCH_ENV = "CODERL_COMPILE_CACHE"
SIZE_ENV = "CODERL_COMPILE_CACHE_MB"
DEFAULT_MB = 1024
HIT_MESSAGE = "compiled earlier: artifacts from the compile cache"
_OFF = ("0", "off", "false", "no")


@dataclass(frozen=True)
class Compiled:
    """A successful compile: its record (the compiler's stdout/stderr included) and its artifacts."""

    result: CompileResult
    files: dict[str, bytes]
    executables: tuple[str, ...]


class CompileCache:
    def __init__(self, directory: Path, max_bytes: int) -> None:
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self._approx_bytes: int | None = None  # the directory's size at the last scan + what was written since

    @classmethod
    def from_env(cls) -> CompileCache | None:
        """The cache the environment asks for: None when ``CODERL_COMPILE_CACHE`` is 0/off."""
        if switched_off():
            return None
        size_mb = os.environ.get(SIZE_ENV, "").strip()
        try:
            max_mb = int(size_mb) if size_mb else DEFAULT_MB
        except ValueError:
            raise ValueError(f"{SIZE_ENV} must be a whole number of MiB, got {size_mb!r}") from None
        return cls.sized(max_mb)

    @classmethod
    def sized(cls, max_mb: int) -> CompileCache | None:
        """The machine's cache bounded at ``max_mb`` MiB; None for 0 (``coderl serve
        --no-compile-cache``, ``CODERL_COMPILE_CACHE_MB=0``: off)."""
        if max_mb < 0:
            raise ValueError(f"the compile cache's size must be >= 0 MiB, got {max_mb}")
        return cls(default_cache_dir() / "compile-cache", max_mb << 20) if max_mb else None

    @staticmethod
    def key(language: str, version: str, recipe: dict, files: dict[str, bytes]) -> str:
        """The entry's name: a digest of everything the compile step reads that can differ."""
        digest = hashlib.sha256()
        for part in (language, version, "\0".join(recipe["compile"]), repr(sorted(recipe.get("env", {}).items())),
                     "\0".join(recipe.get("artifacts", ()))):
            digest.update(part.encode("utf-8", "surrogateescape") + b"\0\1")
        for name in sorted(files):
            data = files[name]
            digest.update(name.encode("utf-8", "surrogateescape") + b"\0" + len(data).to_bytes(8, "big") + data)
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / key

    def get(self, key: str, compile_limits: Limits) -> Compiled | None:
        """The entry, or None (also when its compile took more time or memory than ``compile_limits``
        allow)."""
        path = self._path(key)
        try:
            data = path.read_bytes()
        except OSError:
            self.misses += 1
            return None
        try:
            compiled = _decode(data)
        except (ValueError, KeyError, TypeError):
            with contextlib.suppress(OSError):
                path.unlink()
            self.misses += 1
            return None
        run = compiled.result.run
        if run.cpu_s > compile_limits.cpu_s or run.wall_s > compile_limits.wall_s \
                or run.memory_kb > compile_limits.memory_mb * 1024:
            self.misses += 1
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # most recently used
        self.hits += 1
        hit = RunResult(**{**_record_fields(run), "cpu_s": 0.0, "wall_s": 0.0, "message": HIT_MESSAGE})
        return Compiled(CompileResult(ok=True, run=hit, cached=True), compiled.files, compiled.executables)

    def put(self, key: str, compiled: Compiled) -> None:
        """Keep a successful compile (written whole, then renamed into place), evicting the least
        recently used entries past the size bound. A full or read-only disk only loses the entry."""
        if not compiled.result.ok:
            return
        data = _encode(compiled)
        if len(data) > self.max_bytes:
            return
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError, UnboundLocalError):
                os.unlink(tmp)
            return
        if self._approx_bytes is None:
            self._approx_bytes = self._evict()
        self._approx_bytes += len(data)
        if self._approx_bytes > self.max_bytes:  # others may have written meanwhile: look again
            self._approx_bytes = self._evict()

    def _evict(self) -> int:
        """Delete the least recently used entries until the rest fit; returns their size."""
        entries = []
        for path in self.directory.glob("*/*"):
            try:
                st = path.stat()
            except OSError:
                continue
            entries.append((st.st_mtime_ns, st.st_size, path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries, key=lambda e: e[0]):
            if total <= self.max_bytes:
                break
            with contextlib.suppress(OSError):
                path.unlink()
            total -= size
        return total


def switched_off() -> bool:
    """Whether ``CODERL_COMPILE_CACHE`` turns the cache off (0, off, false, no)."""
    return os.environ.get(SWITCH_ENV, "").strip().lower() in _OFF


def _record_fields(run: RunResult) -> dict:
    return {name: getattr(run, name) for name in run.__dataclass_fields__ if name != "files"}


def _encode(compiled: Compiled) -> bytes:
    run = compiled.result.run
    header = {"record": run.to_wire(), "names": list(compiled.files), "executables": list(compiled.executables)}
    return encode_frame(header, [run.stdout, run.stderr, *compiled.files.values()])


def _decode(data: bytes) -> Compiled:
    size = header_size(data[:HEADER.size])
    header = decode_header(data[HEADER.size:HEADER.size + size])
    blobs, pos = [], HEADER.size + size
    for length in header["blobs"]:
        blobs.append(data[pos:pos + length])
        pos += length
    if pos != len(data) or len(blobs) != 2 + len(header["names"]):
        raise ValueError("a compile cache entry of the wrong length")
    run = RunResult.from_frame(header["record"], blobs[0], blobs[1])
    files = dict(zip(header["names"], blobs[2:], strict=True))
    return Compiled(CompileResult(ok=True, run=run), files, tuple(header["executables"]))
