"""A session's PID 1 modules as one read-only directory, with their byte code compiled once on the
host by the sandbox's own interpreter, so a session neither compiles them on every start nor pays a
mount for each file.

Bound file by file (``/coderl/pid1.py``, ...), the modules had no ``__pycache__`` beside them, so
every PID 1 compiled all six from source, its script too (``session_init.py``: ~3.5 ms of CPU
alone). Here the sources are copied into ``<cache>/inside-pyc/<digest>/`` and compiled into its
``__pycache__`` (the path ``importlib.util.cache_from_source`` gives for ``/coderl/<name>.py``);
the directory is bound read-only at ``INSIDE_DIR`` in one mount, and PID 1 is started by
importing ``session_init`` from it (``coderl.sandbox.session.PID1``), so nothing of it is compiled
in the sandbox, and the standard library's modules keep their own byte code (a ``sys.pycache_prefix``
set while PID 1 imported its modules had ``struct`` compiled from source on every start). The byte
code is checked against its source's hash, not its mtime: the directory is named by the sources'
contents, and another checkout with the same sources (other mtimes) uses it too. A stale or missing
one only costs the compile it saves; nothing in the sandbox can write there.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from coderl.cache import built_once, default_cache_dir
from coderl.sandbox import isolation

PYC_INSIDE = isolation.INSIDE_DIR + "/__pycache__"
_COMPILE = f"""\
import importlib.util, os, py_compile, shutil, sys
for src in sys.argv[2:]:
    name = os.path.basename(src)
    copy = os.path.join(sys.argv[1], name)
    shutil.copyfile(src, copy)
    os.chmod(copy, 0o644)
    inside = importlib.util.cache_from_source("{isolation.INSIDE_DIR}/" + name)  # .../__pycache__/<name>.<tag>.pyc
    py_compile.compile(copy, cfile=os.path.join(sys.argv[1], os.path.relpath(inside, "{isolation.INSIDE_DIR}")),
                       dfile="{isolation.INSIDE_DIR}/" + name, doraise=True,
                       invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
"""
_TIMEOUT_S = 60


@lru_cache(maxsize=8)
def compiled_inside(names: tuple[str, ...]) -> str | None:
    """The host directory to bind at ``INSIDE_DIR`` holding these modules of ``coderl.sandbox`` and
    their byte code, or None where it cannot be made here (the modules are then bound file by file
    and PID 1 compiles them itself, as before)."""
    sources = [isolation.inside_path(name) for name in names]
    python = isolation.sandbox_python()
    digest = hashlib.sha256(b"inside-dir\0" + python.encode()
                            + b"".join(Path(s).name.encode() + b"\0" + Path(s).read_bytes() for s in sources))
    target = default_cache_dir() / "inside-pyc" / digest.hexdigest()[:16]
    built = built_once(target, lambda tmp: [python, "-I", "-S", "-c", _COMPILE, str(tmp), *sources],
                       done="__pycache__", timeout_s=_TIMEOUT_S)
    return str(target) if built else None
