"""The Python programs the judge runs for each mode, and how it reads their answer.

- ``stdio``: the submission as it is, in a namespace that already holds LiveCodeBench's prelude
  (the star-imports its judge prepends, with big-integer printing unlimited; the runner loads it
  once per submission, so line numbers in tracebacks are the submission's own). It runs as a real ``__main__`` program with a real stdin, so ``for line in
  sys.stdin``, ``sys.stdin.buffer`` and ``if __name__ == "__main__":`` all work (deliberate
  deviations from the official judge's mocks, see docs/judge.md).
- ``function``: prelude, a prologue that reads this case's arguments and a per-submission nonce
  from stdin, the submission, then an epilogue that calls ``Solution().fn`` (or the top-level
  ``fn``), turns a tuple into a list, serialises the return value to JSON *inside* the sandbox and
  writes ``<signature> <json>`` as the last line. The comparison happens outside on plain data,
  so a returned object with a lying ``__eq__``/``__str__`` gains nothing.
- ``assert``: prelude, prologue, setup code, the submission, then the case's test code (read from
  stdin, run in the module's globals) and finally the signature line. Passing needs that line:
  exiting early (``os._exit(0)``, ``sys.exit(0)``, ``raise SystemExit``) never passes.

The signature is ``sha256(nonce + ":ok")`` with a fresh nonce per submission, so printing a
constant cannot fake it. Residual risk, documented: the nonce lives in the program's own memory
(a program that knows this harness could find it with ``gc``), and assert-mode test code, being
code, is visible to the program while it runs (frame walking can read a constant in the assert).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from typing import Any

from coderl.judge import callers, typed_callers
from coderl.judge.asserts import SplitTest
from coderl.judge.spec import TestSpec
from coderl.judge.templates import render


def new_nonce() -> str:
    return secrets.token_hex(16)


def signature(nonce: str) -> str:
    return hashlib.sha256((nonce + ":ok").encode()).hexdigest()


def supports(language: str, mode: str) -> bool:
    """Whether ``mode`` tests are judged for ``language`` (our language name)."""
    return mode == "stdio" or language == "python" or (
        mode == "function" and (language in callers.LANGUAGES or language in typed_callers.LANGUAGES))


# The prologue (templates/python/prologue.tmpl) runs before the submission and captures the
# builtins the epilogue needs, so a submission that monkeypatches builtins/modules (compile, exec,
# hashlib, sys.settrace, ...) cannot change what the epilogue does; the epilogue also clears
# trace/profile hooks, which could otherwise skip the test lines.
def program(spec: TestSpec, code: str, language: str = "python") -> str:
    """The source to run for every case of ``spec`` (the prelude is not part of it: the engine
    loads it, see `coderl.sandbox.Program.prelude`). Function mode in other languages appends
    their caller (`coderl.judge.callers`); ValueError where there is none."""
    if spec.mode == "stdio":
        return code
    if language != "python":
        if spec.mode != "function":
            raise ValueError(f"{spec.mode} tests are judged for python only, not {language}")
        if language in typed_callers.LANGUAGES:
            return typed_callers.function_program(language, code, spec.fn_name or "",
                                                  [c.args for c in spec.cases])  # type: ignore[union-attr]
        return callers.function_program(language, code, spec.fn_name or "")
    if spec.mode == "function":
        return render("python", "prologue") + code + "\n" + render("python", "function_epilogue")
    return render("python", "prologue") + spec.setup_code + code + "\n" + render("python", "assert_epilogue")


def case_stdin(spec: TestSpec, index: int, nonce: str, test: SplitTest | None = None,
               language: str = "python") -> bytes:
    """One case's stdin; for an assert case, ``test`` is its code with the expected values taken
    out (`coderl.judge.asserts.split_asserts`); a typed caller gets only the case's index and the
    signature (its arguments are literals in the program)."""
    case = spec.cases[index]
    if spec.mode == "stdio":
        return case.input.encode()  # type: ignore[union-attr]
    if spec.mode == "function" and language in typed_callers.LANGUAGES:
        return typed_callers.case_stdin(index, signature(nonce))
    if spec.mode == "function":
        data = {"n": nonce, "f": spec.fn_name, "a": case.args}  # type: ignore[union-attr]
    else:
        data = {"n": nonce, "c": test.code if test is not None else case.code}  # type: ignore[union-attr]
    return json.dumps(data).encode() + b"\n"


def read_signed(stdout: bytes, nonce: str) -> tuple[bool, Any]:
    """(signed, payload): whether the last line carries this submission's signature, and the JSON
    value after it (function mode) or None (assert mode)."""
    lines = stdout.rstrip(b"\n").rsplit(b"\n", 1)
    last = lines[-1].decode("utf-8", "replace")
    sig = signature(nonce)
    if last == sig:
        return True, None
    if last.startswith(sig + " "):
        payload = last[len(sig) + 1:]
        if payload.startswith("!"):
            return True, NotPlainData(payload[1:])
        try:
            return True, json.loads(payload)
        except json.JSONDecodeError:
            return False, None
    return False, None


class NotPlainData(str):
    """A return value that JSON cannot carry (a set, an object): compares equal to nothing."""

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = str.__hash__

    def __repr__(self) -> str:
        return f"<{str(self)} object>"
