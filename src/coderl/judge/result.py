"""What the judge returns: one `CaseResult` per test, one `JudgeResult` per submission.

``JudgeResult.to_dict()`` is the JSON shape of the service's ``/v1/judge`` answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coderl.judge.verdict import Verdict
from coderl.sandbox import RunResult, RunStatus

STATUS_VERDICT = {
    RunStatus.RUNTIME_ERROR: Verdict.RUNTIME_ERROR,
    RunStatus.TIME_LIMIT: Verdict.TIME_LIMIT,
    RunStatus.MEMORY_LIMIT: Verdict.MEMORY_LIMIT,
    RunStatus.OUTPUT_LIMIT: Verdict.OUTPUT_LIMIT,
    RunStatus.SANDBOX_ERROR: Verdict.SANDBOX_ERROR,
    RunStatus.SKIPPED: Verdict.SKIPPED,
}


@dataclass(frozen=True, kw_only=True)
class CaseResult:
    """One test's verdict, the run behind it (None when it never ran) and why it failed."""

    verdict: Verdict
    run: RunResult | None = None
    message: str = ""

    def to_dict(self, *, include_output: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"verdict": self.verdict.value, "message": self.message}
        if self.run is not None:
            run = self.run.to_dict()
            if not include_output:
                run.pop("stdout")
                run.pop("stderr")
            out["run"] = run
        return out


@dataclass(frozen=True, kw_only=True)
class JudgeResult:
    """A submission's verdict (the worst case verdict) with every case and what was run."""

    verdict: Verdict
    cases: list[CaseResult] = field(default_factory=list)
    compile_message: str = ""
    isolation: str = "bwrap"
    wall_s: float = 0.0
    code: str = ""
    language: str = "python"
    extraction_rule: str | None = None

    @property
    def accepted(self) -> bool:
        return self.verdict is Verdict.ACCEPTED

    @property
    def passed(self) -> int:
        return sum(c.verdict is Verdict.ACCEPTED for c in self.cases)

    @property
    def total(self) -> int:
        return len(self.cases)

    @property
    def first_failure(self) -> int | None:
        return next((i for i, c in enumerate(self.cases) if c.verdict not in (Verdict.ACCEPTED, Verdict.SKIPPED)),
                    None)

    @property
    def sandbox_error(self) -> bool:
        return self.verdict is Verdict.SANDBOX_ERROR

    def to_dict(self, *, include_output: bool = True) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value, "accepted": self.accepted, "passed": self.passed, "total": self.total,
            "first_failure": self.first_failure, "compile_message": self.compile_message,
            "isolation": self.isolation, "wall_s": round(self.wall_s, 6), "language": self.language,
            "extraction_rule": self.extraction_rule, "code": self.code,
            "cases": [c.to_dict(include_output=include_output) for c in self.cases],
        }
