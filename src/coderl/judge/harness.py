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

# The prologue runs before the submission and captures the builtins the epilogue needs, so a
# submission that monkeypatches builtins/modules (compile, exec, hashlib, sys.settrace, ...)
# cannot change what the epilogue does; the epilogue also clears trace/profile hooks, which could
# otherwise skip the test lines.
_PROLOGUE = (
    "def __coderl_prologue():\n"
    "    import builtins as _b, hashlib as _h, json as _j, os as _o, sys as _s\n"
    "    _data = _j.loads(_s.stdin.readline())\n"
    "    _tools = (_b.exec, _b.compile, _h.sha256, _o.write, _s.settrace, _s.setprofile, _j.dumps,\n"
    "              _b.isinstance, _b.type, _b.list, _b.tuple, _b.getattr, _b.hasattr, _b.TypeError, _b.repr, _s)\n"
    "    return lambda: (_data, _tools)\n"
    "__coderl_case = __coderl_prologue(); del __coderl_prologue\n"
)

_FUNCTION_EPILOGUE = """
def __coderl_epilogue(_case, _g=globals()):
    _data, (_exec, _compile, _sha256, _write, _settrace, _setprofile, _dumps,
            _isinstance, _type, _list, _tuple, _getattr, _hasattr, _TypeError, _repr, _sys) = _case
    _settrace(None)
    _setprofile(None)
    _name = _data["f"]
    _cls = _g.get("Solution")
    _fn = _getattr(_cls(), _name) if _isinstance(_cls, _type) and _hasattr(_cls, _name) else _g[_name]
    _result = _fn(*_data["a"])
    _settrace(None)
    _setprofile(None)
    if _isinstance(_result, _tuple):
        _result = _list(_result)
    try:
        _payload = _dumps(_result)
    except (_TypeError, ValueError):
        _payload = "!" + _type(_result).__name__  # not plain data: can never equal the expected value
    try:
        _sys.stdout.flush()
    except Exception:
        pass
    _sig = _sha256((_data["n"] + ":ok").encode()).hexdigest()
    _write(1, ("\\n" + _sig + " " + _payload + "\\n").encode())
__coderl_epilogue(__coderl_case())
"""

_ASSERT_EPILOGUE = """
def __coderl_epilogue(_case, _g=globals()):
    _data, (_exec, _compile, _sha256, _write, _settrace, _setprofile, _dumps,
            _isinstance, _type, _list, _tuple, _getattr, _hasattr, _TypeError, _repr, _sys) = _case
    _sig = _sha256((_data["n"] + ":ok").encode()).hexdigest()

    def _emit(_k, _v):  # a rewritten assert: report the value, the judge compares it outside
        try:
            if _type(_v).__module__ == "numpy" and _getattr(_v, "ndim", 1) == 0:
                _v = _v.item()  # a numpy scalar, as its Python number
            _text = _repr(_v).replace("\\n", " ")
        except BaseException:
            _text = "!"
        try:
            _sys.stdout.flush()
        except Exception:
            pass
        _write(1, ("\\n" + _sig + " E " + _repr(_k) + " " + _text + "\\n").encode("utf-8", "backslashreplace"))

    _g["__coderl_emit"] = _emit
    _settrace(None)
    _setprofile(None)
    try:
        _exec(_compile(_data["c"], "<test>", "exec"), _g)
    except AssertionError as _e:  # an assert of the tests failed: a wrong answer, said as such
        _tb = _e.__traceback__
        while _tb.tb_next is not None:
            _tb = _tb.tb_next
        if _tb.tb_frame.f_code.co_filename != "<test>":
            raise  # raised inside the program: its runtime error
        _sys.stderr.write("AssertionError: an assert of the tests failed (line %d)\\n" % _tb.tb_lineno)
        _write(1, ("\\n" + _sig + " F\\n").encode())
        return
    _settrace(None)
    _setprofile(None)
    try:
        _sys.stdout.flush()
    except Exception:
        pass
    _write(1, ("\\n" + _sig + "\\n").encode())
__coderl_epilogue(__coderl_case())
"""


def new_nonce() -> str:
    return secrets.token_hex(16)


def signature(nonce: str) -> str:
    return hashlib.sha256((nonce + ":ok").encode()).hexdigest()


def supports(language: str, mode: str) -> bool:
    """Whether ``mode`` tests are judged for ``language`` (our language name)."""
    return mode == "stdio" or language == "python" or (
        mode == "function" and (language in callers.LANGUAGES or language in typed_callers.LANGUAGES))


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
        return _PROLOGUE + code + "\n" + _FUNCTION_EPILOGUE
    return _PROLOGUE + spec.setup_code + code + "\n" + _ASSERT_EPILOGUE


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
