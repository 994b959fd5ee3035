"""Assert-mode tests with their expected values kept outside the sandbox.

An assert test (HumanEval's ``check``, MBPP's ``test_list``, the rllm LeetCode checks) holds its
expected values in its own code, and that code has to run next to the program. A program that
knows the harness could read them there, or forge the harness's completion signal (its nonce
lives in the same process). So every ``assert <expr> == <literal>`` (either side the literal) is
rewritten before it enters the sandbox: the sandbox reports ``repr(<expr>)`` for assert number k,
and the judge compares it here, by Python equality, with the literal it kept. A program can then
forge nothing useful: it would have to produce the right values, which is solving the problem.
Every rewritten assert must report at least once (an assert that never reports fails the case),
and each report must equal its literal.

Asserts of any other shape (``assert f(x)``, ``abs(f(x) - y) < 1e-6``, an expected value held in
a variable) run in the sandbox as written; for those the completion signal is the only evidence,
with the residual risk documented in docs/judge.md.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

EMIT = "__coderl_emit"
_NOT_LITERAL = object()


@dataclass(frozen=True)
class SplitTest:
    """``code`` runs in the sandbox; ``expected[k]`` is what assert k's value must equal."""

    code: str
    expected: tuple[Any, ...] = ()


def split_asserts(code: str) -> SplitTest:
    """Rewrite the ``expr == literal`` asserts of one test's code (see the module docstring). Code
    that does not parse is left as it is: the sandbox reports the syntax error."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return SplitTest(code)
    expected: list[Any] = []

    class Rewrite(ast.NodeTransformer):
        def visit_Assert(self, node: ast.Assert) -> ast.AST:
            test = node.test
            if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
                return node
            left, right = test.left, test.comparators[0]
            for got, want in ((left, right), (right, left)):
                value = _literal(want)
                if value is not _NOT_LITERAL and _literal(got) is _NOT_LITERAL:
                    expected.append(value)  # the message is dropped too: it may spell the answer
                    call = ast.Call(ast.Name(EMIT, ast.Load()), [ast.Constant(len(expected) - 1), got], [])
                    return ast.copy_location(ast.Expr(call), node)
            return node

    rewritten = ast.fix_missing_locations(Rewrite().visit(tree))
    if not expected:
        return SplitTest(code)
    return SplitTest(ast.unparse(rewritten), tuple(expected))


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_LITERAL


@dataclass(frozen=True)
class Reports:
    """What the harness printed: ``values[k]``, the reprs assert k reported (``<signature> E <k>
    <repr>`` lines); ``failed``, an assert left in the sandbox failed (a ``<signature> F`` line)."""

    values: dict[int, list[str]]
    failed: bool


def parse_reports(stdout: bytes, signature: str) -> Reports:
    prefix, failed = (signature + " E ").encode(), (signature + " F").encode()
    values: dict[int, list[str]] = {}
    seen_failure = False
    for line in stdout.split(b"\n"):
        if line.startswith(prefix):
            number, _, text = line[len(prefix):].partition(b" ")
            if number.isdigit():
                values.setdefault(int(number), []).append(text.decode("utf-8", "replace"))
        elif line == failed:
            seen_failure = True
    return Reports(values, seen_failure)


def check_reports(reports: Reports, expected: tuple[Any, ...]) -> tuple[bool, str]:
    """(passed, why not): no assert failed in the sandbox, every rewritten assert reported, and
    every report equals its literal."""
    if reports.failed:
        return False, "an assert of the tests failed"
    for k, want in enumerate(expected):
        got = reports.values.get(k)
        if not got:
            return False, f"assert #{k + 1} did not run"
        for text in got:
            value = _literal_text(text)
            if value is _NOT_LITERAL or not _equal(value, want):
                return False, f"assert #{k + 1}: expected {_short(repr(want))}, got {_short(text)}"
    return True, ""


def _literal_text(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NOT_LITERAL


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - plain data compares; anything else is not equal
        return False


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
