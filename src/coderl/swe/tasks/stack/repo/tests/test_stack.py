import pytest
from stack import Stack


def test_push_pop():
    s = Stack()
    s.push(1)
    s.push(2)
    assert s.pop() == 2 and s.pop() == 1 and len(s) == 0


def test_empty_raises():
    with pytest.raises(IndexError):
        Stack().pop()
    with pytest.raises(IndexError):
        Stack().peek()


def test_peek_single():
    s = Stack()
    s.push("x")
    assert s.peek() == "x" and len(s) == 1


def test_peek_is_top():
    s = Stack()
    for item in "abc":
        s.push(item)
    assert s.peek() == "c"
    assert s.pop() == "c"
