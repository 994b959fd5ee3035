"""Python's function and assert callers: the judge's half of `coderl.sandbox.languages.python.Python`.

The programs are prelude (loaded by the engine), a prologue that reads the case and the nonce from
stdin, the submission, then an epilogue (templates/python/*.tmpl). The prologue runs before the
submission and captures the builtins the epilogue needs, so a submission that monkeypatches
builtins/modules (compile, exec, hashlib, sys.settrace, ...) cannot change what the epilogue does;
the epilogue also clears trace/profile hooks, which could otherwise skip the test lines. The
function's name and arguments come from stdin as JSON (`json_case_stdin`), never spliced in.
"""

from __future__ import annotations

from typing import Any

from coderl.judge.languages.caller import json_case_stdin
from coderl.judge.templates import render
from coderl.sandbox.languages.python import Python


class PythonCaller:
    """Implements `coderl.judge.languages.caller.Caller`."""

    sandbox = Python

    @property
    def name(self) -> str:
        return self.sandbox.name

    def program(self, code: str, fn_name: str, cases_args: list[list[Any]]) -> str:
        return render("python", "prologue") + code + "\n" + render("python", "function_epilogue")

    def case_stdin(self, fn_name: str, args: list[Any], index: int, nonce: str) -> bytes:
        return json_case_stdin(fn_name, args, nonce)


def assert_program(setup_code: str, code: str) -> str:
    """The program for assert-mode tests: the case's test code arrives on stdin."""
    return render("python", "prologue") + setup_code + code + "\n" + render("python", "assert_epilogue")
