"""Which Python interpreter runs inside the sandbox (the runner and every Python program)."""

from __future__ import annotations

import functools
import os
import sys

from coderl.sandbox.runtime_env import runtime_python


@functools.cache
def sandbox_python() -> str:
    """``CODERL_SANDBOX_PYTHON``, else the runtime environment's interpreter (the pinned packages
    programs import, coderl.sandbox.runtime_env), else the base interpreter behind this (possibly
    venv) Python: never the service's virtualenv with its secrets and packages. A venv's link is
    kept as it is: resolved, the interpreter would not find the venv."""
    chosen = os.environ.get("CODERL_SANDBOX_PYTHON")
    if chosen:
        return os.path.realpath(chosen)
    return runtime_python() or os.path.realpath(getattr(sys, "_base_executable", sys.executable))


@functools.cache
def sandbox_python_prefix() -> str:
    """The install tree of the interpreter itself (behind the venv link), bound read-only into the
    sandbox."""
    exe = os.path.realpath(sandbox_python())
    return os.path.dirname(os.path.dirname(exe))
