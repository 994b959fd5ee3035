"""URL slugs."""

import re


def slugify(text):
    """Lower-case words joined by single hyphens: 'Hello World' -> 'hello-world'."""
    chars = [ch if ch.isalnum() else "-" for ch in text.lower()]
    return re.sub("-+", "-", "".join(chars)).strip("-")
