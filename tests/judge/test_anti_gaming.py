"""A policy paid for wrong programs learns to write them: none of these tricks may pass."""

from __future__ import annotations

import pytest

from coderl.judge import Checker, TestSpec, Verdict
from tests.judge.conftest import py

STDIO = {"inputs": ["1 2\n", "5 5\n"], "outputs": ["3\n", "10\n"]}
FUNC = {"mode": "function", "fn_name": "add", "cases": [{"args": [1, 2], "output": 3}, {"args": [5, 5], "output": 10}]}
ASSERT = {"mode": "assert", "cases": [{"code": "assert add(1, 2) == 3"}, {"code": "assert add(5, 5) == 10"}]}
EARLY_EXITS = ["import os\nos._exit(0)", "import sys\nsys.exit(0)", "raise SystemExit", "raise SystemExit(0)",
               "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "import sys\nsys.stdout.close()",
               "import atexit, os\natexit.register(lambda: os._exit(0))\nimport sys\nsys.exit(0)"]


@pytest.mark.parametrize("trick", EARLY_EXITS)
@pytest.mark.parametrize("spec", [STDIO, FUNC, ASSERT], ids=["stdio", "function", "assert"])
def test_early_exit_never_accepted(judge, trick, spec):
    code = trick + "\ndef add(a, b):\n    return a + b\n"
    res = judge(py(code, spec))
    assert not res.accepted and res.verdict is not Verdict.SANDBOX_ERROR


def test_exit_after_defining_function_in_function_mode(judge):
    code = "def add(a, b):\n    return a + b\nimport os\nos._exit(0)"
    assert not judge(py(code, FUNC)).accepted


def test_frame_walking_and_gc_find_no_expected_output(judge):
    code = ("import gc, sys\n"
            "found = [o for o in gc.get_objects() if isinstance(o, str) and o in ('3\\n', '10\\n')]\n"
            "f = sys._getframe()\nwhile f.f_back: f = f.f_back\n"
            "print(found[0] if found else 'nothing', end='')\n")
    res = judge(py(code, STDIO))
    assert res.verdict is Verdict.WRONG_ANSWER
    assert res.cases[0].run.stdout == b"nothing"


def test_function_mode_frame_walk_sees_no_expected(judge):
    code = ("import sys, gc\ndef add(a, b):\n"
            "    seen = [o for o in gc.get_objects() if isinstance(o, dict) and 'output' in o]\n"
            "    return seen[0]['output'] if seen else -1\n")
    assert judge(py(code, FUNC)).verdict is Verdict.WRONG_ANSWER


def test_lying_eq_and_str_objects_do_not_pass(judge):
    code = ("class Liar(int):\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n"
            "    def __str__(self): return '3'\n    def __repr__(self): return '3'\n    __hash__ = int.__hash__\n"
            "class Any(list):\n    def __eq__(self, o): return True\n"
            "def add(a, b):\n    return Liar(0)\n")
    assert judge(py(code, FUNC)).verdict is Verdict.WRONG_ANSWER
    code2 = "class A:\n    def __eq__(self, o): return True\ndef add(a, b):\n    return A()\n"
    assert judge(py(code2, FUNC)).verdict is Verdict.WRONG_ANSWER  # not plain data: equals nothing


def test_state_is_not_shared_between_tests(judge):
    # A program that counts its calls across tests would return 2 on the second test.
    spec = {"mode": "function", "fn_name": "f", "cases": [{"args": [1], "output": 1}, {"args": [2], "output": 1}]}
    code = "import builtins\ndef f(x):\n    builtins.calls = getattr(builtins, 'calls', 0) + 1\n    return builtins.calls\n"
    res = judge(py(code, spec, stop_on_first_failure=False))
    assert [c.verdict for c in res.cases] == [Verdict.ACCEPTED, Verdict.ACCEPTED]
    files = "import os\nprint(len(os.listdir('/tmp')))\nopen('/tmp/x%d' % os.getpid(), 'w').close()"
    res = judge(py(files, {"inputs": ["", ""], "outputs": ["0", "0"]}))
    assert res.accepted


