import pytest
from roman import roman_to_int


def test_additive():
    assert roman_to_int("XVII") == 17
    assert roman_to_int("MDCLXVI") == 1666


def test_rejects_garbage():
    with pytest.raises(ValueError):
        roman_to_int("XIZ")


def test_subtractive():
    assert roman_to_int("IV") == 4
    assert roman_to_int("XC") == 90


def test_year():
    assert roman_to_int("MCMXCIV") == 1994
