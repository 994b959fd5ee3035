from cipher import encrypt


def test_simple_shift():
    assert encrypt("hello", 1) == "ifmmp"


def test_other_characters_unchanged():
    assert encrypt("a-b c!", 2) == "c-d e!"


def test_empty():
    assert encrypt("", 5) == ""


def test_wraps_around():
    assert encrypt("xyz", 3) == "abc"
    assert encrypt("z", 1) == "a"
