"""Callers with the arguments as source literals, for the languages without a JSON parser or
SHA-256 we could rely on in their standard library (the compiled, statically typed ones and lua,
bash, R, racket, verilog): what they share is here (splitting a parameter list, source literals
of JSON values with strings escaped per language, and the two shapes: typed from a parsed
signature, or following the JSON value in a dynamically typed language).

Compiled once, run per case: the caller appended to (or wrapped around) the submission holds
every case's arguments as source literals, generated here from the case's JSON values and typed
from the function's signature parsed out of the submission (one regex per language). Its main
reads ``<case index> <signature>`` from stdin (`coderl.judge.harness.case_stdin`), calls the
function with that case's literals and writes ``<signature> <json>`` as its last line, the
return value in canonical JSON; the comparison happens outside the sandbox as for the other
languages, and expected outputs never enter it. The signature is computed outside and sent
whole (these languages lack a SHA-256 to derive it from a nonce); a program that reads its own
stdin before the caller could echo it, the same residual risk as the nonce in Python's memory,
and it still has to return the right value to pass.

Supported argument types: integers, floats, booleans, strings, chars and lists/arrays/vectors of
them (nested); a signature the regex cannot read, or a type outside these, is a clear 400.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

from coderl.judge.languages.caller import check_identifier
from coderl.judge.signed import signature as signed_by
from coderl.sandbox.languages.base import Language


def split_top(text: str) -> list[str]:
    """Comma-separated parts at bracket depth zero (generic types keep their commas)."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def escape(text: str, unicode_escape: Callable[[int], str]) -> str:
    """A double-quoted string literal; non-ASCII characters stay as they are (UTF-8 sources)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(unicode_escape(ord(ch)))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def c_string(text: str) -> str:
    """C++, D, Java, Scala, Lua: octal escapes, which never swallow a following digit (Java and
    Scala turn a \\uXXXX escape into a raw character before lexing, so that form cannot be used)."""
    return escape(text, lambda c: f"\\{c:03o}")


def u4_string(text: str) -> str:  # C#, Go, Kotlin
    return escape(text, lambda c: f"\\u{c:04x}")


def rust_string(text: str) -> str:
    return escape(text, lambda c: f"\\u{{{c:x}}}")


def number(value: Any, kind: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"argument {value!r} is not a number ({kind} expected)")
    if kind == "float":
        return repr(float(value))
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"argument {value!r} is not an integer")
    return str(int(value))


def scalar_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    raise ValueError(f"argument {value!r}: only numbers, booleans, strings and lists are supported")


class LiteralCaller:
    """Implements `coderl.judge.languages.caller.Caller`: the program holds every case's arguments
    as literals (``arguments``, per language) in a dispatch its main picks from by the case index
    (``wrap``, per language); stdin carries only the index and the signature."""

    sandbox: ClassVar[type[Language]]

    @property
    def name(self) -> str:
        return self.sandbox.name

    def arguments(self, code: str, fn: str, args: list[Any]) -> list[str]:
        raise NotImplementedError

    def wrap(self, code: str, fn: str, cases: list[list[str]]) -> str:
        raise NotImplementedError

    def program(self, code: str, fn_name: str, cases_args: list[list[Any]]) -> str:
        check_identifier(fn_name)
        return self.wrap(code, fn_name, [self.arguments(code, fn_name, list(args)) for args in cases_args])

    def case_stdin(self, fn_name: str, args: list[Any], index: int, nonce: str) -> bytes:
        return f"{index} {signed_by(nonce)}\n".encode()


class Typed(LiteralCaller):
    """A statically typed language: the signature names each parameter's type, the literal of a
    value is rendered for that type (``elem`` says a list type's element type, ``kind`` a scalar's)."""

    signature: re.Pattern[str]
    string: Callable[[str], str]

    #: The type a parameter is taken to have when the submission has no readable signature for the
    #: function (per JSON kind; ``list`` formats its element type): the call then fails to compile
    #: in the submission's own compiler, a compile error rather than a rejected request.
    defaults: dict[str, str]

    def params(self, code: str, fn: str) -> list[str] | None:
        match = re.search(self.signature.pattern.replace("NAME", re.escape(fn)), code, re.M)
        if match is None:
            return None
        return [self.param_type(p) for p in split_top(match.group("params")) if self.param_type(p)]

    def default_type(self, value: Any) -> str:
        if isinstance(value, list):
            return self.defaults["list"].format(self.default_type(value[0]) if value else self.defaults["int"])
        return self.defaults[scalar_kind(value)]

    def param_type(self, param: str) -> str:  # "Type name" (C family)
        param = re.sub(r"\b(final|const|in|ref|out|scope|params)\b|[&]", " ", param.split("=")[0]).strip()
        return re.sub(r"\s*\b[A-Za-z_]\w*$", "", param).strip()

    def elem(self, type_: str) -> str | None:
        raise NotImplementedError

    def kind(self, type_: str) -> str:
        raise NotImplementedError

    def list_literal(self, type_: str, items: list[str]) -> str:
        raise NotImplementedError

    def literal(self, type_: str, value: Any) -> str:
        element = self.elem(type_)
        if element is not None:
            if not isinstance(value, list):
                raise ValueError(f"argument {value!r} is not a list for {type_}")
            return self.list_literal(type_, [self.literal(element, v) for v in value])
        kind = self.kind(type_)
        if kind == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"argument {value!r} is not a boolean for {type_}")
            return "true" if value else "false"
        if kind == "str":
            if not isinstance(value, str):
                raise ValueError(f"argument {value!r} is not a string for {type_}")
            return self.string(value)
        if kind == "char":
            if not (isinstance(value, str) and len(value) == 1):
                raise ValueError(f"argument {value!r} is not one character for {type_}")
            return "'" + self.string(value)[1:-1].replace("'", "\\'") + "'"
        if kind in ("int", "long", "float"):
            text = number(value, "float" if kind == "float" else "integer")
            return self.number_suffix(text, kind)
        raise ValueError(f"parameter type {type_!r} is not supported in {self.name} function calls")

    def number_suffix(self, text: str, kind: str) -> str:
        return text + ("L" if kind == "long" else "")

    def arguments(self, code: str, fn: str, args: list[Any]) -> list[str]:
        types = self.params(code, fn)
        if types is None or len(types) != len(args):  # the compiler says what is wrong with the submission
            types = [self.default_type(a) for a in args]
        return [self.literal(t, a) for t, a in zip(types, args, strict=True)]


def array_or_generic(type_: str, generics: str) -> str | None:
    """The element type of ``T[]`` or of one of the ``generics`` (a regex alternation) ``<T>``
    (Java, C#)."""
    type_ = type_.strip()
    if type_.endswith("[]"):
        return type_[:-2]
    match = re.fullmatch(rf"(?:{generics})\s*<(.+)>", type_)
    return match.group(1) if match else None


def kind_of(type_: str, table: dict[str, str]) -> str:
    return table.get(type_.strip(), "?")


class NameColonType(Typed):
    """``name: Type`` parameters (Scala, Kotlin)."""

    def param_type(self, param: str) -> str:
        return param.split(":", 1)[1].split("=")[0].strip() if ":" in param else ""


class Untyped(LiteralCaller):
    """A dynamically typed language: literals follow the JSON value itself."""

    true, false = "true", "false"

    def arguments(self, code: str, fn: str, args: list[Any]) -> list[str]:
        return [self.literal(a) for a in args]

    def literal(self, value: Any) -> str:
        if isinstance(value, list):
            return self.list_literal([self.literal(v) for v in value])
        kind = scalar_kind(value)
        if kind == "bool":
            return self.true if value else self.false
        if kind == "str":
            return self.string(value)
        return number(value, kind if kind == "float" else "integer")

    def string(self, text: str) -> str:
        return c_string(text)

    def list_literal(self, items: list[str]) -> str:
        raise NotImplementedError
