"""The target-language source of the judge's harnesses, as files (``<language>/<part>.tmpl``),
and the one renderer that fills them.

Why files: the callers' code in Java, C++, Rust, ... reads, diffs and lints as what it is, not as
Python strings full of doubled backslashes. Why this renderer and not ``str.format`` or a chain
of ``.replace()``: target languages are full of braces and of words a replace would hit. A
placeholder is ``{{name}}`` (a lowercase identifier); every placeholder of a template must get a
value and every value must have its placeholder (a typo fails loudly instead of leaving a stray
marker in a program), and values are inserted in one pass, so a submission's own ``{{x}}`` text
is never expanded.
"""

from __future__ import annotations

import functools
import importlib.resources
import re

from coderl.errors import CoderlError

PLACEHOLDER = re.compile(r"\{\{([a-z_][a-z0-9_]*)\}\}")


@functools.cache
def template(language: str, part: str) -> str:
    """The text of ``<language>/<part>.tmpl`` (package data, read once)."""
    return (importlib.resources.files(__package__) / language / f"{part}.tmpl").read_text(encoding="utf-8")


def placeholders(text: str) -> set[str]:
    return set(PLACEHOLDER.findall(text))


def fill(text: str, **values: str) -> str:
    """``text`` with each ``{{name}}`` replaced by ``values[name]``; CoderlError (our bug, not the
    request's) when the names given and the names in the text differ."""
    wanted = placeholders(text)
    if wanted != set(values):
        raise CoderlError(f"template placeholders {sorted(wanted)} do not match the values given {sorted(values)}")
    return PLACEHOLDER.sub(lambda match: values[match.group(1)], text)


def render(language: str, part: str, **values: str) -> str:
    """The template ``<language>/<part>.tmpl`` filled with ``values`` (see `fill`)."""
    return fill(template(language, part), **values)
