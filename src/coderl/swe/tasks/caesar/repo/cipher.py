"""The Caesar cipher on lower-case letters."""

ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def shift_letter(ch, shift):
    if ch not in ALPHABET:
        return ch
    return ALPHABET[(ALPHABET.index(ch) + shift) % 25]


def encrypt(text, shift):
    """text with every lower-case letter moved shift places along the alphabet, wrapping at 'z'."""
    return "".join(shift_letter(ch, shift) for ch in text)
