"""Word statistics of a text."""


def count_words(text):
    """The number of words in text; words are separated by any run of whitespace."""
    return len([word for word in text.split(" ") if word])


def longest_word(text):
    """The longest word of text (the first one on a tie); '' for a text without words."""
    return max(text.split(), key=len, default="")