def test_prefix_extra_lines_and_case_are_wrong(judge):
    spec = {"inputs": [""], "outputs": ["YES\nNO\n"]}
    for out in ("YES", "YES\\nNO\\nMAYBE", "yes\\nno", "YES NO"):
        assert judge(py(f"print('{out}')", spec)).verdict is Verdict.WRONG_ANSWER, out
    assert judge(py("print('  YES  \\n NO ')\nprint()", spec)).accepted


@pytest.mark.parametrize("patch", [
    "import builtins\nbuiltins.compile = lambda *a, **k: builtins.__dict__['__build_class__'].__call__",
    "import builtins\n_c = builtins.compile\nbuiltins.compile = lambda s, *a, **k: _c('pass', *a, **k)",
    "import hashlib\nhashlib.sha256 = lambda b: type('H', (), {'hexdigest': lambda s: 'x'})()",
    "import sys\ndef t(f, e, a):\n    if e == 'line' and f.f_code.co_filename == '<test>':\n        f.f_lineno = f.f_lineno + 1\n    return t\nsys.settrace(t)",
])
def test_tampering_with_the_harness_does_not_skip_asserts(judge, patch):
    code = patch + "\ndef add(a, b):\n    return 0\n"
    assert not judge(py(code, ASSERT)).accepted


def test_printing_a_signature_of_another_nonce_fails(judge):
    import hashlib

    fake = hashlib.sha256(b"0" * 32 + b":ok").hexdigest()
    code = f"def add(a, b):\n    return 0\nprint('{fake}')\nimport os\nos._exit(0)"
    assert not judge(py(code, ASSERT)).accepted


def test_program_cannot_overwrite_the_checker_or_answer(judge):
    checker = Checker(kind="python_function", code="def check(i, o, a):\n    return o.split() == a.split()")
    spec = TestSpec(mode="stdio", cases=[{"input": "2\n", "output": "4\n"}], checker=checker)
    code = "open('answer.txt', 'w').write('5')\nopen('/tmp/check.py', 'w').write('x')\nprint(5)"
    assert judge(py(code, spec)).verdict is Verdict.WRONG_ANSWER
    assert judge(py("print(int(input()) * 2)", spec)).accepted


def test_infinite_loop_catching_base_exception_is_time_limit(judge):
    from coderl.sandbox import Limits

    code = "def add(a, b):\n    while True:\n        try:\n            pass\n        except BaseException:\n            pass\n"
    res = judge(py(code, FUNC, limits=Limits(cpu_s=1, wall_s=3)))
    assert res.verdict is Verdict.TIME_LIMIT


# The harness's nonce lives in the program's process; a program that knows the harness can read it
# and forge the completion signal. For `expr == literal` asserts that gains nothing: the literal
# never enters the sandbox and the reported values are compared outside.
NONCE_THIEF = ("import os, hashlib\n"
               "_data = __coderl_case()[0]\n"
               "_sig = hashlib.sha256((_data['n'] + ':ok').encode()).hexdigest()\n"
               "{reports}"
               "os.write(1, ('\\n' + _sig + '\\n').encode())\n"
               "os._exit(0)\n"
               "def add(a, b):\n    return 0\n")


def test_stolen_nonce_does_not_forge_an_assert_pass(judge):
    res = judge(py(NONCE_THIEF.format(reports=""), ASSERT))
    assert res.verdict is Verdict.WRONG_ANSWER and "did not run" in res.cases[0].message


def test_stolen_nonce_and_test_code_do_not_reveal_the_expected_values(judge):
    """The test code the program can read holds no literal; forged reports must guess the value."""
    spy = NONCE_THIEF.format(reports="os.write(1, _data['c'].encode())\nos.write(1, ('\\n' + _sig + ' E 0 0\\n').encode())\n")
    res = judge(py(spy, {"mode": "assert", "cases": [{"code": "assert add(1, 2) == 3, 'expected 3'"}]}))
    assert res.verdict is Verdict.WRONG_ANSWER and "expected 3, got 0" in res.cases[0].message
    shown = res.cases[0].run.stdout.decode()
    assert "__coderl_emit(0, add(1, 2))" in shown and "3" not in shown.replace(_sig_of(shown), "")


def _sig_of(stdout: str) -> str:
    return next(line.split()[0] for line in stdout.splitlines() if " E 0 " in line)
