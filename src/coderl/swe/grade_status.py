"""The status of a graded repository diff: the repository grader's counterpart of the judge's
`coderl.judge.verdict.Verdict`, kept apart from it because it means something else (a task's tests
on a patched repository, not a program's run on a test case) and is scored differently.

Who is at fault decides the status, and the status decides the reward: the agent's patch
(``resolved`` 1, everything else 0) or our side and the task data's (``sandbox_error``: no reward,
retry or drop the sample, never score it). docs/agent.md has the table.

`GradeResult` is every task kind's one result (a repository task's, in its snapshot or its image,
and a Harbor task's), here and on the wire (``to_dict`` / ``from_dict``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields
from typing import Any


class GradeStatus(enum.StrEnum):
    RESOLVED = "resolved"  # every FAIL_TO_PASS and PASS_TO_PASS test passed, the run's records consistent
    UNRESOLVED = "unresolved"  # the tests ran and one did not pass (or the run was cut short)
    TAMPERED = "tampered"  # records only a patch working against the grader makes (``findings`` say which)
    APPLY_FAILED = "apply_failed"  # the diff is unreadable or does not apply
    NO_PATCH = "no_patch"  # the agent's work gave no diff to grade (its files make none); never graded
    SANDBOX_ERROR = "sandbox_error"  # ours or the task data's: no repository, environment or pytest, the sandbox failed

    @property
    def reward(self) -> float | None:
        """1 for a resolved task, None where nothing may be scored (a sandbox error), else 0."""
        if self is GradeStatus.SANDBOX_ERROR:
            return None
        return 1.0 if self is GradeStatus.RESOLVED else 0.0


@dataclass(frozen=True)
class GradeResult:
    """One graded diff, of any task kind. ``fail_to_pass`` / ``pass_to_pass``: test id -> pytest
    status (``PASSED``, ``FAILED``, ``ERROR``, ``SKIPPED``, ``XFAIL``, ``XPASS``) or ``missing`` (a
    Harbor verifier names no tests: empty); ``rewards``: a Harbor verifier's reward file (empty for a
    repository task); ``findings``: why a run is ``tampered`` (or a verifier's reward not taken)."""

    instance_id: str
    status: GradeStatus
    reward: float | None
    fail_to_pass: dict[str, str] = field(default_factory=dict)
    pass_to_pass: dict[str, str] = field(default_factory=dict)
    tests_touched: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    rewards: dict[str, float] = field(default_factory=dict)
    message: str = ""
    log_tail: str = ""
    wall_s: float = 0.0

    @property
    def resolved(self) -> bool:
        return self.status == GradeStatus.RESOLVED

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "status": self.status.value, "resolved": self.resolved}

    @classmethod
    def from_dict(cls, wire: dict[str, Any]) -> GradeResult:
        """A result as ``to_dict`` wrote it (a service's answer); unknown keys are ignored."""
        known = {f.name for f in fields(cls)}
        return cls(**{**{k: v for k, v in wire.items() if k in known}, "status": GradeStatus(wire["status"])})

    @classmethod
    def sandbox_error(cls, instance_id: str, message: str) -> GradeResult:
        """Ours or the task data's failure: never scored."""
        return cls(instance_id=instance_id, status=GradeStatus.SANDBOX_ERROR, reward=None, message=message)
