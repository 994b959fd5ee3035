"""Scala's function caller: the judge's half of `coderl.sandbox.languages.scala.Scala`
(the submission wrapped in a class or object unless it brings its ``Solution``; the return
value serialised by runtime type)."""

from __future__ import annotations

import re

from coderl.judge.languages.typed import NameColonType, c_string, kind_of
from coderl.judge.templates import render
from coderl.sandbox.languages.scala import Scala

SCALA_KINDS = {"Int": "int", "Short": "int", "Byte": "int", "Long": "long", "Double": "float", "Float": "float",
               "Boolean": "bool", "String": "str", "Char": "char", "BigInt": "int"}


class ScalaCaller(NameColonType):
    sandbox = Scala
    defaults = {"int": "Int", "float": "Double", "bool": "Boolean", "str": "String", "list": "List[{}]"}
    signature = re.compile(r"\bdef\s+NAME\s*(?:\[[^\]]*\])?\s*\((?P<params>[^)]*)\)")
    string = staticmethod(c_string)

    def elem(self, type_: str) -> str | None:
        match = re.fullmatch(r"(?:Array|List|Seq|Vector|IndexedSeq)\s*\[(.+)\]", type_.strip())
        return match.group(1) if match else None

    def kind(self, type_: str) -> str:
        return kind_of(type_, SCALA_KINDS)

    def list_literal(self, type_: str, items: list[str]) -> str:
        outer = type_.strip().split("[", 1)[0].strip()
        return f"{outer}[{self.elem(type_)}]({', '.join(items)})"

    def wrap(self, code: str, fn: str, cases: list[list[str]]) -> str:
        if re.search(r"\bobject\s+Solution\b", code):
            call, body = f"Solution.{fn}", code
        elif re.search(r"\bclass\s+Solution\b", code):
            call, body = f"new Solution().{fn}", code
        else:
            call, body = f"CoderlTarget.{fn}", f"object CoderlTarget {{\n{code}\n}}\n"
        dispatch = "".join(f"      case {i} => {call}({', '.join(a)})\n" for i, a in enumerate(cases))
        return render("scala", "main", dispatch=dispatch) + body
