"""C#'s function caller: the judge's half of `coderl.sandbox.languages.csharp.CSharp`
(the submission wrapped in a class or object unless it brings its ``Solution``; the return
value serialised by runtime type)."""

from __future__ import annotations

import re

from coderl.judge.languages.typed import Typed, array_or_generic, kind_of, u4_string
from coderl.judge.templates import render
from coderl.sandbox.languages.csharp import CSharp

_CS_KINDS = {"int": "int", "Int32": "int", "short": "int", "byte": "int", "long": "long", "Int64": "long",
             "double": "float", "float": "float", "decimal": "float", "bool": "bool", "Boolean": "bool",
             "string": "str", "String": "str", "char": "char"}


class CSharpCaller(Typed):
    sandbox = CSharp
    defaults = {"int": "int", "float": "double", "bool": "bool", "str": "string", "list": "{}[]"}
    signature = re.compile(r"[\w<>\[\],?\s]+?\s+NAME\s*\((?P<params>[^)]*)\)")
    string = staticmethod(u4_string)

    def elem(self, type_: str) -> str | None:
        return array_or_generic(type_, "List|IList|IEnumerable|ICollection|IReadOnlyList")

    def kind(self, type_: str) -> str:
        return kind_of(type_, _CS_KINDS)

    def list_literal(self, type_: str, items: list[str]) -> str:
        type_ = type_.strip()
        concrete = type_ if type_.endswith("[]") else f"List<{self.elem(type_)}>"
        return f"new {concrete}{{{', '.join(items)}}}"

    def number_suffix(self, text: str, kind: str) -> str:
        return text + ("L" if kind == "long" else "")

    def wrap(self, code: str, fn: str, cases: list[list[str]]) -> str:
        usings = "".join(re.findall(r"^\s*using\s+[\w.=\s]+;\s*$\n?", code, re.M))
        body = re.sub(r"^\s*using\s+[\w.=\s]+;\s*$", "", code, flags=re.M)
        static = re.search(r"\bstatic\b[^;{(]*\b" + re.escape(fn) + r"\s*\(", body) is not None
        if re.search(r"\bclass\s+Solution\b", body):
            target = "Solution" if static else "new Solution()"
        else:
            body = f"public class CoderlTarget {{\n{body}\n}}\n"
            target = "CoderlTarget" if static else "new CoderlTarget()"
        dispatch = "".join(f"      case {i}: return {target}.{fn}({', '.join(a)});\n" for i, a in enumerate(cases))
        return ("using System;\nusing System.Collections.Generic;\nusing System.Linq;\nusing System.Text;\n"
                + usings + body + render("csharp", "main", dispatch=dispatch))
