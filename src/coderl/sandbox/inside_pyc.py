"""The byte code of a session's PID 1 modules, compiled once on the host by the sandbox's own
interpreter, so a session does not compile them on every start.

Each module is bound read-only into the sandbox file by file (``/coderl/pid1.py``, ...), so there
is no ``__pycache__`` beside them and every PID 1 compiled all five from source (4.7 ms of its
start). Here they are compiled into ``<cache>/inside-pyc/<digest>/coderl/<name>.<tag>.pyc``, the
path ``sys.pycache_prefix`` gives for ``/coderl/<name>.py``; the directory is bound read-only at
``PYC_INSIDE`` and PID 1 sets ``sys.pycache_prefix`` to it while it imports its modules. The byte
code is checked against its source's hash, not its mtime: the directory is named by the sources'
contents, and another checkout with the same sources (other mtimes) uses it too. A stale or
missing one only costs the compile it saves; nothing in the sandbox can write there.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from coderl.cache import built_once, default_cache_dir
from coderl.sandbox import isolation

PYC_INSIDE = "/coderl-pyc"
_COMPILE = ("import importlib.util, os, py_compile, sys; sys.pycache_prefix = sys.argv[1]; "
            "[py_compile.compile(src, cfile=importlib.util.cache_from_source('/coderl/' + os.path.basename(src)), "
            "dfile='/coderl/' + os.path.basename(src), doraise=True, "
            "invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH) for src in sys.argv[2:]]")
_TIMEOUT_S = 60


@lru_cache(maxsize=8)
def compiled_inside(names: tuple[str, ...]) -> str | None:
    """The host directory to bind at ``PYC_INSIDE`` for these modules of ``coderl.sandbox``, or
    None where they cannot be compiled here (PID 1 then compiles them itself, as before)."""
    sources = [isolation.inside_path(name) for name in names]
    python = isolation.sandbox_python()
    digest = hashlib.sha256(b"checked-hash\0" + python.encode() + b"".join(Path(s).read_bytes() for s in sources))
    target = default_cache_dir() / "inside-pyc" / digest.hexdigest()[:16]
    built = built_once(target, lambda tmp: [python, "-I", "-S", "-c", _COMPILE, str(tmp), *sources],
                       done="coderl", timeout_s=_TIMEOUT_S)
    return str(target) if built else None
