"""Dotted version numbers."""


def parse(version):
    """'1.2.3' -> the list of its components."""
    parts = version.strip().split(".")
    if not all(p.isdigit() for p in parts):
        raise ValueError(f"not a version: {version!r}")
    return [int(p) for p in parts]


def compare_versions(a, b):
    """-1, 0 or 1 as version a is older than, equal to or newer than b."""
    pa, pb = parse(a), parse(b)
    return (pa > pb) - (pa < pb)
