"""Checkers as pure functions: (program output, expected) -> (passed, short reason).

``stdio`` is LiveCodeBench-exact by default: strip the whole output, split lines, strip each line,
equal line counts, and per line either equal strings or equal lists of Decimal tokens (``1.0``
equals ``1``). Never a prefix, never extra lines. Options add float tolerance, case-insensitive
tokens, or a whitespace-token comparison that ignores line structure. ``values`` compares a
function's returned JSON value with the expected one (tuples were lists already in JSON).
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import Any

from coderl.judge.signed import NotPlainData
from coderl.judge.spec import CompareOptions


def stdio(output: str, expected: str, options: CompareOptions = CompareOptions()) -> tuple[bool, str]:
    if options.whitespace_tokens:
        got_tokens, want_tokens = output.split(), expected.split()
        if len(got_tokens) != len(want_tokens):
            return False, f"expected {len(want_tokens)} tokens, got {len(got_tokens)}"
        for i, (g, w) in enumerate(zip(got_tokens, want_tokens, strict=True)):
            if not _token_equal(g, w, options):
                return False, f"token {i + 1}: expected {w[:40]!r}, got {g[:40]!r}"
        return True, ""
    got_lines = [line.strip() for line in output.strip().split("\n")]
    want_lines = [line.strip() for line in expected.strip().split("\n")]
    if len(got_lines) != len(want_lines):
        return False, f"expected {len(want_lines)} lines, got {len(got_lines)}"
    for i, (g, w) in enumerate(zip(got_lines, want_lines, strict=True)):
        if g == w:
            continue
        g_tokens, w_tokens = g.split(), w.split()
        if len(g_tokens) != len(w_tokens) or not all(
                _token_equal(a, b, options) for a, b in zip(g_tokens, w_tokens, strict=True)):
            return False, f"line {i + 1}: expected {w[:60]!r}, got {g[:60]!r}"
    return True, ""


def _token_equal(got: str, want: str, options: CompareOptions) -> bool:
    if got == want:
        return True
    if options.case_insensitive and got.lower() == want.lower():
        return True
    try:
        a, b = Decimal(got), Decimal(want)
    except InvalidOperation:
        return False
    if not (a.is_finite() and b.is_finite()):
        return a == b if not (a.is_nan() or b.is_nan()) else False
    if a == b:
        return True
    return _close(float(a), float(b), options)


def _close(a: float, b: float, options: CompareOptions) -> bool:
    abs_tol, rel_tol = options.float_abs_tol, options.float_rel_tol
    if abs_tol is None and rel_tol is None:
        return False
    return math.isclose(a, b, rel_tol=rel_tol or 0.0, abs_tol=abs_tol or 0.0)


def values(got: Any, expected: Any, options: CompareOptions = CompareOptions()) -> tuple[bool, str]:
    """Function-call return values (plain JSON data on both sides)."""
    if isinstance(got, NotPlainData):
        return False, f"expected {_short(expected)}, got a {str(got)} (not plain data)"
    if _value_equal(got, expected, options):
        return True, ""
    if options.wrapped_output and isinstance(expected, list) and len(expected) == 1 and \
            _value_equal(got, expected[0], options):
        return True, ""
    return False, f"expected {_short(expected)}, got {_short(got)}"


def _value_equal(a: Any, b: Any, options: CompareOptions) -> bool:
    """Python equality of plain JSON data (as LiveCodeBench compares), plus the opt-in float
    tolerance and case folding applied element-wise."""
    if options.float_abs_tol is None and options.float_rel_tol is None and not options.case_insensitive:
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_value_equal(x, y, options) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_value_equal(a[k], b[k], options) for k in a)
    if isinstance(a, float | int) and isinstance(b, float | int) and not isinstance(a, bool) and not isinstance(b, bool):
        return a == b or _close(float(a), float(b), options)
    if isinstance(a, str) and isinstance(b, str) and options.case_insensitive:
        return a.lower() == b.lower()
    return a == b


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
