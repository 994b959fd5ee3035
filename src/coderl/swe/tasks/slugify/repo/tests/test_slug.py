from textutil.slug import slugify


def test_simple():
    assert slugify("Hello World") == "hello-world"


def test_strips_edges():
    assert slugify("  hi ") == "hi"


def test_digits_kept():
    assert slugify("Top 10") == "top-10"


def test_collapses_separators():
    assert slugify("Hello,  World!") == "hello-world"
