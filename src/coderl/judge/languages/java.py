"""Java's function caller: the judge's half of `coderl.sandbox.languages.java.Java`
(the submission wrapped in a class or object unless it brings its ``Solution``; the return
value serialised by runtime type)."""

from __future__ import annotations

import re

from coderl.judge.languages.typed import Typed, array_or_generic, c_string, kind_of
from coderl.judge.templates import render
from coderl.sandbox.languages.java import Java

_JAVA_KINDS = {"int": "int", "Integer": "int", "short": "int", "byte": "int", "long": "long", "Long": "long",
               "double": "float", "Double": "float", "float": "float", "Float": "float", "boolean": "bool",
               "Boolean": "bool", "String": "str", "char": "char", "Character": "char"}


class JavaCaller(Typed):
    sandbox = Java
    defaults = {"int": "int", "float": "double", "bool": "boolean", "str": "String", "list": "{}[]"}
    signature = re.compile(r"[\w<>\[\]?,\s]+?\s+NAME\s*\((?P<params>[^)]*)\)")
    string = staticmethod(c_string)

    def elem(self, type_: str) -> str | None:
        return array_or_generic(type_, "List|ArrayList|Collection|Iterable")

    def kind(self, type_: str) -> str:
        return kind_of(type_, _JAVA_KINDS)

    def list_literal(self, type_: str, items: list[str]) -> str:
        if type_.strip().endswith("[]"):
            return f"new {type_}{{{', '.join(items)}}}"
        return f"new java.util.ArrayList<>(java.util.Arrays.asList({', '.join(items)}))" if items \
            else "new java.util.ArrayList<>()"

    def number_suffix(self, text: str, kind: str) -> str:
        return text + ("L" if kind == "long" else "")

    def wrap(self, code: str, fn: str, cases: list[list[str]]) -> str:
        imports = "".join(re.findall(r"^\s*import\s+[\w.*\s]+;\s*$\n?", code, re.M))
        body = re.sub(r"^\s*import\s+[\w.*\s]+;\s*$", "", code, flags=re.M)
        target = "Solution" if re.search(r"\bclass\s+Solution\b", body) else "CoderlTarget"
        dispatch = "".join(f"      case {i}: return new {target}().{fn}({', '.join(a)});\n"
                           for i, a in enumerate(cases))
        if target == "Solution":
            body = re.sub(r"\bpublic\s+(?=(final\s+)?class\s+Solution\b)", "", body)
        else:
            body = f"class CoderlTarget {{\n{body}\n}}\n"
        return ("import java.util.*;\nimport java.util.stream.*;\n" + imports + body
                + render("java", "main", dispatch=dispatch))
