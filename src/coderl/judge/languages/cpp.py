"""C++'s function caller: the judge's half of `coderl.sandbox.languages.cpp.Cpp`
(a bare function or a ``Solution``; the return value serialised by overloads/traits chosen at
compile time)."""

from __future__ import annotations

import re
from typing import Any

from coderl.judge.languages.typed import Typed, c_string
from coderl.judge.templates import render
from coderl.sandbox.languages.cpp import Cpp

_C_INTS = {"int", "short", "long", "long long", "unsigned", "unsigned int", "unsigned long", "unsigned long long",
           "size_t", "int64_t", "int32_t", "uint64_t", "uint32_t", "long int", "long long int"}


class CppCaller(Typed):
    sandbox = Cpp
    defaults = {"int": "int", "float": "double", "bool": "bool", "str": "string", "list": "vector<{}>"}
    signature = re.compile(r"^[^\S\n]*(?:[\w:<>,*&]+[^\S\n]+)+\**&?NAME\s*\((?P<params>[^)]*)\)", )
    string = staticmethod(c_string)

    def _bare(self, type_: str) -> str:
        return re.sub(r"^std::", "", re.sub(r"\s+", " ", type_.replace("const", "").replace("&", "")).strip())

    def elem(self, type_: str) -> str | None:
        match = re.fullmatch(r"(?:std::)?vector\s*<(.+)>", self._bare(type_))
        return match.group(1) if match else None

    def kind(self, type_: str) -> str:
        bare = self._bare(type_)
        if bare in _C_INTS:
            return "long" if "long" in bare or "64" in bare or bare == "size_t" else "int"
        return {"double": "float", "float": "float", "bool": "bool", "string": "str", "char": "char"}.get(bare, "?")

    def list_literal(self, type_: str, items: list[str]) -> str:
        return f"std::vector<{self.elem(type_)}>{{{', '.join(items)}}}"

    def literal(self, type_: str, value: Any) -> str:
        text = super().literal(type_, value)
        return f"std::string({text})" if self.kind(type_) == "str" and self.elem(type_) is None else text

    def number_suffix(self, text: str, kind: str) -> str:
        return text + ("LL" if kind == "long" else "")

    def wrap(self, code: str, fn: str, cases: list[list[str]]) -> str:
        call = f"Solution().{fn}" if re.search(r"\b(class|struct)\s+Solution\b", code) else fn
        dispatch = "".join(
            f"    case {i}: {{ {' '.join(f'auto a{k} = {v};' for k, v in enumerate(a))} "
            f"coderl_json(out, {call}({', '.join(f'a{k}' for k in range(len(a)))})); break; }}\n"
            for i, a in enumerate(cases))
        return render("cpp", "head") + code + render("cpp", "main", dispatch=dispatch)
