import pytest
from semver import compare_versions, parse


def test_equal():
    assert compare_versions("1.2.3", "1.2.3") == 0


def test_simple_order():
    assert compare_versions("1.2.3", "1.2.4") == -1
    assert compare_versions("2.0.0", "1.9.9") == 1


def test_parse():
    assert len(parse("1.2.3")) == 3
    with pytest.raises(ValueError):
        parse("1.x")


def test_numeric_components():
    assert compare_versions("1.10.0", "1.9.0") == 1
