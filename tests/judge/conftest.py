from __future__ import annotations

from coderl.judge import Submission


def py(code: str, spec, **kwargs) -> Submission:
    return Submission(code=code, spec=spec, **kwargs)
