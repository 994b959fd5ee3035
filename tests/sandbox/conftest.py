from __future__ import annotations

import pytest

from coderl.sandbox import Limits, Program, RunInput


@pytest.fixture()
def run(engine):
    """Run a program once (or on several inputs) in the real sandbox; returns the Execution."""

    def _run(source: str, *inputs: bytes | RunInput, language: str = "python", **limit_kwargs):
        limits = Limits(**{"cpu_s": 2, "wall_s": 4, "memory_mb": 256, **limit_kwargs})
        return engine.execute(Program(language, source), list(inputs) or [b""], limits)

    return _run
