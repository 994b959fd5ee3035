"""ScaleBox's ``config.provided_data``, read the way its server reads it, in every shape it accepts.

Shapes (both routes accept all of them; ScaleBox splits them between its two routes):

- ``{"test_cases": {"type", "input": [...], "output": [...], "fn_name", "json_input"}}``: one
  object of parallel lists (``/common_evaluate_batch``).
- ``{"test_cases": [{"type"?, "input", "output", "fn_name"?}, ...]}``: one object per case
  (``/common_evaluate``); the first case's ``type`` (else a non-null ``fn_name``) sets the kind.
- ``{"test": [{"input": {"stdin"}, "output": {"stdout"}}, ...]}`` (or that list as a JSON string):
  stdin/stdout cases (``/common_evaluate``).
- ``assert`` in ScaleBox's two documented shapes, as ``test_cases`` (an object, or a list of them):
  ``{"type": "assert", "test", "entry_point"}`` (HumanEval: the test code defines
  ``check(candidate)`` and ``check(entry_point)`` is called after it) and ``{"type": "assert",
  "tests", "stop_tokens"}`` (MultiPL-E: the tests follow the program; for the languages whose
  MultiPL-E tests begin by closing the function, the completion is cut at its first stop token).
  MultiPL-E's Go tests (``func TestX(t *testing.T)``) run under go_test, as ScaleBox runs them.

Python asserts become our assert-mode `TestSpec` (expected values kept outside the sandbox, an
early exit never passes). Asserts in other languages are whole programs, as in MultiPL-E and
ScaleBox, but where ScaleBox passes one on a clean exit, here it must also print a per-request
sentinel put where its tests end (`coderl.server.tests_done`): an exit before the tests never passes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from coderl.errors import InvalidTestSpec
from coderl.judge import TestSpec, to_spec
from coderl.server.tests_done import arm, new_sentinel

#: ScaleBox cuts the completion at a stop token for these MultiPL-E languages only (their tests
#: start by closing the function); the others keep the whole extracted completion.
_CUT_AT_STOP_TOKEN = {"cpp", "csharp", "java", "rust", "scala", "bash", "swift"}
#: An entry point in a completion that the tests' own would clash with.
_MAIN = {"d": "void main", "csharp": "public static void Main"}
#: Standard imports a freeform completion may rely on (MultiPL-E prompts carry them; a freeform
#: completion is judged without its prompt).
_HEADER = {
    "cpp": "".join(f"#include <{h}>\n" for h in (
        "cassert", "climits", "cmath", "cstdlib", "cstring", "algorithm", "deque", "iostream", "map", "numeric",
        "optional", "queue", "set", "sstream", "stack", "string", "tuple", "unordered_map", "unordered_set",
        "utility", "vector")) + "using namespace std;\n",
    "java": "import java.util.*;\nimport java.util.function.*;\nimport java.util.stream.*;\n"
            "import java.math.*;\nimport java.io.*;\n",
    "csharp": "using System;\nusing System.Collections.Generic;\nusing System.Linq;\nusing System.Text;\n"
              "using System.Numerics;\nusing System.Diagnostics;\n",
}


@dataclass(frozen=True)
class AssertPrograms:
    """Non-Python assert tests: one whole program per test object, passing on a clean exit that
    printed ``sentinel`` (`coderl.server.tests_done`; ``sentinels[k]`` is None where program k's
    tests have no known end: a clean exit passes, as on ScaleBox); run in ``language`` where that is
    not the submission's (MultiPL-E's Go tests run under go_test). ``shown``: the programs without
    the sentinel, for the client's ``full_code``."""

    sources: tuple[str, ...]
    language: str | None = None
    sentinels: tuple[str | None, ...] = ()
    shown: tuple[str, ...] = ()


def read_tests(provided: dict[str, Any], language: str, code: str) -> TestSpec | AssertPrograms:
    """The tests in ``provided_data`` for a submission of ``code`` in ``language`` (a resolved
    coderl language name); `InvalidTestSpec` names what could not be read."""
    if "test_cases" in provided:
        cases = provided["test_cases"]
        if isinstance(cases, list):
            return _case_list(cases, language, code)
        if isinstance(cases, dict):
            if cases.get("type") == "assert" and not {"input", "test_code"} & set(cases):
                return _asserts([cases], language, code)
            return to_spec(cases, "io_typed")
        raise InvalidTestSpec("provided_data.test_cases must be an object or a list of objects")
    if "test" in provided:
        return to_spec(provided["test"], "sf_tests")
    raise InvalidTestSpec("provided_data needs test_cases or test")


