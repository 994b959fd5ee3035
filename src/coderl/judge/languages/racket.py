"""Racket's function caller: the judge's half of `coderl.sandbox.languages.racket.Racket`
(a dynamically typed language: literals follow the JSON values)."""

from __future__ import annotations

import re

from coderl.judge.languages.typed import Untyped
from coderl.judge.templates import render
from coderl.sandbox.languages.racket import Racket


class RacketCaller(Untyped):
    sandbox = Racket
    true, false = "#t", "#f"

    def list_literal(self, items: list[str]) -> str:
        return "(list " + " ".join(items) + ")"

    def wrap(self, code: str, fn: str, cases: list[list[str]]) -> str:
        if not re.match(r"\s*#lang\b", code):
            code = "#lang racket\n" + code
        calls = "\n".join(f"    [({i}) ({fn} {' '.join(a)})]" for i, a in enumerate(cases))
        return code + "\n" + render("racket", "main", cases=calls)
