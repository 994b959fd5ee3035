"""Procedural bugs in Python source: AST-level operators, each a small edit of the file's own text.

Each operator finds the nodes it applies to inside function bodies and yields a ``Mutation``: the
byte span of the file it replaces and the new text. Expressions are replaced by ``ast.unparse`` of
the changed node in parentheses (the rest of the file keeps its formatting, so the fix is a few
lines); statements are removed or swapped as whole lines, only where they own their lines. Every
mutated file is parsed again and kept only when it compiles and differs.

Operators (SWE-smith's procedural kinds and R2E-Gym's): comparison flips (``==``/``!=``,
``<``/``>=``, ``in``/``not in``, ...), boolean flips (``and``/``or``, a ``not`` dropped), an inverted
``if``, off-by-one integer constants, ``+``/``-`` swapped, the first two positional arguments of a
call swapped, a changed return value, a removed statement, a removed ``if`` branch, and two
neighbouring statements shuffled.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from dataclasses import dataclass

_FLIP = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt,
         ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return, ast.Raise, ast.If, ast.For, ast.While)


@dataclass(frozen=True)
class Mutation:
    op: str
    line: int  # where in the file (1-based), for the report; never shown to an agent
    start: int  # byte offsets in the file's UTF-8 text
    end: int
    text: str

    def apply(self, source: bytes) -> bytes:
        return source[:self.start] + self.text.encode() + source[self.end:]


def mutations(source: bytes) -> list[Mutation]:
    """Every mutation of ``source`` that compiles and changes it (none for a file that does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    found = []
    for func in ast.walk(tree):
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            found += list(_in_function(func, source, starts))
    out, seen = [], set()
    for m in found:
        if (m.start, m.end, m.text) in seen:
            continue
        seen.add((m.start, m.end, m.text))
        changed = m.apply(source)
        if changed == source:
            continue
        try:
            ast.parse(changed)
        except (SyntaxError, ValueError):
            continue
        out.append(m)
    return out


def _in_function(func: ast.FunctionDef | ast.AsyncFunctionDef, source: bytes, starts: list[int]) -> Iterator[Mutation]:
    def span(node: ast.AST) -> tuple[int, int]:
        return (starts[node.lineno - 1] + node.col_offset,  # type: ignore[attr-defined]
                starts[node.end_lineno - 1] + node.end_col_offset)  # type: ignore[attr-defined]

    def expr(op: str, node: ast.AST, new: ast.AST) -> Mutation:
        a, b = span(node)
        return Mutation(op, node.lineno, a, b, f"({ast.unparse(new)})")  # type: ignore[attr-defined]

    body_nodes = [n for stmt in func.body for n in ast.walk(stmt)]
    for node in body_nodes:
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _FLIP:
            new = copy.deepcopy(node)
            new.ops = [_FLIP[type(node.ops[0])]()]
            yield expr("compare_flip", node, new)
        elif isinstance(node, ast.BoolOp):
            new = copy.deepcopy(node)
            new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            yield expr("bool_flip", node, new)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield expr("not_dropped", node, node.operand)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
            new = copy.deepcopy(node)
            new.op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
            yield expr("op_swap", node, new)
        elif isinstance(node, ast.Call) and len(node.args) >= 2 and not any(
                isinstance(a, ast.Starred) for a in node.args[:2]):
            new = copy.deepcopy(node)
            new.args[0], new.args[1] = new.args[1], new.args[0]
            yield expr("args_swapped", node, new)
        elif isinstance(node, ast.If) and _owns_lines(node.test, source, starts, whole=False):
            yield expr("if_inverted", node.test, ast.UnaryOp(op=ast.Not(), operand=node.test))
        if isinstance(node, ast.Compare | ast.BinOp | ast.Subscript):
            for const in ast.iter_child_nodes(node):
                if isinstance(const, ast.Constant) and type(const.value) is int:
                    yield expr("off_by_one", const, ast.Constant(const.value + 1))
                    if const.value > 0:
                        yield expr("off_by_one", const, ast.Constant(const.value - 1))
        if isinstance(node, ast.Return) and node.value is not None:
            value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, bool):
                yield expr("return_changed", value, ast.Constant(not value.value))
            elif not (isinstance(value, ast.Constant) and value.value is None):
                yield expr("return_changed", value, ast.Constant(None))
    for block in _blocks(func):
        owned = [s for s in block if _owns_lines(s, source, starts)]
        if len(block) < 2:
            continue
        for stmt in owned:
            if isinstance(stmt, ast.Assign | ast.AugAssign | ast.Expr) or \
                    (isinstance(stmt, ast.If) and not stmt.orelse):
                a, b = _line_span(stmt, starts)
                yield Mutation("if_removed" if isinstance(stmt, ast.If) else "stmt_removed", stmt.lineno, a, b, "")
        for first, second in zip(block, block[1:], strict=False):
            if first in owned and second in owned and isinstance(first, _SIMPLE) and isinstance(second, _SIMPLE) \
                    and not isinstance(first, ast.Return | ast.Raise):
                a, mid = _line_span(first, starts)
                _, b = _line_span(second, starts)
                text = source[mid:b].decode() + source[a:mid].decode()
                yield Mutation("ctrl_shuffled", first.lineno, a, b, text)


def _blocks(func: ast.AST) -> Iterator[list[ast.stmt]]:
    """Every statement list in the function (its body, the branches and loops inside it)."""
    for node in ast.walk(func):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield block


def _line_span(stmt: ast.stmt, starts: list[int]) -> tuple[int, int]:
    return starts[stmt.lineno - 1], starts[stmt.end_lineno]  # type: ignore[operator]


def _owns_lines(node: ast.AST, source: bytes, starts: list[int], whole: bool = True) -> bool:
    """Whether ``node`` starts its first line (after indentation) and ends its last (a comment
    aside): a statement that can be cut or moved as whole lines. ``whole=False``: one line only."""
    first = source[starts[node.lineno - 1]:starts[node.lineno - 1] + node.col_offset]  # type: ignore[attr-defined]
    end = node.end_lineno  # type: ignore[attr-defined]
    if end is None or (not whole and end != node.lineno):  # type: ignore[attr-defined]
        return False
    if not whole:
        return True
    last = source[starts[end - 1] + node.end_col_offset:starts[end]].strip()  # type: ignore[attr-defined]
    return not first.strip() and (not last or last.startswith(b"#"))
