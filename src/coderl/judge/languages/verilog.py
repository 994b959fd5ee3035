"""Verilog's function caller: the judge's half of `coderl.sandbox.languages.verilog.Verilog`
(a dynamically typed language: literals follow the JSON values)."""

from __future__ import annotations

import re
from typing import Any

from coderl.judge.languages.typed import Untyped
from coderl.judge.templates import render
from coderl.sandbox.languages.verilog import Verilog


class VerilogCaller(Untyped):
    """A Verilog ``function`` of integers: the caller is a module around it (unless the submission
    brings its own), the result printed as a decimal integer."""

    sandbox = Verilog

    def literal(self, value: Any) -> str:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"verilog function calls take integers, not {value!r}")
        return str(value)

    def wrap(self, code: str, fn: str, cases: list[list[str]]) -> str:
        calls = "".join(f"      {i}: coderl_result = {fn}({', '.join(a)});\n" for i, a in enumerate(cases))
        main = render("verilog", "main", cases=calls)
        if re.search(r"^\s*module\b", code, re.M):
            raise ValueError("verilog function calls take a bare function (the caller is its module)")
        return "module main;\n" + code + main + "endmodule\n"
