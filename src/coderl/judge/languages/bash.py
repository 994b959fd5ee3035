"""bash's function caller: the judge's half of `coderl.sandbox.languages.bash.Bash`
(a dynamically typed language: literals follow the JSON values)."""

from __future__ import annotations

from typing import Any

from coderl.judge.languages.typed import Untyped
from coderl.judge.templates import render
from coderl.sandbox.languages.bash import Bash


class BashCaller(Untyped):
    """A bash function answers on its stdout: a number or true/false is sent as that JSON
    value, anything else as a JSON string (trailing newlines dropped, as ``$(...)`` does)."""

    sandbox = Bash

    def string(self, text: str) -> str:
        return "'" + text.replace("'", "'\\''") + "'"

    def literal(self, value: Any) -> str:
        if isinstance(value, list):
            raise ValueError("bash function calls take numbers, booleans and strings, not lists")
        return super().literal(value)

    def wrap(self, code: str, fn: str, cases: list[list[str]]) -> str:
        calls = "".join(f"  {i}) coderl_out=$({fn} {' '.join(a)}) ;;\n" for i, a in enumerate(cases))
        return code + "\n" + render("bash", "main", cases=calls)
