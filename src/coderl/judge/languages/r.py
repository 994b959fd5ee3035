"""R's function caller: the judge's half of `coderl.sandbox.languages.r.R`
(a dynamically typed language: literals follow the JSON values)."""

from __future__ import annotations

from typing import Any

from coderl.judge.languages.typed import Untyped
from coderl.judge.templates import render
from coderl.sandbox.languages.r import R


class RCaller(Untyped):
    sandbox = R
    true, false = "TRUE", "FALSE"

    def literal(self, value: Any) -> str:
        if isinstance(value, int) and not isinstance(value, bool):
            return f"{value}L" if abs(value) < 2**31 else f"{value}"
        return super().literal(value)

    def list_literal(self, items: list[str]) -> str:
        return "list(" + ", ".join(items) + ")"

    def wrap(self, code: str, fn: str, cases: list[list[str]]) -> str:
        calls = ",\n".join(f"  function() {fn}({', '.join(a)})" for a in cases)
        return code + "\n" + render("r", "main", cases=calls)
