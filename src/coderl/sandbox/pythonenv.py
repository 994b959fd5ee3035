"""Which Python interpreter runs inside the sandbox (the runner and every Python program)."""

from __future__ import annotations

import functools
import os
import sys


@functools.cache
def sandbox_python() -> str:
    """``CODERL_SANDBOX_PYTHON`` or the base interpreter behind this (possibly venv) Python: the
    sandbox gets a plain interpreter, not the service's virtualenv with its secrets and packages."""
    chosen = os.environ.get("CODERL_SANDBOX_PYTHON") or getattr(sys, "_base_executable", sys.executable)
    return os.path.realpath(chosen)


@functools.cache
def sandbox_python_prefix() -> str:
    """The install tree of that interpreter, bound read-only into the sandbox."""
    exe = sandbox_python()
    prefix = os.path.dirname(os.path.dirname(exe))
    return prefix
