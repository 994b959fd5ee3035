import pytest
from stats import mean, median


def test_mean():
    assert mean([1, 2, 3, 6]) == 3


def test_sorted_input():
    assert median([1, 2, 3]) == 2
    assert median([1, 2, 3, 4]) == 2.5


def test_no_values():
    with pytest.raises(ValueError):
        median([])


def test_unsorted_input():
    assert median([3, 1, 2]) == 2
    assert median([10, 1, 4, 3]) == 3.5
