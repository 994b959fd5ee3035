from __future__ import annotations

from pathlib import Path

from coderl.judge import Submission

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def py(code: str, spec, **kwargs) -> Submission:
    return Submission(code=code, spec=spec, **kwargs)
