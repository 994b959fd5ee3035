import pytest
from chunks import chunk


def test_even_split():
    assert chunk([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]


def test_bad_size():
    with pytest.raises(ValueError):
        chunk([1], 0)


def test_empty():
    assert chunk([], 3) == []


def test_last_chunk_kept():
    assert chunk([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]
    assert chunk("abcd", 3) == [["a", "b", "c"], ["d"]]