def _case_list(cases: list[Any], language: str, code: str) -> TestSpec | AssertPrograms:
    if not cases or not all(isinstance(c, dict) for c in cases):
        raise InvalidTestSpec("provided_data.test_cases: a non-empty list of objects")
    first = cases[0]
    kind = first.get("type") or ("function_call" if first.get("fn_name") is not None else "stdin_stdout")
    if kind == "assert":
        return _asserts(cases, language, code)
    names = {c.get("fn_name") for c in cases} if kind == "function_call" else set()
    if len(names) > 1:
        raise InvalidTestSpec(f"provided_data.test_cases name different functions: {sorted(map(str, names))}")
    try:
        columns = {"input": [c["input"] for c in cases], "output": [c["output"] for c in cases]}
    except KeyError as exc:
        raise InvalidTestSpec(f"provided_data.test_cases: every case needs {exc}") from None
    return to_spec({"type": kind, "fn_name": names.pop() if names else None, **columns}, "io_typed")


def _asserts(cases: list[dict[str, Any]], language: str, code: str) -> TestSpec | AssertPrograms:
    tests = []
    for case in cases:
        text = case.get("tests") or case.get("test")
        if not isinstance(text, str) or not text.strip():
            raise InvalidTestSpec("assert tests need a test (HumanEval) or tests (MultiPL-E) string")
        tests.append((text, case))
    if language == "python":
        return TestSpec(mode="assert", cases=[{"code": _with_check(text, case.get("entry_point"))}
                                              for text, case in tests])
    sentinel = new_sentinel()
    if language in ("go", "go_test") and all("*testing.T" in text for text, _ in tests):
        armed = [arm(text, "go_test", sentinel) for text, _ in tests]
        return AssertPrograms(tuple(go_test_program(code, a or text) for a, (text, _) in zip(armed, tests, strict=True)),
                              language="go_test", sentinels=tuple(sentinel if a else None for a in armed),
                              shown=tuple(go_test_program(code, text) for text, _ in tests))
    armed = [arm(text, language, sentinel) for text, _ in tests]
    return AssertPrograms(
        tuple(multiple_program(code, a or text, case.get("stop_tokens"), language)
              for a, (text, case) in zip(armed, tests, strict=True)),
        sentinels=tuple(sentinel if a else None for a in armed),
        shown=tuple(multiple_program(code, text, case.get("stop_tokens"), language) for text, case in tests))


def _with_check(test: str, entry_point: Any) -> str:
    if entry_point is None:
        return test
    if not isinstance(entry_point, str) or not entry_point.isidentifier():
        raise InvalidTestSpec(f"entry_point must be a function name, got {entry_point!r}")
    return f"{test}\ncheck({entry_point})\n"


def multiple_program(code: str, tests: str, stop_tokens: Any, language: str) -> str:
    """A MultiPL-E program: header, the completion (cut at its first stop token where MultiPL-E's
    tests close the function themselves; without a clashing entry point), then the tests."""
    if language in _CUT_AT_STOP_TOKEN:
        code = code[:_first_stop(code, stop_tokens)]
    if language in _MAIN and _MAIN[language] in code:
        code = code[:code.index(_MAIN[language])]
    if language == "java":  # MultiPL-E's class is Problem; the tests call into it from main
        code = code.replace("class Problem", "class Main")
    return f"{_HEADER.get(language, '')}{code}\n{tests}"


def go_test_program(code: str, tests: str) -> str:
    """A MultiPL-E Go program as ScaleBox builds it for ``go test``: ``import ("fmt")``, the
    completion and the tests, then every ``package`` clause moved to the top and every import
    merged into one list after it (the completion brings the prompt's ``package x_test`` and
    ``import ("testing" "fmt")``; a completion without a package clause fails to compile there too)."""
    full = f'import ("fmt")\n{code}\n{tests}'
    packages = sorted(set(re.findall(r"package\s+(\w+)", full)))
    full = re.sub(r"package\s+(\w+)", "", full)
    grouped = [line.strip() for block in re.findall(r"import\s+\((.*?)\)", full, flags=re.S)
               for line in block.split("\n")]
    imports = sorted(set(re.findall(r'import\s+("\w+")', full) + grouped) - {""})
    full = re.sub(r'import\s+("\w+")', "", full)
    full = re.sub(r"import\s+\((.*?)\)", "", full, flags=re.S)
    return "\n".join(f"package {p}" for p in packages) + "\n\n" + "\n".join(f"import {i}" for i in imports) \
        + "\n\n" + full


def _first_stop(code: str, stop_tokens: Any) -> int:
    """Where the earliest stop token starts (``re:`` marks a regular expression; a blank line is
    not a stop, since a freeform completion has them inside its function)."""
    if stop_tokens is None:
        return len(code)
    if not isinstance(stop_tokens, list) or not all(isinstance(t, str) for t in stop_tokens):
        raise InvalidTestSpec("stop_tokens must be a list of strings")
    cut = len(code)
    for token in stop_tokens:
        if token == "\n\n":
            continue
        if token.startswith("re:"):
            try:
                match = re.search(token[3:].strip(), code)
            except re.error as exc:
                raise InvalidTestSpec(f"stop_tokens: bad regular expression {token!r} ({exc})") from None
            at = match.start() if match else -1
        else:
            at = code.find(token)
        if at != -1:
            cut = min(cut, at)
    return cut
