"""Where coderl keeps what it builds once and reuses across runs: repository snapshots, unpacked
mirrors, task environments, the Qwen tokenizer and the tiny stand-in model. One default for all of
them, so a user who sets (or clears) one directory gets every cached build, and the docs name one
place."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path


def default_cache_dir() -> Path:
    """``$CODERL_CACHE`` when set and not empty, else ``~/.cache/coderl`` (kept across reboots, unlike
    a temporary directory: snapshots and environments take minutes to build)."""
    return Path(os.environ.get("CODERL_CACHE") or Path.home() / ".cache" / "coderl")


def built_once(target: Path, command: Callable[[Path], list[str]], *, done: str, timeout_s: float) -> bool:
    """Whether ``target/done`` exists, building ``target`` first when it does not: ``command(tmp)``
    (run with a bare PATH) fills a fresh directory beside it, which is then renamed into place whole,
    so a reader never sees half of it and two processes building it at once both end with one (the
    second rename fails, harmlessly). False where it cannot be built here."""
    if (target / done).exists():
        return True
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".tmp-"))
    except OSError:
        return False
    try:
        subprocess.run(command(tmp), check=True, capture_output=True, timeout=timeout_s,
                       env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        tmp.chmod(0o755)
        tmp.rename(target)
    except (OSError, subprocess.SubprocessError):  # not buildable here, or another process was first
        pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already once renamed
    return (target / done).exists()


READY = ".coderl-ready"


def ready_once(dest: Path, build: Callable[[Path], str]) -> Path:
    """``dest`` built once across processes, for builds that cannot be renamed into place whole (a
    virtualenv's absolute paths must be its final ones): ``build(dest)`` fills ``dest`` and returns
    what the marker ``dest/READY`` is written with, last, so a ``dest`` without it is half made (a
    build killed midway) and is made again. Checked before the lock (the common, built case costs
    one stat) and again under it (another process may have finished meanwhile); a failed build is
    removed, never left for the next reader."""
    if (dest / READY).is_file():
        return dest
    with file_lock(dest):
        if (dest / READY).is_file():
            return dest
        shutil.rmtree(dest, ignore_errors=True)
        try:
            marker = build(dest)
            (dest / READY).write_text(marker)
        except BaseException:
            shutil.rmtree(dest, ignore_errors=True)
            raise
    return dest


class file_lock:
    """An exclusive file lock beside ``path``: one builder of a cached thing across processes."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path.with_name(path.name + ".lock")

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
