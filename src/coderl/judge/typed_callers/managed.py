"""Callers for the managed languages: Java, C#, Scala, Kotlin (the submission wrapped in a class
or object unless it brings its ``Solution``; the return value serialised by runtime type)."""

from __future__ import annotations

import re

from coderl.judge.templates import render
from coderl.judge.typed_callers.base import (
    NameColonType,
    Typed,
    array_or_generic,
    c_string,
    kind_of,
    u4_string,
)

_JAVA_KINDS = {"int": "int", "Integer": "int", "short": "int", "byte": "int", "long": "long", "Long": "long",
               "double": "float", "Double": "float", "float": "float", "Float": "float", "boolean": "bool",
               "Boolean": "bool", "String": "str", "char": "char", "Character": "char"}


class Java(Typed):
    name = "java"
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

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
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


_CS_KINDS = {"int": "int", "Int32": "int", "short": "int", "byte": "int", "long": "long", "Int64": "long",
             "double": "float", "float": "float", "decimal": "float", "bool": "bool", "Boolean": "bool",
             "string": "str", "String": "str", "char": "char"}


class CSharp(Typed):
    name = "csharp"
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

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
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


_SCALA_KINDS = {"Int": "int", "Short": "int", "Byte": "int", "Long": "long", "Double": "float", "Float": "float",
                "Boolean": "bool", "String": "str", "Char": "char", "BigInt": "int"}


class Scala(NameColonType):
    name = "scala"
    defaults = {"int": "Int", "float": "Double", "bool": "Boolean", "str": "String", "list": "List[{}]"}
    signature = re.compile(r"\bdef\s+NAME\s*(?:\[[^\]]*\])?\s*\((?P<params>[^)]*)\)")
    string = staticmethod(c_string)

    def elem(self, type_: str) -> str | None:
        match = re.fullmatch(r"(?:Array|List|Seq|Vector|IndexedSeq)\s*\[(.+)\]", type_.strip())
        return match.group(1) if match else None

    def kind(self, type_: str) -> str:
        return kind_of(type_, _SCALA_KINDS)

    def list_literal(self, type_: str, items: list[str]) -> str:
        outer = type_.strip().split("[", 1)[0].strip()
        return f"{outer}[{self.elem(type_)}]({', '.join(items)})"

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        if re.search(r"\bobject\s+Solution\b", code):
            call, body = f"Solution.{fn}", code
        elif re.search(r"\bclass\s+Solution\b", code):
            call, body = f"new Solution().{fn}", code
        else:
            call, body = f"CoderlTarget.{fn}", f"object CoderlTarget {{\n{code}\n}}\n"
        dispatch = "".join(f"      case {i} => {call}({', '.join(a)})\n" for i, a in enumerate(cases))
        return render("scala", "main", dispatch=dispatch) + body

_KOTLIN_ARRAYS = {"IntArray": "Int", "LongArray": "Long", "DoubleArray": "Double", "BooleanArray": "Boolean",
                  "CharArray": "Char"}


class Kotlin(NameColonType):
    name = "kotlin"
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
        return kind_of(type_, _SCALA_KINDS)

    def list_literal(self, type_: str, items: list[str]) -> str:
        type_ = type_.strip()
        if type_ in _KOTLIN_ARRAYS:
            return f"{type_[0].lower()}{type_[1:-5]}ArrayOf({', '.join(items)})"
        maker = {"Array": "arrayOf", "MutableList": "mutableListOf", "ArrayList": "arrayListOf"}.get(
            type_.split("<", 1)[0].strip(), "listOf")
        return f"{maker}<{self.elem(type_)}>({', '.join(items)})"

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        call = f"Solution().{fn}" if re.search(r"\bclass\s+Solution\b", code) else fn
        dispatch = "".join(f"        {i} -> {call}({', '.join(a)})\n" for i, a in enumerate(cases))
        return code + "\n" + render("kotlin", "main", dispatch=dispatch)
