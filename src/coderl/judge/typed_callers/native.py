"""Callers for the natively compiled languages: C++, Go, Rust, D (a bare function or a
``Solution``; the return value serialised by overloads/traits chosen at compile time)."""

from __future__ import annotations

import re
from typing import Any

from coderl.judge.templates import render
from coderl.judge.typed_callers.base import Typed, c_string, kind_of, rust_string, split_top, u4_string

_C_INTS = {"int", "short", "long", "long long", "unsigned", "unsigned int", "unsigned long", "unsigned long long",
           "size_t", "int64_t", "int32_t", "uint64_t", "uint32_t", "long int", "long long int"}


class Cpp(Typed):
    name = "cpp"
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

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        call = f"Solution().{fn}" if re.search(r"\b(class|struct)\s+Solution\b", code) else fn
        dispatch = "".join(
            f"    case {i}: {{ {' '.join(f'auto a{k} = {v};' for k, v in enumerate(a))} "
            f"coderl_json(out, {call}({', '.join(f'a{k}' for k in range(len(a)))})); break; }}\n"
            for i, a in enumerate(cases))
        return render("cpp", "head") + code + render("cpp", "main", dispatch=dispatch)


_GO_KINDS = {"int": "int", "int8": "int", "int16": "int", "int32": "int", "uint": "int", "uint32": "int",
             "int64": "long", "uint64": "long", "float64": "float", "float32": "float", "bool": "bool",
             "string": "str", "rune": "char", "byte": "char"}


class Go(Typed):
    name = "go"
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

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        body = re.sub(r"^\s*package\s+\w+\s*$", "", code, count=1, flags=re.M)
        call = fn
        receiver = re.search(r"^func\s+\(\s*\w+\s+\*?(\w+)\s*\)\s*" + re.escape(fn) + r"\s*\(", body, re.M)
        if receiver:
            call = f"(&{receiver.group(1)}{{}}).{fn}"
        dispatch = "".join(f"\tcase {i}:\n\t\tresult = {call}({', '.join(a)})\n" for i, a in enumerate(cases))
        return render("go", "head") + body + render("go", "main", dispatch=dispatch)


_RUST_KINDS = {"i8": "int", "i16": "int", "i32": "int", "u8": "int", "u16": "int", "u32": "int", "i64": "int",
               "u64": "int", "usize": "int", "isize": "int", "i128": "int", "f64": "float", "f32": "float",
               "bool": "bool", "String": "str", "&str": "str", "str": "str", "char": "char"}


class Rust(Typed):
    name = "rust"
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

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        call = fn
        if re.search(r"\bimpl\s+Solution\b", code):
            call = f"Solution::{fn}"
            if not re.search(r"\bstruct\s+Solution\b", code):
                code = "struct Solution;\n" + code
        dispatch = "".join(f"        {i} => coderl_json(&{call}({', '.join(a)})),\n" for i, a in enumerate(cases))
        return code + render("rust", "main", dispatch=dispatch)


_D_KINDS = {"int": "int", "short": "int", "byte": "int", "uint": "int", "long": "long", "ulong": "long",
            "size_t": "long", "double": "float", "float": "float", "real": "float", "bool": "bool",
            "string": "str", "char": "char", "dchar": "char", "wchar": "char"}


class D(Typed):
    name = "d"
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

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        call = f"(new Solution()).{fn}" if re.search(r"\bclass\s+Solution\b", code) else fn
        dispatch = "".join(f"        case {i}: payload = coderlJson({call}({', '.join(a)})); break;\n"
                           for i, a in enumerate(cases))
        return code + render("d", "main", dispatch=dispatch)
