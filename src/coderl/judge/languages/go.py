"""Go's function caller: the judge's half of `coderl.sandbox.languages.go.Go`
(a bare function or a ``Solution``; the return value serialised by overloads/traits chosen at
compile time)."""

from __future__ import annotations

import re
from typing import Any

from coderl.judge.languages.typed import Typed, kind_of, split_top, u4_string
from coderl.judge.templates import render
from coderl.sandbox.languages.go import Go

_GO_KINDS = {"int": "int", "int8": "int", "int16": "int", "int32": "int", "uint": "int", "uint32": "int",
             "int64": "long", "uint64": "long", "float64": "float", "float32": "float", "bool": "bool",
             "string": "str", "rune": "char", "byte": "char"}


class GoCaller(Typed):
    sandbox = Go
    defaults = {"int": "int", "float": "float64", "bool": "bool", "str": "string", "list": "[]{}"}
    signature = re.compile(r"^func\s+(?:\([^)]*\)\s*)?NAME\s*\((?P<params>[^)]*)\)")

    def params(self, code: str, fn: str) -> list[str] | None:
        match = re.search(self.signature.pattern.replace("NAME", re.escape(fn)), code, re.M)
        if match is None:
            return None
        types: list[str] = []
        carried = ""
        for part in reversed(split_top(match.group("params"))):  # `a, b int`: b's type is a's
            pieces = part.split(None, 1)
            carried = pieces[1].strip() if len(pieces) == 2 else carried
            types.insert(0, carried)
        return types

    def string(self, text: str) -> str:
        return u4_string(text)

    def elem(self, type_: str) -> str | None:
        return type_.strip()[2:] if type_.strip().startswith("[]") else None

    def kind(self, type_: str) -> str:
        return kind_of(type_, _GO_KINDS)

    def literal(self, type_: str, value: Any) -> str:
        if self.kind(type_) == "char" and self.elem(type_) is None:
            return f"{type_.strip()}({super().literal(type_, value)})"
        return super().literal(type_, value)

    def list_literal(self, type_: str, items: list[str]) -> str:
        return f"{type_.strip()}{{{', '.join(items)}}}"

    def number_suffix(self, text: str, kind: str) -> str:
        return text

    def wrap(self, code: str, fn: str, cases: list[list[str]]) -> str:
        body = re.sub(r"^\s*package\s+\w+\s*$", "", code, count=1, flags=re.M)
        call = fn
        receiver = re.search(r"^func\s+\(\s*\w+\s+\*?(\w+)\s*\)\s*" + re.escape(fn) + r"\s*\(", body, re.M)
        if receiver:
            call = f"(&{receiver.group(1)}{{}}).{fn}"
        dispatch = "".join(f"\tcase {i}:\n\t\tresult = {call}({', '.join(a)})\n" for i, a in enumerate(cases))
        return render("go", "head") + body + render("go", "main", dispatch=dispatch)
