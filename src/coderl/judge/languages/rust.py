"""Rust's function caller: the judge's half of `coderl.sandbox.languages.rust.Rust`
(a bare function or a ``Solution``; the return value serialised by overloads/traits chosen at
compile time)."""

from __future__ import annotations

import re
from typing import Any

from coderl.judge.languages.typed import Typed, kind_of, rust_string
from coderl.judge.templates import render
from coderl.sandbox.languages.rust import Rust

_RUST_KINDS = {"i8": "int", "i16": "int", "i32": "int", "u8": "int", "u16": "int", "u32": "int", "i64": "int",
               "u64": "int", "usize": "int", "isize": "int", "i128": "int", "f64": "float", "f32": "float",
               "bool": "bool", "String": "str", "&str": "str", "str": "str", "char": "char"}


class RustCaller(Typed):
    sandbox = Rust
    defaults = {"int": "i64", "float": "f64", "bool": "bool", "str": "&str", "list": "Vec<{}>"}
    signature = re.compile(r"\bfn\s+NAME\s*(?:<[^>]*>)?\s*\((?P<params>[^)]*)\)")
    string = staticmethod(rust_string)

    def param_type(self, param: str) -> str:
        if ":" not in param:
            return ""  # self, &self, &mut self
        return param.split(":", 1)[1].strip()

    def _bare(self, type_: str) -> str:
        return re.sub(r"^&\s*(mut\s+)?", "", type_.strip())

    def elem(self, type_: str) -> str | None:
        bare = self._bare(type_)
        match = re.fullmatch(r"Vec\s*<(.+)>|\[(.+)\]", bare)
        return (match.group(1) or match.group(2)).strip() if match else None

    def kind(self, type_: str) -> str:
        return kind_of(self._bare(type_), _RUST_KINDS)

    def literal(self, type_: str, value: Any) -> str:
        text = super().literal(type_, value)
        ref = re.match(r"&\s*(mut\s+)?", type_.strip())
        if self.elem(type_) is None:
            if self._bare(type_) == "String":
                return f"String::from({text})"
            return text
        return (ref.group(0) if ref else "") + text

    def list_literal(self, type_: str, items: list[str]) -> str:
        return f"vec![{', '.join(items)}]"

    def number_suffix(self, text: str, kind: str) -> str:
        return text

    def wrap(self, code: str, fn: str, cases: list[list[str]]) -> str:
        call = fn
        if re.search(r"\bimpl\s+Solution\b", code):
            call = f"Solution::{fn}"
            if not re.search(r"\bstruct\s+Solution\b", code):
                code = "struct Solution;\n" + code
        dispatch = "".join(f"        {i} => coderl_json(&{call}({', '.join(a)})),\n" for i, a in enumerate(cases))
        return code + render("rust", "main", dispatch=dispatch)
