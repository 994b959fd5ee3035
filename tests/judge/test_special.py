"""Special judges decide by exit code in their own sandboxed run; a failing checker is our fault."""

from __future__ import annotations

import pytest

from coderl.judge import Checker, TestSpec, Verdict
from tests.judge.conftest import py

# Any x with x * x == n is right (two valid answers): a checker is the only fair judge.
TESTLIB_CPP = r"""
#include <cstdio>
#include <cstdlib>
int main() {
    long long n, x, ans;
    FILE *in = fopen("input.txt", "r"), *out = fopen("output.txt", "r"), *exp = fopen("answer.txt", "r");
    if (!in || !out || !exp || fscanf(in, "%lld", &n) != 1 || fscanf(exp, "%lld", &ans) != 1) return 3;
    if (fscanf(out, "%lld", &x) != 1) { printf("no number in the output\n"); return 2; }
    if (x * x != n) { printf("%lld squared is not %lld\n", x, n); return 1; }
    printf("ok %lld\n", x);
    return 0;
}
"""
CASES = [{"input": "4\n", "output": "2\n"}, {"input": "9\n", "output": "3\n"}]


def spec(code: str, **checker) -> TestSpec:
    return TestSpec(mode="stdio", cases=CASES, checker=Checker(code=code, **checker))


def test_testlib_checker_accepts_any_valid_answer_and_keeps_its_message(judge):
    s = spec(TESTLIB_CPP, language="cpp")
    neg = judge(py("print(-int(int(input()) ** 0.5))", s))
    assert neg.accepted and neg.cases[0].message == "ok -2"
    wrong = judge(py("print(int(input()))", s, stop_on_first_failure=False))
    assert [c.verdict for c in wrong.cases] == [Verdict.WRONG_ANSWER] * 2
    assert wrong.cases[0].message == "4 squared is not 4"
    assert judge(py("print('hello')", s)).verdict is Verdict.WRONG_ANSWER  # testlib PE (2) is wrong


def test_python_check_function_and_scalebox_files(judge):
    fn = "def check(inp, out, ans):\n    x = int(out)\n    return x * x == int(inp), f'got {x}'\n"
    s = spec(fn, kind="python_function")
    assert judge(py("print(-int(int(input()) ** 0.5))", s)).accepted
    res = judge(py("print(1)", s))
    assert res.verdict is Verdict.WRONG_ANSWER and res.cases[0].message == "got 1"
    scalebox = ("import sys\nn = int(open('stdin.txt').read())\nx = int(open('answer.txt').read())\n"
                "sys.exit(0 if x * x == n else 1)\n")
    assert judge(py("print(-int(int(input()) ** 0.5))", spec(scalebox, files="scalebox"))).accepted


@pytest.mark.parametrize("checker", [
    {"code": "import sys\nsys.exit(3)"},                     # testlib "fail"
    {"code": "raise RuntimeError('checker bug')"},           # crash
    {"code": "while True:\n    pass", "cpu_s": 0.5},            # hangs
    {"code": "int main( {", "language": "cpp"},              # does not compile
    {"code": "def check(i, o, a):\n    return 1 / 0", "kind": "python_function"},
])
def test_a_failing_checker_is_a_sandbox_error_not_a_verdict(judge, checker):
    res = judge(py("print(2)", spec(**checker)))
    assert res.verdict is Verdict.SANDBOX_ERROR and res.sandbox_error


def test_program_failures_skip_the_checker(judge):
    res = judge(py("raise SystemExit(1)", spec("import sys\nsys.exit(3)")))
    assert res.verdict is Verdict.RUNTIME_ERROR
