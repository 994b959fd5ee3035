"""A reverse Polish notation calculator."""

import operator

OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


def evaluate(expression):
    """Evaluate a space-separated RPN expression such as '2 3 +'."""
    stack = []
    for token in expression.split():
        if token in OPS:
            if len(stack) < 2:
                raise ValueError("stack underflow")
            right, left = stack.pop(0), stack.pop(0)
            stack.insert(0, OPS[token](left, right))
        else:
            stack.insert(0, float(token))
    if len(stack) != 1:
        raise ValueError("malformed expression")
    return stack[0]
