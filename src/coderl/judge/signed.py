"""How a harness proves the answer line is its own: ``sha256(nonce + ":ok")`` with a fresh nonce
per submission, so printing a constant cannot fake it; the answer (a JSON value) follows the
signature on the program's last line. Shared by every language's caller and the judge that reads
their output, so it sits below both."""

from __future__ import annotations

import hashlib
import json
import secrets
from typing import Any


def new_nonce() -> str:
    return secrets.token_hex(16)


def signature(nonce: str) -> str:
    return hashlib.sha256((nonce + ":ok").encode()).hexdigest()


def read_signed(stdout: bytes, nonce: str) -> tuple[bool, Any]:
    """(signed, payload): whether the last line carries this submission's signature, and the JSON
    value after it (function mode) or None (assert mode)."""
    lines = stdout.rstrip(b"\n").rsplit(b"\n", 1)
    last = lines[-1].decode("utf-8", "replace")
    sig = signature(nonce)
    if last == sig:
        return True, None
    if last.startswith(sig + " "):
        payload = last[len(sig) + 1:]
        if payload.startswith("!"):
            return True, NotPlainData(payload[1:])
        try:
            return True, json.loads(payload)
        except json.JSONDecodeError:
            return False, None
    return False, None


class NotPlainData(str):
    """A return value that JSON cannot carry (a set, an object): compares equal to nothing."""

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = str.__hash__

    def __repr__(self) -> str:
        return f"<{str(self)} object>"
