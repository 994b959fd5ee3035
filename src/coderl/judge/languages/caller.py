"""The one protocol of the judge's function callers, and the callers of the languages whose
standard library parses JSON and hashes SHA-256.

A caller turns a submission into the program that runs one function-call case per run: it gets
the function's name and every case's arguments once per submission (``program``, compiled once)
and one case's stdin per run (``case_stdin``). Whatever the shape, the program's last line is
``<signature> <json>`` (`coderl.judge.signed`), compared outside the sandbox.

`JsonCaller` (node, typescript, PHP, Ruby, Perl) follows Python's contract
(`coderl.judge.languages.python`): stdin holds ``{"n": nonce, "f": name, "a": [args]}`` as one
JSON line; the program answers ``sha256(nonce + ":ok")``, a space and the return value as JSON,
after everything it printed itself. A ``Solution`` class with the method is preferred over a
top-level function (LeetCode style). The others get the arguments as typed literals
(`coderl.judge.languages.typed`).
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar, Protocol, runtime_checkable

from coderl.judge.templates import render
from coderl.sandbox.languages.base import Language

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@runtime_checkable
class Caller(Protocol):
    """What the judge needs from a language to judge function-call tests in it."""

    @property
    def name(self) -> str:
        """The language's name, as the sandbox's registry knows it."""
        ...

    def program(self, code: str, fn_name: str, cases_args: list[list[Any]]) -> str:
        """The submission with the caller of ``fn_name`` for these cases; ValueError (a bad
        request) where the name or an argument cannot be put into the program."""
        ...

    def case_stdin(self, fn_name: str, args: list[Any], index: int, nonce: str) -> bytes:
        """What the program reads to run case ``index`` (``args``) under ``nonce``."""
        ...


def check_identifier(fn_name: str) -> None:
    """ValueError unless ``fn_name`` is an identifier: it is spliced into the program."""
    if not _IDENTIFIER.fullmatch(fn_name):
        raise ValueError(f"fn_name {fn_name!r} is not an identifier")


def json_case_stdin(fn_name: str, args: list[Any], nonce: str) -> bytes:
    """One case as the JSON line Python's and `JsonCaller`'s programs read."""
    return json.dumps({"n": nonce, "f": fn_name, "a": args}).encode() + b"\n"


class JsonCaller:
    """Implements `Caller`: the template ``<template>/caller.tmpl`` appended to the submission,
    the case's arguments read as JSON from stdin."""

    sandbox: ClassVar[type[Language]]
    #: the language whose caller template this one runs (typescript runs javascript's)
    template: ClassVar[str]

    @property
    def name(self) -> str:
        return self.sandbox.name

    def join(self, code: str, caller: str) -> str:
        return code + "\n" + caller

    def program(self, code: str, fn_name: str, cases_args: list[list[Any]]) -> str:
        check_identifier(fn_name)
        return self.join(code, render(self.template, "caller", name=fn_name))

    def case_stdin(self, fn_name: str, args: list[Any], index: int, nonce: str) -> bytes:
        return json_case_stdin(fn_name, args, nonce)
