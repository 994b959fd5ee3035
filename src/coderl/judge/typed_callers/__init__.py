"""Function-call judging for the languages without a JSON parser or SHA-256 we could rely on in
their standard library (the compiled, statically typed ones and lua, bash, R, racket, verilog).

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
from typing import Any

from coderl.judge.typed_callers.managed import CSharp, Java, Kotlin, Scala
from coderl.judge.typed_callers.native import Cpp, D, Go, Rust
from coderl.judge.typed_callers.scripting import Bash, Lua, R, Racket, Verilog

CALLERS: dict[str, Any] = {c.name: c for c in (Java(), Cpp(), CSharp(), Go(), Rust(), D(), Scala(), Kotlin(),
                                                Lua(), Bash(), R(), Racket(), Verilog())}
LANGUAGES: tuple[str, ...] = tuple(CALLERS)


def function_program(language: str, code: str, fn_name: str, cases_args: list[list[Any]]) -> str:
    """The submission with the caller of ``fn_name`` for these cases' arguments; ValueError when
    the signature cannot be read or an argument does not fit its parameter's type."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", fn_name):
        raise ValueError(f"fn_name {fn_name!r} is not an identifier")
    caller = CALLERS[language]
    cases = [caller.arguments(code, fn_name, list(args)) for args in cases_args]
    return caller.program(code, fn_name, cases)


def case_stdin(index: int, signature: str) -> bytes:
    return f"{index} {signature}\n".encode()
