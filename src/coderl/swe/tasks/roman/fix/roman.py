"""Roman numerals."""

VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def roman_to_int(text):
    """The value of a Roman numeral such as 'XIV'."""
    if not text or any(ch not in VALUES for ch in text):
        raise ValueError(f"not a Roman numeral: {text!r}")
    total = 0
    for ch, nxt in zip(text, text[1:] + " ", strict=False):
        value = VALUES[ch]
        total += -value if nxt in VALUES and VALUES[nxt] > value else value
    return total
