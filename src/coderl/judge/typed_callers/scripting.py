"""Callers for the dynamically typed languages ScaleBox judges function calls in: Lua, bash, R,
Racket, Verilog (literals follow the JSON values)."""

from __future__ import annotations

import re
from typing import Any

from coderl.judge.templates import render
from coderl.judge.typed_callers.base import Untyped, escape


class Lua(Untyped):
    name = "lua"

    def string(self, text: str) -> str:  # Lua's \ddd is decimal
        return escape(text, lambda c: f"\\{c:03d}")

    def list_literal(self, items: list[str]) -> str:
        return "{" + ", ".join(items) + "}"

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        calls = ",\n".join(f"  [{i}] = function() return {fn}({', '.join(a)}) end" for i, a in enumerate(cases))
        return code + "\n" + render("lua", "main", cases=calls)


class Bash(Untyped):
    """A bash function answers on its stdout: a number or true/false is sent as that JSON
    value, anything else as a JSON string (trailing newlines dropped, as ``$(...)`` does)."""

    name = "bash"

    def string(self, text: str) -> str:
        return "'" + text.replace("'", "'\\''") + "'"

    def literal(self, value: Any) -> str:
        if isinstance(value, list):
            raise ValueError("bash function calls take numbers, booleans and strings, not lists")
        return super().literal(value)

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        calls = "".join(f"  {i}) coderl_out=$({fn} {' '.join(a)}) ;;\n" for i, a in enumerate(cases))
        return code + "\n" + render("bash", "main", cases=calls)


class R(Untyped):
    name = "r"
    true, false = "TRUE", "FALSE"

    def literal(self, value: Any) -> str:
        if isinstance(value, int) and not isinstance(value, bool):
            return f"{value}L" if abs(value) < 2**31 else f"{value}"
        return super().literal(value)

    def list_literal(self, items: list[str]) -> str:
        return "list(" + ", ".join(items) + ")"

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        calls = ",\n".join(f"  function() {fn}({', '.join(a)})" for a in cases)
        return code + "\n" + render("r", "main", cases=calls)


class Racket(Untyped):
    name = "racket"
    true, false = "#t", "#f"

    def list_literal(self, items: list[str]) -> str:
        return "(list " + " ".join(items) + ")"

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        if not re.match(r"\s*#lang\b", code):
            code = "#lang racket\n" + code
        calls = "\n".join(f"    [({i}) ({fn} {' '.join(a)})]" for i, a in enumerate(cases))
        return code + "\n" + render("racket", "main", cases=calls)


class Verilog(Untyped):
    """A Verilog ``function`` of integers: the caller is a module around it (unless the submission
    brings its own), the result printed as a decimal integer."""

    name = "verilog"

    def literal(self, value: Any) -> str:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"verilog function calls take integers, not {value!r}")
        return str(value)

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        calls = "".join(f"      {i}: coderl_result = {fn}({', '.join(a)});\n" for i, a in enumerate(cases))
        main = render("verilog", "main", cases=calls)
        if re.search(r"^\s*module\b", code, re.M):
            raise ValueError("verilog function calls take a bare function (the caller is its module)")
        return "module main;\n" + code + main + "endmodule\n"
