"""URL slugs."""


def slugify(text):
    """Lower-case words joined by single hyphens: 'Hello World' -> 'hello-world'."""
    chars = [ch if ch.isalnum() else "-" for ch in text.lower()]
    return "".join(chars).strip("-")
