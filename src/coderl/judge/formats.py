"""Adapters from every test format we meet to the one normalised `TestSpec`.

`to_spec(obj, fmt=None)` takes a `TestSpec`, a dict, a list, or a (JSON or Python-literal) string
and either a format name or auto-detection by shape. Formats (``FORMATS``):

| name           | shape                                                                                      |
|----------------|--------------------------------------------------------------------------------------------|
| coderl         | our own ``{"mode": ..., "cases": [...]}``                                                  |
| lcb_row        | a LiveCodeBench record: public/private test cases (private maybe base64+zlib+pickle), metadata.func_name |
| lcb_tests      | a list ``[{"input", "output", "testtype"}]`` (give ``fn_name`` for functional tests)        |
| io_lists       | ``{"inputs": [...], "outputs": [...], "fn_name"?}``: APPS/TACO input_output, verl prime_code, rllm code_contests, LCB evaluation sample |
| io_typed       | ``{"input": [...], "output": [...], "fn_name", "type"}``: the recipe's ground truth and ScaleBox ``provided_data.test_cases`` |
| primeintellect | ``verification_info``: ``{"language", "test_cases": [{"type", "input", "output", "fn_name"}]}`` |
| code_contests  | deepmind/code_contests ``{public_tests, private_tests, generated_tests}``                  |
| sf_tests       | SandboxFusion samples: ``[{"input": {"stdin"}, "output": {"stdout"}}]``                   |
| stdio_list     | ``[{"input", "output"}]`` (rllm codeforces)                                                 |
| rllm_functional| ``{"functional": "def check(candidate): ...\\ncheck(Solution().f)"}``                     |
| humaneval      | a HumanEval row ``{prompt, test, entry_point}``                                            |
| mbpp           | an MBPP row ``{test_list, test_setup_code? | test_imports?}``                              |
| rllm_row       | an rllm row ``{problem, tests}`` (``tests`` in any format above)                           |

Conventions: function-call inputs are positional-argument lists; LiveCodeBench's newline-separated
JSON arguments are parsed here. APPS/TACO/PrimeIntellect/ScaleBox function outputs are ``[ret]``
wrapped: kept as given with ``compare.wrapped_output`` set, so the judge accepts ``output[0]``
(or ``output`` itself, as verl's prime_code does). Anything unreadable raises `InvalidTestSpec`
naming the field.

Interactive problems raise `UnsupportedProblem` (no adapter can turn a dialogue with a judge into
fixed tests): a dict marked ``"interactive": true`` or ``"mode": "interactive"``, or one whose
statement (``problem``, ``question``, ``question_content``, ``description``) says "this is an
interactive problem" / "this problem is interactive", as Codeforces and AtCoder statements do.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from coderl.errors import InvalidTestSpec, UnsupportedProblem
from coderl.judge.spec import TestSpec
from coderl.judge.unpickle import decode_compressed_tests


def to_spec(obj: Any, fmt: str | None = None, *, fn_name: str | None = None) -> TestSpec:
    """Normalise tests in any supported format (auto-detected when ``fmt`` is None)."""
    if isinstance(obj, TestSpec):
        return obj
    if isinstance(obj, bytes):
        obj = obj.decode("utf-8")
    if isinstance(obj, str):
        obj = _parse_text(obj)
    if isinstance(obj, dict):
        _refuse_interactive(obj)
    if fmt is None:
        fmt = detect(obj)
    try:
        adapter = FORMATS[fmt]
    except KeyError:
        raise InvalidTestSpec(f"unknown test format {fmt!r}; known: {', '.join(sorted(FORMATS))}") from None
    try:
        return adapter(obj, fn_name) if fmt in _TAKES_FN_NAME else adapter(obj)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "tests"
        raise InvalidTestSpec(f"{fmt} tests: {where}: {first.get('msg')}") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise InvalidTestSpec(f"{fmt} tests: cannot read ({type(exc).__name__}: {exc})") from None


def detect(obj: Any) -> str:
    """The format name for a parsed object, by its keys; InvalidTestSpec when nothing fits."""
    if isinstance(obj, dict):
        keys = set(obj)
        for fmt, required in _DETECT_DICT:
            if required <= keys:
                return fmt
        raise InvalidTestSpec(f"unrecognised test format: dict with keys {sorted(keys)[:8]}")
    if isinstance(obj, list):
        if not obj:
            raise InvalidTestSpec("tests: empty list")
        first = obj[0]
        if isinstance(first, dict):
            if "testtype" in first:
                return "lcb_tests"
            if isinstance(first.get("input"), dict):
                return "sf_tests"
            if {"input", "output"} <= set(first):
                return "stdio_list"
        raise InvalidTestSpec(f"unrecognised test format: list of {type(first).__name__}")
    raise InvalidTestSpec(f"unrecognised test format: {type(obj).__name__}")


# ---------------------------------------------------------------------------- adapters
def _coderl(obj: dict) -> TestSpec:
    return TestSpec.model_validate(obj)


def _lcb_row(row: dict) -> TestSpec:
    metadata = row.get("metadata") or {}
    if isinstance(metadata, str):
        metadata = json.loads(metadata or "{}")
    fn_name = metadata.get("func_name")
    cases = _lcb_case_list(row.get("public_test_cases"), "public_test_cases")
    cases += _lcb_case_list(row.get("private_test_cases"), "private_test_cases")
    return _lcb_tests(cases, fn_name)


def _lcb_case_list(value: Any, field: str) -> list[dict]:
    if value in (None, ""):
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            value = decode_compressed_tests(value)
    if not isinstance(value, list):
        raise InvalidTestSpec(f"lcb_row: {field} must be a list of test cases")
    return value


def _lcb_tests(cases: list[dict], fn_name: str | None) -> TestSpec:
    if not cases:
        raise InvalidTestSpec("lcb tests: no test cases")
    functional = any(c.get("testtype") == "functional" for c in cases)
    if functional:
        if not fn_name:
            raise InvalidTestSpec("lcb tests: functional tests need fn_name (metadata.func_name)")
        return TestSpec(mode="function", fn_name=fn_name, cases=[
            {"args": _json_lines(c["input"]), "output": json.loads(c["output"])} for c in cases])
    return TestSpec(mode="stdio", cases=[{"input": c["input"], "output": c["output"]} for c in cases])


def _json_lines(text: str) -> list[Any]:
    """LiveCodeBench functional input: one JSON value per line, one line per argument."""
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def _io_lists(obj: dict, fn_name: str | None = None) -> TestSpec:
    if "input_output" in obj:  # an APPS/TACO row, or LCB's evaluation sample
        io = obj["input_output"]
        obj = json.loads(io) if isinstance(io, str) else io
    inputs, outputs = obj["inputs"], obj["outputs"]
    _same_length(inputs, outputs, "inputs", "outputs")
    name = obj.get("fn_name") or fn_name
    if name:
        return TestSpec(mode="function", fn_name=name, compare={"wrapped_output": True},
                        cases=[{"args": _args(i), "output": o} for i, o in zip(inputs, outputs, strict=True)])
    return TestSpec(mode="stdio", cases=[{"input": _text(i), "output": _text(o)}
                                         for i, o in zip(inputs, outputs, strict=True)])


def _io_typed(obj: dict, fn_name: str | None = None) -> TestSpec:
    kind = obj.get("type") or ("function_call" if (obj.get("fn_name") or fn_name) else "stdin_stdout")
    inputs, outputs = obj.get("input", []), obj.get("output", [])
    if kind == "assert":
        return TestSpec(mode="assert", cases=[{"code": c} for c in _as_list(inputs or obj.get("test_code"))])
    _same_length(inputs, outputs, "input", "output")
    if kind == "function_call":
        name = obj.get("fn_name") or fn_name
        if not name:
            raise InvalidTestSpec("function_call tests need fn_name")
        if obj.get("json_input"):  # ScaleBox: LiveCodeBench-style JSON lines, unwrapped output
            return TestSpec(mode="function", fn_name=name, cases=[
                {"args": _json_lines(i) if isinstance(i, str) else i, "output": json.loads(o) if isinstance(o, str) else o}
                for i, o in zip(inputs, outputs, strict=True)])
        return TestSpec(mode="function", fn_name=name, compare={"wrapped_output": True},
                        cases=[{"args": _args(i), "output": o} for i, o in zip(inputs, outputs, strict=True)])
    if kind != "stdin_stdout":
        raise InvalidTestSpec(f"unknown test type {kind!r}; known: stdin_stdout, function_call, assert")
    return TestSpec(mode="stdio", cases=[{"input": _text(i), "output": _text(o)}
                                         for i, o in zip(inputs, outputs, strict=True)])


def _primeintellect(info: dict) -> TestSpec:
    cases = info["test_cases"]
    if not isinstance(cases, list) or not cases:
        raise InvalidTestSpec("primeintellect: test_cases must be a non-empty list")
    if not all(isinstance(c, dict) for c in cases):
        raise InvalidTestSpec("primeintellect: every test case must be an object")
    kinds = {"function" if c.get("type") == "function_call" or c.get("fn_name") else "stdio" for c in cases}
    if len(kinds) > 1:  # judged one way, half the row would be misread
        raise InvalidTestSpec("primeintellect: test_cases mix function_call and stdin_stdout cases")
    if kinds == {"function"}:
        names = {c.get("fn_name") for c in cases}
        if len(names) != 1:
            raise InvalidTestSpec(f"primeintellect: test_cases name different functions: {sorted(map(str, names))}")
        return TestSpec(mode="function", fn_name=names.pop(), compare={"wrapped_output": True},
                        cases=[{"args": _args(c["input"]), "output": c["output"]} for c in cases])
    return TestSpec(mode="stdio", cases=[{"input": _text(c["input"]), "output": _text(c["output"])} for c in cases])


def _code_contests(row: dict) -> TestSpec:
    cases = []
    for field in ("public_tests", "private_tests", "generated_tests"):
        group = row.get(field) or {}
        inputs, outputs = group.get("input", []), group.get("output", [])
        _same_length(inputs, outputs, f"{field}.input", f"{field}.output")
        cases += [{"input": i, "output": o} for i, o in zip(inputs, outputs, strict=True)]
    if not cases:
        raise InvalidTestSpec("code_contests: no tests in public_tests/private_tests/generated_tests")
    return TestSpec(mode="stdio", cases=cases)


def _sf_tests(cases: list[dict]) -> TestSpec:
    return TestSpec(mode="stdio", cases=[{"input": c["input"]["stdin"], "output": c["output"]["stdout"]}
                                         for c in cases])


def _stdio_list(cases: list[dict]) -> TestSpec:
    return TestSpec(mode="stdio", cases=[{"input": _text(c["input"]), "output": _text(c["output"])} for c in cases])


def _rllm_functional(obj: dict) -> TestSpec:
    return TestSpec(mode="assert", cases=[{"code": obj["functional"]}])


def _humaneval(row: dict) -> TestSpec:
    """The prompt goes before the submission (a body-only completion then completes it; a full
    definition simply redefines it), the tests and ``check(entry_point)`` after."""
    return TestSpec(mode="assert", setup_code=row["prompt"],
                    cases=[{"code": f"{row['test']}\ncheck({row['entry_point']})"}])


def _rllm_row(row: dict) -> TestSpec:
    return to_spec(row["tests"])


def _mbpp(row: dict) -> TestSpec:
    tests = row["test_list"]
    if isinstance(tests, str):
        tests = _parse_text(tests)
    setup = row.get("test_setup_code") or ""
    labels = row.get("labels")
    if not setup and labels:
        labels = _parse_text(labels) if isinstance(labels, str) else labels
        setup = labels.get("test_setup_code") or ""
    imports = row.get("test_imports") or []
    setup = "\n".join([*imports, setup]).strip()
    return TestSpec(mode="assert", setup_code=setup + "\n" if setup else "",
                    cases=[{"code": t} for t in _as_list(tests)])


FORMATS: dict[str, Callable[..., TestSpec]] = {
    "coderl": _coderl,
    "lcb_row": _lcb_row,
    "lcb_tests": lambda cases, fn_name=None: _lcb_tests(cases, fn_name),
    "io_lists": _io_lists,
    "io_typed": _io_typed,
    "primeintellect": _primeintellect,
    "code_contests": _code_contests,
    "sf_tests": _sf_tests,
    "stdio_list": _stdio_list,
    "rllm_functional": _rllm_functional,
    "humaneval": _humaneval,
    "mbpp": _mbpp,
    "rllm_row": _rllm_row,
}
_TAKES_FN_NAME = {"lcb_tests", "io_lists", "io_typed"}
_DETECT_DICT: list[tuple[str, set[str]]] = [
    ("coderl", {"mode", "cases"}),
    ("lcb_row", {"public_test_cases"}),
    ("primeintellect", {"test_cases"}),
    ("io_lists", {"inputs", "outputs"}),
    ("io_lists", {"input_output"}),
    ("io_typed", {"input", "output"}),
    ("io_typed", {"type"}),
    ("code_contests", {"public_tests"}),
    ("code_contests", {"private_tests"}),
    ("rllm_functional", {"functional"}),
    ("humaneval", {"test", "entry_point", "prompt"}),
    ("mbpp", {"test_list"}),
    ("rllm_row", {"problem", "tests"}),
]
_STATEMENT_FIELDS = ("problem", "question", "question_content", "description")
_INTERACTIVE = re.compile(r"this is an interactive problem|this problem is interactive", re.I)


def _refuse_interactive(obj: dict) -> None:
    marked = obj.get("interactive") is True or obj.get("mode") == "interactive"
    statement = next((s for s in (obj.get(f) for f in _STATEMENT_FIELDS) if isinstance(s, str) and _INTERACTIVE.search(s)),
                     None)
    if marked or statement is not None:
        name = obj.get("question_id") or obj.get("name") or obj.get("problem_id") or "this problem"
        raise UnsupportedProblem(f"{name} is interactive: interactive problems are not supported "
                                 "(they need a live judge, not fixed tests)")


# ---------------------------------------------------------------------------- helpers
def _parse_text(text: str) -> Any:
    """JSON first, then a Python literal (the rllm files use single quotes)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        raise InvalidTestSpec(f"tests string is neither JSON nor a Python literal ({type(exc).__name__})") from None


def _text(value: Any) -> str:
    """APPS sometimes stores stdin/stdout as a list of lines."""
    if isinstance(value, list):
        return "\n".join(str(v) for v in value) + "\n"
    if not isinstance(value, str):
        raise InvalidTestSpec(f"stdio test input/output must be a string, got {type(value).__name__}")
    return value


def _args(value: Any) -> list[Any]:
    if isinstance(value, str):  # a JSON string of the argument list, or LCB-style lines
        try:
            parsed = json.loads(value)
            return parsed if isinstance(parsed, list) else [parsed]
        except json.JSONDecodeError:
            return _json_lines(value)
    if not isinstance(value, list):
        raise InvalidTestSpec(f"function-call input must be an argument list, got {type(value).__name__}")
    return value


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not value:
        raise InvalidTestSpec("expected a non-empty list of tests")
    return value


def _same_length(inputs: Any, outputs: Any, a: str, b: str) -> None:
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise InvalidTestSpec(f"{a} and {b} must be lists")
    if len(inputs) != len(outputs):
        raise InvalidTestSpec(f"{a} has {len(inputs)} entries but {b} has {len(outputs)}")
