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

import json

from coderl.judge.asserts import SplitTest
from coderl.judge.languages import CALLERS
from coderl.judge.languages.python import assert_program
from coderl.judge.spec import TestSpec


def supports(language: str, mode: str) -> bool:
    """Whether ``mode`` tests are judged for ``language`` (our language name)."""
    return mode == "stdio" or language == "python" or (mode == "function" and language in CALLERS)


def program(spec: TestSpec, code: str, language: str = "python") -> str:
    """The source to run for every case of ``spec`` (the prelude is not part of it: the engine
    loads it, see `coderl.sandbox.Program.prelude`). Function mode wraps the submission in its
    language's caller (`coderl.judge.languages`); ValueError where there is none."""
    if spec.mode == "stdio":
        return code
    if spec.mode == "assert":
        if language != "python":
            raise ValueError(f"{spec.mode} tests are judged for python only, not {language}")
        return assert_program(spec.setup_code, code)
    caller = CALLERS.get(language)
    if caller is None:
        raise ValueError(f"function tests are not judged for {language} (only {', '.join(CALLERS)})")
    return caller.program(code, spec.fn_name or "", [c.args for c in spec.cases])  # type: ignore[union-attr]


def case_stdin(spec: TestSpec, index: int, nonce: str, test: SplitTest | None = None,
               language: str = "python") -> bytes:
    """One case's stdin; for an assert case, ``test`` is its code with the expected values taken
    out (`coderl.judge.asserts.split_asserts`); a function case's is its caller's."""
    case = spec.cases[index]
    if spec.mode == "stdio":
        return case.input.encode()  # type: ignore[union-attr]
    if spec.mode == "function":
        return CALLERS[language].case_stdin(spec.fn_name or "", case.args, index, nonce)  # type: ignore[union-attr]
    data = {"n": nonce, "c": test.code if test is not None else case.code}  # type: ignore[union-attr]
    return json.dumps(data).encode() + b"\n"
