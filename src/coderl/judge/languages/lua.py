"""Lua's function caller: the judge's half of `coderl.sandbox.languages.lua.Lua`
(a dynamically typed language: literals follow the JSON values)."""

from __future__ import annotations

from coderl.judge.languages.typed import Untyped, escape
from coderl.judge.templates import render
from coderl.sandbox.languages.lua import Lua


class LuaCaller(Untyped):
    sandbox = Lua

    def string(self, text: str) -> str:  # Lua's \ddd is decimal
        return escape(text, lambda c: f"\\{c:03d}")

    def list_literal(self, items: list[str]) -> str:
        return "{" + ", ".join(items) + "}"

    def wrap(self, code: str, fn: str, cases: list[list[str]]) -> str:
        calls = ",\n".join(f"  [{i}] = function() return {fn}({', '.join(a)}) end" for i, a in enumerate(cases))
        return code + "\n" + render("lua", "main", cases=calls)
