"""Kotlin's function caller: the judge's half of `coderl.sandbox.languages.kotlin.Kotlin`
(the submission wrapped in a class or object unless it brings its ``Solution``; the return
value serialised by runtime type)."""

from __future__ import annotations

import re

from coderl.judge.languages.scala import SCALA_KINDS
from coderl.judge.languages.typed import NameColonType, kind_of, u4_string
from coderl.judge.templates import render
from coderl.sandbox.languages.kotlin import Kotlin

_KOTLIN_ARRAYS = {"IntArray": "Int", "LongArray": "Long", "DoubleArray": "Double", "BooleanArray": "Boolean",
                  "CharArray": "Char"}


class KotlinCaller(NameColonType):
    sandbox = Kotlin
    defaults = {"int": "Int", "float": "Double", "bool": "Boolean", "str": "String", "list": "List<{}>"}
    signature = re.compile(r"\bfun\s+(?:<[^>]*>\s*)?NAME\s*\((?P<params>[^)]*)\)")

    def string(self, text: str) -> str:
        return u4_string(text).replace("$", "\\$")

    def elem(self, type_: str) -> str | None:
        type_ = type_.strip()
        if type_ in _KOTLIN_ARRAYS:
            return _KOTLIN_ARRAYS[type_]
        match = re.fullmatch(r"(?:Array|List|MutableList|ArrayList|Collection|Iterable)\s*<(.+)>", type_)
        return match.group(1) if match else None

    def kind(self, type_: str) -> str:
        return kind_of(type_, SCALA_KINDS)

    def list_literal(self, type_: str, items: list[str]) -> str:
        type_ = type_.strip()
        if type_ in _KOTLIN_ARRAYS:
            return f"{type_[0].lower()}{type_[1:-5]}ArrayOf({', '.join(items)})"
        maker = {"Array": "arrayOf", "MutableList": "mutableListOf", "ArrayList": "arrayListOf"}.get(
            type_.split("<", 1)[0].strip(), "listOf")
        return f"{maker}<{self.elem(type_)}>({', '.join(items)})"

    def wrap(self, code: str, fn: str, cases: list[list[str]]) -> str:
        call = f"Solution().{fn}" if re.search(r"\bclass\s+Solution\b", code) else fn
        dispatch = "".join(f"        {i} -> {call}({', '.join(a)})\n" for i, a in enumerate(cases))
        return code + "\n" + render("kotlin", "main", dispatch=dispatch)
