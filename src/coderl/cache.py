"""Where coderl keeps what it builds once and reuses across runs: repository snapshots, unpacked
mirrors, task environments, the Qwen tokenizer and the tiny stand-in model. One default for all of
them, so a user who sets (or clears) one directory gets every cached build, and the docs name one
place."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from coderl.errors import SandboxError


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


def private_dir(path: Path) -> Path:
    """``path`` as a directory that only this user can write: made 0700 when missing. One already
    there (another local user may have made it first, in a shared place) is used only when it is a
    real directory (no link) of this user's, and is then made 0700 itself; anything else is refused."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise SandboxError(f"{path} is not a directory of this user's (uid {os.getuid()}): refusing to use it; "
                           "remove it or point the setting elsewhere")
    if stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(path, 0o700)
    return path


def exclusive_file(path: Path, text: str, *, mode: int = 0o755) -> Path:
    """``path`` holding ``text``, in a `private_dir`, written by this process: a fresh file made
    exclusively (``mkstemp``: O_EXCL, 0600) and renamed over whatever was there. A file already
    there is reused only when it is a regular file (no link) of this user's, writable by no one
    else, holding exactly ``text``: a planted or stale one is replaced, never run."""
    private_dir(path.parent)
    with contextlib.suppress(FileNotFoundError):
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022 \
                and path.read_text(errors="replace") == text:
            return path
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


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
