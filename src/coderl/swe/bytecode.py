"""A snapshot's byte code, compiled once per interpreter that runs its episodes (issue 49 item 2).

A snapshot is a git checkout: no ``__pycache__``. Its episodes see it read-only under their own
overlay, so without byte code every episode compiled the whole project again on its first import
(sympy: 4x its warm import) into its own layer, and threw it away. Compiled here once, on the host,
by the environment's own interpreter (its cache tag names the files: several Pythons share one
snapshot), beside the sources in the snapshot, before any episode mounts it. The byte code is
timestamp-checked, as CPython writes it itself: a file an episode edits has a new mtime, so its
stale byte code is never used, and the pristine files' byte code stays valid under every overlay
(overlayfs shows the lower file's mtime). Compiling runs none of the project's code; a file that
does not compile (a test fixture in Python 2) just has none. A grading run reads it too (issue 49
item 5: the project is not compiled again per grading), but only when its session's upper layer
holds no byte code (``grading_run.written_byte_code``: a ``.pyc`` a diff brings is removed before
the run, else the run compiles afresh under a pycache prefix of its own), so every ``.pyc`` it reads
is this one. ``.git/info/exclude`` of the snapshot names the byte code, so neither an agent's ``git
status`` nor the diff capture sees it as a new file.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from coderl.cache import file_lock
from coderl.swe.environment import compile_byte_code, site_packages

_TIMEOUT_S = 900
EXCLUDED = "__pycache__/\n*.py[co]\n"


def compile_snapshot(snapshot: Path, env_dir: Path) -> bool:
    """Compile ``snapshot``'s Python files for ``env_dir``'s interpreter, once (a marker beside the
    snapshot says it was done). False when the compile could not run (the episode then compiles
    what it imports itself, as before)."""
    version = site_packages(env_dir).parent.name.removeprefix("python").replace(".", "")  # python3.9 -> 39
    marker = snapshot.with_name(f"{snapshot.name}.pyc-cpython-{version}")
    if marker.exists():
        return True
    with file_lock(marker):
        if marker.exists():
            return True
        exclude = snapshot / ".git" / "info" / "exclude"
        exclude.parent.mkdir(exist_ok=True)
        text = exclude.read_text() if exclude.is_file() else ""
        if EXCLUDED not in text:
            exclude.write_text(text + ("\n" if text and not text.endswith("\n") else "") + EXCLUDED)
        try:
            proc = compile_byte_code(env_dir, snapshot, "-x", r"/\.git/", "--invalidation-mode", "timestamp",
                                     timeout_s=_TIMEOUT_S)
        except (OSError, subprocess.SubprocessError):
            return False
        if proc.returncode not in (0, 1):  # 1: some file did not compile, the rest did
            return False
        marker.write_text(f"{env_dir}\n")
    return True
