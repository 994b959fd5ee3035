"""D's function caller: the judge's half of `coderl.sandbox.languages.d.D`
(a bare function or a ``Solution``; the return value serialised by overloads/traits chosen at
compile time)."""

from __future__ import annotations

import re

from coderl.judge.languages.typed import Typed, c_string, kind_of
from coderl.judge.templates import render
from coderl.sandbox.languages.d import D

_D_KINDS = {"int": "int", "short": "int", "byte": "int", "uint": "int", "long": "long", "ulong": "long",
            "size_t": "long", "double": "float", "float": "float", "real": "float", "bool": "bool",
            "string": "str", "char": "char", "dchar": "char", "wchar": "char"}


class DCaller(Typed):
    sandbox = D
    defaults = {"int": "int", "float": "double", "bool": "bool", "str": "string", "list": "{}[]"}
    signature = re.compile(r"^[^\S\n]*(?:[\w!()\[\]]+[^\S\n]+)+NAME\s*\((?P<params>[^)]*)\)")
    string = staticmethod(c_string)

    def elem(self, type_: str) -> str | None:
        type_ = re.sub(r"\bconst\b|\bimmutable\b", "", type_).strip()
        return type_[:-2].strip() if type_.endswith("[]") else None

    def kind(self, type_: str) -> str:
        return kind_of(re.sub(r"\bconst\b|\bimmutable\b", "", type_), _D_KINDS)

    def list_literal(self, type_: str, items: list[str]) -> str:
        return f"cast({type_.strip()}) [{', '.join(items)}]" if items else "[]"

    def wrap(self, code: str, fn: str, cases: list[list[str]]) -> str:
        call = f"(new Solution()).{fn}" if re.search(r"\bclass\s+Solution\b", code) else fn
        dispatch = "".join(f"        case {i}: payload = coderlJson({call}({', '.join(a)})); break;\n"
                           for i, a in enumerate(cases))
        return code + render("d", "main", dispatch=dispatch)
