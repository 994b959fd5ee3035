"""The one normalised test schema every adapter produces and every judge mode consumes.

JSON form (``TestSpec.model_dump(mode="json")``), one of three modes::

    {"mode": "stdio",    "cases": [{"input": "1 2\\n", "output": "3\\n"}],
     "compare": {"float_abs_tol": null, ...}, "checker": null}
    {"mode": "function", "fn_name": "twoSum", "cases": [{"args": [[2, 7], 9], "output": [0, 1]}],
     "compare": {...}}
    {"mode": "assert",   "setup_code": "import math", "cases": [{"code": "assert f(1) == 2"}]}

`function` cases hold the positional arguments as JSON values and the *unwrapped* return value.
`assert` cases are test snippets appended to the program (HumanEval's ``check(entry)`` or one MBPP
assert each). A `checker` (stdio only) is a special judge that decides instead of `compare`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CompareOptions(_Strict):
    """How a stdio output or a function return value is compared to the expected one.

    The default is LiveCodeBench-exact: strip, split lines, strip each, equal line count, per line
    exact or equal as Decimal tokens. Tolerances are opt-in (training may want 1e-6).
    """

    float_abs_tol: float | None = Field(default=None, ge=0)
    float_rel_tol: float | None = Field(default=None, ge=0)
    case_insensitive: bool = False
    whitespace_tokens: bool = False  # compare whitespace-separated tokens, ignoring line structure
    #: function mode, APPS/TACO/PrimeIntellect convention: the expected output is ``[ret]``; the
    #: return value matches ``output[0]`` (or, as verl's prime_code allows, ``output`` itself)
    wrapped_output: bool = False


class Checker(_Strict):
    """A special judge, run in the sandbox as its own program.

    ``kind=program``: a checker in any supported language that reads its files from the work dir
    and decides by exit code (0 accepted; testlib's 1 wrong answer and 2 presentation error are
    wrong answers; anything else - testlib's 3 "fail", a crash, a timeout, a compile error - is the
    checker failing: a sandbox error, never a verdict about the program). File names:
    ``files="testlib"``: ``input.txt``, ``output.txt`` (contestant), ``answer.txt`` (expected);
    ``files="scalebox"``: ``stdin.txt``, ``stdout.txt`` (expected), ``answer.txt`` (contestant).
    ``kind=python_function``: Python source defining ``check(input, output, answer)`` returning a
    bool or ``(bool, message)``. The checker runs under its own limits (``cpu_s``, 1 GiB)."""

    kind: Literal["program", "python_function"] = "program"
    language: str = "python"
    code: str = Field(min_length=1)
    files: Literal["testlib", "scalebox"] = "testlib"
    cpu_s: float = Field(default=10.0, gt=0)  # the checker's own limit per case (wall: twice that)


class StdioCase(_Strict):
    input: str
    output: str


class FunctionCase(_Strict):
    args: list[Any]
    output: Any


class AssertCase(_Strict):
    code: str = Field(min_length=1)


class TestSpec(_Strict):
    __test__ = False  # not a pytest test class
    mode: Literal["stdio", "function", "assert"]
    cases: list[StdioCase] | list[FunctionCase] | list[AssertCase]
    fn_name: str | None = None
    setup_code: str = ""
    compare: CompareOptions = CompareOptions()
    checker: Checker | None = None

    @model_validator(mode="before")
    @classmethod
    def _cases_match_mode(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("cases"), list):
            case_type = {"stdio": StdioCase, "function": FunctionCase, "assert": AssertCase}.get(
                data.get("mode")
            )
            if case_type is not None:
                data = dict(data)
                data["cases"] = [
                    c if isinstance(c, case_type) else case_type.model_validate(c) for c in data["cases"]
                ]
        return data

    @model_validator(mode="after")
    def _check(self) -> TestSpec:
        if not self.cases:
            raise ValueError("cases: at least one test case is required")
        if self.mode == "function" and not self.fn_name:
            raise ValueError("fn_name: required when mode is 'function'")
        if self.checker is not None and self.mode != "stdio":
            raise ValueError("checker: a special judge applies to mode 'stdio' only")
        return self
