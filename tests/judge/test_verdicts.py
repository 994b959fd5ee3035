"""Every run status maps to its own verdict; per-submission options (stop, budget, limits) hold."""

from __future__ import annotations

import json

import pytest

from coderl.errors import BadRequest, NoCodeFound
from coderl.judge import Submission, Verdict
from coderl.sandbox import Limits
from tests.judge.conftest import py

ECHO = {"inputs": ["1\n", "2\n", "3\n"], "outputs": ["1\n", "2\n", "3\n"]}
FAST = Limits(cpu_s=1, wall_s=3, memory_mb=256)


@pytest.mark.parametrize("code,verdict", [
    ("print(input())", Verdict.ACCEPTED),
    ("print(int(input()) + 1)", Verdict.WRONG_ANSWER),
    ("raise ValueError('boom')", Verdict.RUNTIME_ERROR),
    ("while True:\n    pass", Verdict.TIME_LIMIT),
    ("x = bytearray(600 * 2**20)\nprint(len(x))", Verdict.MEMORY_LIMIT),
    ("import sys\nsys.stdout.write('x' * 4096)", Verdict.OUTPUT_LIMIT),
])
def test_each_status_has_its_verdict(judge, code, verdict):
    res = judge(py(code, ECHO, limits=FAST.replace(stdout_kb=2)))
    assert res.verdict is verdict, res.to_dict(include_output=False)
    assert res.accepted is (verdict is Verdict.ACCEPTED)


def test_stop_at_first_failure_or_run_all(judge):
    code = "x = int(input())\nprint(x if x != 2 else 0)"
    stopped = judge(py(code, ECHO))
    assert [c.verdict for c in stopped.cases] == [Verdict.ACCEPTED, Verdict.WRONG_ANSWER, Verdict.SKIPPED]
    assert (stopped.passed, stopped.total, stopped.first_failure) == (1, 3, 1)
    full = judge(py(code, ECHO, stop_on_first_failure=False))
    assert [c.verdict for c in full.cases] == [Verdict.ACCEPTED, Verdict.WRONG_ANSWER, Verdict.ACCEPTED]
    assert full.verdict is Verdict.WRONG_ANSWER and full.passed == 2
    assert "line 1" in full.cases[1].message
    json.dumps(full.to_dict())  # JSON-ready


def test_total_budget_skips_the_rest(judge):
    # 1 s sleeps, 8 tests, a 3 s budget: the first test has 2 s to spare for its start (a loaded
    # machine is slow there), the 4th cannot start on any machine, and the 8 s the tests would take
    # without the budget are far from the 3 s they take with it
    code = "import time\ntime.sleep(1.0)\nprint(input())"
    spec = {"inputs": ["1\n"] * 8, "outputs": ["1\n"] * 8}
    res = judge(py(code, spec, total_time_s=3.0, stop_on_first_failure=False))
    assert res.cases[0].verdict is Verdict.ACCEPTED and res.cases[-1].verdict is Verdict.SKIPPED
    assert not res.accepted and res.wall_s < 6, res.wall_s  # bounded by the budget, not by the tests


def test_per_submission_limits(judge):
    code = "x = bytearray(150 * 2**20)\nprint(input())"
    assert judge(py(code, ECHO, limits=Limits(memory_mb=512))).accepted
    assert judge(py(code, ECHO, limits=Limits(memory_mb=64))).verdict is Verdict.MEMORY_LIMIT


def test_compiled_languages_and_compile_errors(judge):
    cpp_ok = "#include <iostream>\nint main(){int x; std::cin >> x; std::cout << x << std::endl;}"
    cpp_bad = "int main() { return x; }"
    js_ok = "console.log(require('fs').readFileSync(0, 'utf8').trim())"
    ok, bad, js = judge([Submission(language="cpp", code=cpp_ok, spec=ECHO),
                         Submission(language="cpp", code=cpp_bad, spec=ECHO),
                         Submission(language="nodejs", code=js_ok, spec=ECHO)])
    assert ok.accepted and ok.language == "cpp"
    assert bad.verdict is Verdict.COMPILE_ERROR and "x" in bad.compile_message
    assert [c.verdict for c in bad.cases] == [Verdict.COMPILE_ERROR, Verdict.SKIPPED, Verdict.SKIPPED]
    assert js.accepted and js.language == "javascript"


def test_response_extraction_and_bad_submissions(judge):
    res = judge(Submission(response="<think>```python\nprint(0)\n```</think>Here:\n```python\nprint(input())\n```",
                           spec=ECHO))
    assert res.accepted and res.extraction_rule == "fence:python" and res.code == "print(input())\n"
    with pytest.raises(NoCodeFound):
        judge(Submission(response="I give up.", spec=ECHO))
    with pytest.raises(BadRequest, match="not a number"):  # a C++ int cannot take a map
        judge(Submission(language="cpp", code="int f(int a) { return a; }",
                         spec={"mode": "function", "fn_name": "f", "cases": [{"args": [{"k": 1}], "output": 1}]}))


def test_function_mode_conventions(judge):
    leetcode = "class Solution:\n    def pair(self, a: int):\n        return (a, a)\n"
    spec = {"mode": "function", "fn_name": "pair", "cases": [{"args": [2], "output": [2, 2]}]}
    assert judge(py(leetcode, spec)).accepted  # Solution method, tuple -> list
    wrapped = {"inputs": [[2]], "outputs": [[[2, 2]]], "fn_name": "pair"}  # APPS: [ret]
    assert judge(py("def pair(a):\n    return [a, a]\n", wrapped)).accepted
    floats = {"mode": "function", "fn_name": "f", "compare": {"float_abs_tol": 1e-6},
              "cases": [{"args": [], "output": [0.3]}]}
    assert judge(py("def f():\n    return [0.1 + 0.2]\n", floats)).accepted
    exact = {**floats, "compare": {}}
    assert judge(py("def f():\n    return [0.1 + 0.2]\n", exact)).verdict is Verdict.WRONG_ANSWER
    assert judge(py("def f():\n    return {1, 2}\n", exact)).verdict is Verdict.WRONG_ANSWER  # a set is not data


def test_failed_asserts_are_wrong_answers_and_the_programs_own_are_runtime_errors(judge):
    spec = {"mode": "assert", "cases": [{"code": "assert add(1, 2) == 3"},  # compared outside
                                        {"code": "y = 4\nassert add(2, 2) == y"},  # kept in the sandbox
                                        {"code": "assert abs(add(0.1, 0.2) - 0.3) < 1e-9"}]}
    right = judge(py("def add(a, b):\n    return a + b\n", spec, stop_on_first_failure=False))
    assert [c.verdict for c in right.cases] == [Verdict.ACCEPTED] * 3
    wrong = judge(py("def add(a, b):\n    return a - b\n", spec, stop_on_first_failure=False))
    assert [c.verdict for c in wrong.cases] == [Verdict.WRONG_ANSWER] * 3
    assert wrong.cases[0].message == "assert #1: expected 3, got -1"
    assert wrong.cases[1].message == "an assert of the tests failed"
    own = judge(py("def add(a, b):\n    assert a > 5, 'mine'\n    return a + b\n", spec, stop_on_first_failure=False))
    assert [c.verdict for c in own.cases] == [Verdict.RUNTIME_ERROR] * 3
