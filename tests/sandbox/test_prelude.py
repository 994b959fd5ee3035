"""The warm prelude: LiveCodeBench's star-imports loaded once per submission by the runner, so each
test's child starts with them. It must behave exactly as if the prelude were run in the child,
and nothing of it may reach a submission that did not ask for it."""

from __future__ import annotations

import pytest

from coderl.errors import BadRequest
from coderl.sandbox import Limits, Program

LIMITS = Limits(cpu_s=2, wall_s=4, memory_mb=256)


def _run(engine, source: str, *inputs: bytes, prelude: bool):
    return engine.execute(Program("python", source, prelude=prelude), list(inputs) or [b""], LIMITS)


def test_prelude_names_are_there(engine):
    ex = _run(engine, "print(sqrt(16), gcd(12, 18), Counter('aab')['a'], List.__name__, bisect_left([1, 3], 2))",
              prelude=True)
    assert ex.results[0].stdout == b"4.0 6 2 List 1\n", ex.results[0].stderr


def test_prelude_stdin_is_the_programs_stdin(engine):
    """`from sys import *` binds `stdin`/`stdout`/`argv`: they must be this run's own objects, so
    mixing input(), stdin.readline() and sys.stdin works as in a fresh interpreter."""
    source = ("a = input()\nb = stdin.readline().strip()\nc = sys.stdin.read().split()\n"
              "stdout.write(f'{a}|{b}|{c}|{stdin is sys.stdin}|{stdout is sys.stdout}|{argv is sys.argv}\\n')\n")
    ex = _run(engine, source, b"x\ny\nz w\n", b"1\n2\n3\n", prelude=True)
    assert [r.stdout for r in ex.results] == [b"x|y|['z', 'w']|True|True|True\n",
                                             b"1|2|['3']|True|True|True\n"], ex.results[0].stderr


def test_prelude_limits_and_line_numbers(engine):
    source = "import sys\nprint(sys.getrecursionlimit(), len(str(10 ** 5000)))\nraise ValueError('line 3')\n"
    ex = _run(engine, source, prelude=True)
    assert ex.results[0].stdout == b"50000 5001\n"
    assert b'main.py", line 3' in ex.results[0].stderr


def test_nothing_of_the_prelude_reaches_a_later_submission(engine):
    """Every slot runs a prelude submission first (the idle queue is FIFO), then plain ones."""
    for _ in range(2):
        assert _run(engine, "print(sqrt(4))", prelude=True).results[0].stdout == b"2.0\n"
    source = ("import sys\nprint(sys.getrecursionlimit(), sys.get_int_max_str_digits())\n"
              "print('sqrt' in globals(), 'stdin' in globals())\n")
    for _ in range(2):
        result = _run(engine, source, prelude=False).results[0]
        assert result.stdout == b"1000 4300\nFalse False\n", result.stderr
        missing = _run(engine, "print(sqrt(4))", prelude=False).results[0]
        assert missing.status.value == "runtime_error" and b"NameError" in missing.stderr


def test_prelude_is_for_python_only(engine):
    with pytest.raises(BadRequest, match="prelude is for Python"):
        engine.execute(Program("c", "int main(){return 0;}", prelude=True), [b""], LIMITS)


def test_globals_set_by_one_run_do_not_reach_the_next(engine):
    """The namespace is shared by the forks only as a copy: a run's assignments stay in its child."""
    source = "print(globals().get('seen', 'fresh'))\nseen = 1\ngcd = None\n"
    ex = _run(engine, source, b"", b"", prelude=True)
    assert [r.stdout for r in ex.results] == [b"fresh\n", b"fresh\n"]
    ex = _run(engine, "print(gcd(4, 6))", prelude=True)
    assert ex.results[0].stdout == b"2\n"


@pytest.mark.parametrize(("source", "stdout"), [
    # needs only the prelude's limits: runs in the lean zygote, with them
    ("def f(n):\n    return n if n == 0 else f(n - 1)\nprint(f(20000), len(str(10 ** 5000)))", b"0 5001\n"),
    ("print(eval('gcd(4, 6)'), globals()['sqrt'](9.0))", b"2 3.0\n"),  # names looked up at run time
    ("print(\uff53\uff51\uff52\uff54(4))", b"2.0\n"),  # full-width letters: NFKC makes it sqrt
    ("x = [3, 1, 2]\nprint(sorted(x), 'sqrt')", b"[1, 2, 3] sqrt\n"),
    ("print('a,b'.split(','), (3.5).\n    is_integer())", b"['a', 'b'] False\n"),  # attributes, not names
    ("print(split(',', 'a,b'))", b"['a', 'b']\n"),  # re.split, through the prelude
])
def test_a_prelude_is_left_out_only_where_no_program_could_tell(engine, source, stdout):
    """A prelude submission that uses none of its names forks from the lean zygote (much
    faster) with the prelude's two limits; anything that could reach a prelude name gets it."""
    result = _run(engine, source, prelude=True).results[0]
    assert result.stdout == stdout, result.stderr
