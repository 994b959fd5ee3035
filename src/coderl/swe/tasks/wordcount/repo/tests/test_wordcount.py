from wordcount import count_words, longest_word


def test_single_spaces():
    assert count_words("the quick brown fox") == 4


def test_empty():
    assert count_words("") == 0


def test_longest_word():
    assert longest_word("a bb ccc dd") == "ccc"


def test_tabs_and_newlines_separate_words():
    assert count_words("one\ttwo\nthree  four") == 4
