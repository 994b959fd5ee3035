"""Whether a Python program could tell that LiveCodeBench's import prelude is missing (stdlib only;
runs inside the slot beside runner.py): the runner leaves the prelude out, and uses the lean
zygote, where none could."""

from __future__ import annotations

import re

_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_ATTRIBUTE = re.compile(rb"\.[\s\\]*[A-Za-z_][A-Za-z0-9_]*")  # x.split (or x .\n split): not a global name
_LOOKS_UP_NAMES = frozenset({b"eval", b"exec", b"compile", b"globals", b"locals", b"vars", b"getattr", b"breakpoint",
                             b"__builtins__", b"__dict__", b"__import__"})


def needs_prelude(source: bytes, names: frozenset[bytes]) -> bool:
    """Whether a program could tell that the prelude is missing. Conservative: any token the
    prelude binds (in a string or a comment too; only attribute names after a dot are not names),
    any way to look a name up at run time, or any non-ASCII byte (identifiers are
    NFKC-normalised: a full-width sqrt is ``sqrt``)."""
    if not source.isascii():
        return True
    tokens = set(_IDENTIFIER.findall(_ATTRIBUTE.sub(b".", source)))
    return bool(tokens & names or tokens & _LOOKS_UP_NAMES)
