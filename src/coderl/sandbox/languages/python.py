from __future__ import annotations

from coderl.sandbox.languages.base import Language
from coderl.sandbox.pythonenv import sandbox_python


class Python(Language):
    """Python 3, run warm: the runner compiles once and forks a child per test that executes the
    code object, so no interpreter starts per test."""

    name = "python"
    aliases = ("python3", "py", "py3")
    source_name = "main.py"
    run_argv = ("python3", "main.py")  # only used for the description; runs are warm forks
    version_argv = (sandbox_python(), "--version")
    warm_python = True
    hello = 'print("hello, coderl")\n'
