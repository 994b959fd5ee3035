"""Table tests for `needs_prelude`: whether a Python program could tell that LiveCodeBench's
import prelude is missing. A false yes only costs speed (the warm zygote); a false no would
change a verdict, so every way to reach a prelude name must say yes."""

from __future__ import annotations

import pytest

from coderl.sandbox.prelude_scan import needs_prelude

NAMES = frozenset({b"sqrt", b"deque", b"heapq", b"math"})

ROWS = [
    # (row, source, needs the prelude)
    ("no prelude name", b"n = int(input())\nprint(n * 2)\n", False),
    ("a bare prelude name", b"print(sqrt(4))\n", True),
    ("a prelude module", b"print(math.pi)\n", True),
    ("an attribute named like a prelude name", b"x = obj.sqrt\n", False),
    ("an attribute after a spaced dot", b"x = obj . deque\n", False),
    ("an attribute after a continued line", b"x = obj.\\\n    deque\n", False),
    ("a name after an attribute on one line", b"obj.heap; deque()\n", True),
    ("a name inside a string (conservative)", b"print('sqrt')\n", True),
    ("a name inside a comment (conservative)", b"print(1)  # uses deque\n", True),
    ("a longer identifier containing a name", b"sqrt2 = 1\nmydeque = 2\n", False),
    ("non-ASCII source (NFKC: full-width sqrt)", "print(ｓｑｒｔ(4))\n".encode(), True),
    ("non-ASCII only in a string", "print('héllo')\n".encode(), True),
]
ROWS += [(f"looks names up: {name}", f"{name}\n".encode(), True)
         for name in ("eval", "exec", "compile", "globals", "locals", "vars", "getattr", "breakpoint",
                      "__builtins__", "__dict__", "__import__")]


@pytest.mark.parametrize(("source", "needed"), [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_needs_prelude(source: bytes, needed: bool) -> None:
    assert needs_prelude(source, NAMES) is needed


def test_no_names_bound_means_only_run_time_lookups_count() -> None:
    assert needs_prelude(b"print(sqrt(4))\n", frozenset()) is False
    assert needs_prelude(b"print(globals())\n", frozenset()) is True
