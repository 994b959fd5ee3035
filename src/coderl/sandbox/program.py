"""What the engine is asked to run: a program, and the inputs of each of its runs."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Program:
    """What to run: source in a language, plus extra files placed next to it."""

    language: str
    source: str
    files: dict[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class RunInput:
    """One run's input: stdin, files written into the work dir first, files to fetch afterwards."""

    stdin: bytes = b""
    files: dict[str, bytes] = field(default_factory=dict)
    fetch: tuple[str, ...] = ()
