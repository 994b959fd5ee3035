"""Splitting sequences into pieces."""


def chunk(items, size):
    """items in consecutive lists of size items each; the last one may be shorter."""
    if size < 1:
        raise ValueError("size must be positive")
    return [list(items[i:i + size]) for i in range(0, len(items) - size + 1, size)]
