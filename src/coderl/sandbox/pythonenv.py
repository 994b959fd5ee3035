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


def venv_base_prefix(venv: str) -> str | None:
    """The install tree of the interpreter a virtualenv links to (its ``pyvenv.cfg`` ``home``'s
    parent), which the sandbox binds read-only beside the environment: a task environment of
    another Python version than the sandbox's (``coderl.swe.interpreters``) cannot start without
    it. None when ``venv`` is not a virtualenv or its interpreter is the sandbox's own."""
    try:
        with open(os.path.join(venv, "pyvenv.cfg"), encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            prefix = os.path.dirname(os.path.realpath(value.strip()))
            return None if prefix in ("/usr", "/", sandbox_python_prefix()) else prefix
    return None
