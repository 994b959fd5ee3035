from intervals import merge_intervals


def test_overlapping():
    assert merge_intervals([(5, 8), (1, 4), (3, 6)]) == [(1, 8)]


def test_disjoint():
    assert merge_intervals([(4, 5), (1, 2)]) == [(1, 2), (4, 5)]


def test_empty():
    assert merge_intervals([]) == []


def test_touching_intervals_merge():
    assert merge_intervals([(1, 2), (2, 3)]) == [(1, 3)]
